package bench

import (
	"context"
	"os/exec"
	"slices"
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

// TestFiguresByRound: the figures sum the rounds, and list each round's
// server and Redis CPU per answered request alone when there are several.
func TestFiguresByRound(t *testing.T) {
	for _, tc := range []struct {
		name               string
		rounds             []roundCPU
		wantServer, wantRd []float64
		sumServer, sumRd   float64
	}{
		{"one round: no list", []roundCPU{{ok: 100, server: 5 * time.Millisecond, redis: time.Millisecond}},
			nil, nil, 50, 10},
		{"three rounds", []roundCPU{
			{ok: 100, server: 4 * time.Millisecond, redis: time.Millisecond},
			{ok: 200, server: 10 * time.Millisecond, redis: 4 * time.Millisecond},
			{ok: 100, server: 6 * time.Millisecond, redis: 3 * time.Millisecond}},
			[]float64{40, 50, 60}, []float64{10, 20, 30}, 50, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tot loadTotals
			for _, r := range tc.rounds {
				tot.ok += r.ok
				tot.cpu[0] += r.server
				tot.cpu[1] += r.redis
				tot.rounds = append(tot.rounds, r)
			}
			f := tot.figures()
			if !slices.Equal(f.ServerCPURounds, tc.wantServer) || !slices.Equal(f.RedisCPURounds, tc.wantRd) {
				t.Errorf("rounds: server %v, Redis %v; want %v, %v", f.ServerCPURounds, f.RedisCPURounds, tc.wantServer, tc.wantRd)
			}
			if f.ServerCPU != tc.sumServer || f.RedisCPU != tc.sumRd {
				t.Errorf("sums: server %v, Redis %v; want %v, %v", f.ServerCPU, f.RedisCPU, tc.sumServer, tc.sumRd)
			}
		})
	}
}

// TestRoundMedians: the CPU targets take the rounds' median, and a ratio
// of two servers the median of the rounds' ratios, falling back on the
// sums when the rounds do not pair up.
func TestRoundMedians(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a, b       LoadFigures
		redis, srv float64
	}{
		{"one round: the sums",
			LoadFigures{ServerCPU: 60, RedisCPU: 9}, LoadFigures{ServerCPU: 40, RedisCPU: 3}, 9, 1.5},
		{"odd rounds: the middle one, not the slow one",
			LoadFigures{ServerCPU: 70, RedisCPU: 9, ServerCPURounds: []float64{50, 100, 60}, RedisCPURounds: []float64{7, 13, 6}},
			LoadFigures{ServerCPU: 40, ServerCPURounds: []float64{40, 40, 40}}, 7, 1.5},
		{"even rounds: the mean of the middle two",
			LoadFigures{ServerCPURounds: []float64{40, 60, 80, 100}, RedisCPURounds: []float64{8, 4, 6, 10}},
			LoadFigures{ServerCPURounds: []float64{40, 40, 40, 40}}, 7, 1.75},
		{"paired by round: a slow machine in one round cancels",
			LoadFigures{ServerCPURounds: []float64{60, 90, 60}, RedisCPURounds: []float64{5, 5, 5}},
			LoadFigures{ServerCPURounds: []float64{40, 60, 40}}, 5, 1.5},
		{"rounds that do not pair up: the sums",
			LoadFigures{ServerCPU: 66, ServerCPURounds: []float64{60, 72}},
			LoadFigures{ServerCPU: 33, ServerCPURounds: []float64{30, 30, 39}}, 0, 2},
		{"a round with no CPU to divide by: the sums",
			LoadFigures{ServerCPU: 50, ServerCPURounds: []float64{50, 50}},
			LoadFigures{ServerCPU: 25, ServerCPURounds: []float64{0, 50}}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.RedisCPUMedian(); got != tc.redis {
				t.Errorf("RedisCPUMedian = %v, want %v", got, tc.redis)
			}
			if got := tc.a.ServerCPUOver(tc.b); got != tc.srv {
				t.Errorf("ServerCPUOver = %v, want %v", got, tc.srv)
			}
		})
	}
	// Server and Redis together, round by round: (50+10)/(40+0), (90+30)/(40+20), (60+5)/(50+0).
	a := LoadFigures{ServerCPURounds: []float64{50, 90, 60}, RedisCPURounds: []float64{10, 30, 5}}
	b := LoadFigures{ServerCPURounds: []float64{40, 40, 50}, RedisCPURounds: []float64{0, 20, 0}}
	if got := a.ServerRedisCPUOver(b); got != 1.5 {
		t.Errorf("ServerRedisCPUOver = %v, want 1.5", got)
	}
}
