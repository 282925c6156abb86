package ctxsleep

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		// a wait that runs out on a live context
		{"waits", live, time.Millisecond, true},
		// nothing to wait for: the answer is whether the context lives
		{"zero, live", live, 0, true},
		{"negative, live", live, -time.Second, true},
		{"zero, ended", done, 0, false},
		// an ended context ends even a long wait at once
		{"long, ended", done, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sleep(tc.ctx, tc.d); got != tc.want {
				t.Errorf("Sleep = %v, want %v", got, tc.want)
			}
		})
	}
	if !Until(live, time.Now().Add(time.Millisecond)) {
		t.Error("Until a near instant on a live context = false")
	}
}
