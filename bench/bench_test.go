package bench

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func TestServerCPUTimeAndSettle(t *testing.T) {
	// Busy for a while, then idle.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{cmd: cmd}
	defer s.Stop()
	s.Settle(context.Background(), 20*time.Second)
	if got := s.CPUTime(); got <= 0 {
		t.Errorf("CPUTime after a busy loop = %v, want > 0", got)
	}
	before := s.CPUTime()
	time.Sleep(300 * time.Millisecond)
	if d := s.CPUTime() - before; d > 100*time.Millisecond {
		t.Errorf("after Settle the process still used %v of CPU in 300 ms", d)
	}
	if s.RSS() <= 0 {
		t.Errorf("RSS = %d, want > 0", s.RSS())
	}
}
