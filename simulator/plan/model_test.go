package plan_test

import (
	"math"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/plan"
)

// MustCrowd is n users joining every gap seconds from 0 (all at 0 for gap 0),
// each buying think seconds after admission, with infinite patience.
func MustCrowd(tb testing.TB, n int, gap, think float64) *plan.Crowd {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("MustCrowd: n = %d", n)
	}
	c := &plan.Crowd{Users: make([]plan.User, n)}
	for k := range c.Users {
		c.Users[k] = plan.User{Join: float64(k) * gap, Patience: math.Inf(1), Think: think, Buys: true}
	}
	return c
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestSimulateBelowRate: a constant arrival rate λ below the admission rate μ
// keeps the line (nearly) empty.
func TestSimulateBelowRate(t *testing.T) {
	const lambda = 10.0 // per second, for 60 s
	c := MustCrowd(t, 600, 1/lambda, 1)
	ev := plan.Event{Window: time.Minute}
	for _, tc := range []struct {
		name    string
		s       plan.Setting
		maxWait time.Duration
		maxLine int
		onJoin  int
	}{
		// capacity admits on join while nobody waits and live (λ·think = 10) < 50:
		// nobody ever waits.
		{"capacity admits on join", plan.Setting{Policy: plan.PolicyCapacity, Batch: 5, Capacity: 50,
			Interval: 250 * time.Millisecond}, 0, 0, 600},
		// batch μ = 5/250ms = 20/s > λ: each user waits for the next tick, at
		// most one interval, and the line never holds more than λ·interval + 1.
		{"batch waits at most one tick", plan.Setting{Policy: plan.PolicyBatch, Batch: 5, Capacity: 1,
			Interval: 250 * time.Millisecond}, 250 * time.Millisecond, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := plan.Simulate(c, tc.s, ev)
			if o.Admitted != 600 || o.Sold != 600 {
				t.Fatalf("admitted %d, sold %d, want 600 each", o.Admitted, o.Sold)
			}
			if o.Wait.Max > tc.maxWait {
				t.Errorf("max wait %s, want <= %s", o.Wait.Max, tc.maxWait)
			}
			if o.PeakWaiting > tc.maxLine {
				t.Errorf("peak line %d, want <= %d", o.PeakWaiting, tc.maxLine)
			}
			if o.AdmittedOnJoin != tc.onJoin {
				t.Errorf("admitted on join %d, want %d", o.AdmittedOnJoin, tc.onJoin)
			}
		})
	}
}

// TestSimulateAboveRate: λ above μ for T seconds grows the line by λ−μ a
// second: peak (λ−μ)·T, the last arrival waits T·(λ−μ)/μ, the line drains
// at T·λ/μ.
func TestSimulateAboveRate(t *testing.T) {
	for _, tc := range []struct {
		name            string
		lambda, T       float64
		batch           int
		interval        time.Duration
		wantPeak        float64
		wantMax, wantDr float64 // seconds
	}{
		// λ = 100/s for 60 s against μ = 50/s: peak 3000, max wait 60 s, drain 120 s.
		{"double the rate", 100, 60, 25, 500 * time.Millisecond, 3000, 60, 120},
		// λ = 40/s for 30 s against μ = 30/s: peak 300, max wait 10 s, drain 40 s.
		{"a third over", 40, 30, 30, time.Second, 300, 10, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := int(tc.lambda * tc.T)
			c := MustCrowd(t, n, 1/tc.lambda, 0)
			s := plan.Setting{Policy: plan.PolicyBatch, Batch: tc.batch, Capacity: 1, Interval: tc.interval}
			o := plan.Simulate(c, s, plan.Event{Window: time.Minute})
			// Tolerances: one batch for the line, one interval for times.
			iv := tc.interval.Seconds()
			if !near(float64(o.PeakWaiting), tc.wantPeak, float64(tc.batch)) {
				t.Errorf("peak line %d, want %.0f ± %d", o.PeakWaiting, tc.wantPeak, tc.batch)
			}
			if !near(o.Wait.Max.Seconds(), tc.wantMax, iv) {
				t.Errorf("max wait %s, want %gs ± %s", o.Wait.Max, tc.wantMax, tc.interval)
			}
			if !near(o.Drain, tc.wantDr, iv) {
				t.Errorf("drain at %gs, want %gs ± %s", o.Drain, tc.wantDr, tc.interval)
			}
			if o.Admitted != n {
				t.Errorf("admitted %d, want %d", o.Admitted, n)
			}
		})
	}
}

// TestSimulateSpike: N users at t = 0, b admitted every i: the k-th waits
// floor((k−1)/b)·i exactly, so the percentiles are that at k = ⌈q·N⌉.
func TestSimulateSpike(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, batch int
		interval time.Duration
	}{
		{"1000 by 100 every second", 1000, 100, time.Second},
		{"12345 by 150 every 500ms", 12345, 150, 500 * time.Millisecond},
		{"7 by 1 every 50ms", 7, 1, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := MustCrowd(t, tc.n, 0, 0)
			s := plan.Setting{Policy: plan.PolicyBatch, Batch: tc.batch, Capacity: 1, Interval: tc.interval}
			o := plan.Simulate(c, s, plan.Event{Window: time.Minute})
			wait := func(k int) time.Duration { return time.Duration((k-1)/tc.batch) * tc.interval }
			rank := func(q float64) int { return int(math.Ceil(q * float64(tc.n))) }
			want := plan.Waits{P50: wait(rank(0.5)), P95: wait(rank(0.95)), Max: wait(tc.n)}
			if o.Wait != want {
				t.Errorf("waits %+v, want %+v", o.Wait, want)
			}
			if o.PeakWaiting != tc.n {
				t.Errorf("peak line %d, want %d", o.PeakWaiting, tc.n)
			}
			if drain := wait(tc.n).Seconds(); !near(o.Drain, drain, 1e-9) {
				t.Errorf("drain %gs, want %gs", o.Drain, drain)
			}
		})
	}
}

// TestSimulatePolicies checks the rules that set the tick's room.
func TestSimulatePolicies(t *testing.T) {
	ev := plan.Event{Window: 10 * time.Second}
	for _, tc := range []struct {
		name  string
		c     *plan.Crowd
		s     plan.Setting
		ev    plan.Event
		check func(t *testing.T, o *plan.Outcome)
	}{
		// 100 at once, capacity 10, buyers order after 3 s: the line is empty
		// and live < 10 for the first 10, so they are admitted on join; then
		// each wave of 10 takes 3 s.
		{"capacity caps live actives", MustCrowd(t, 100, 0, 3),
			plan.Setting{Policy: plan.PolicyCapacity, Batch: 50, Capacity: 10, Interval: time.Second}, ev,
			func(t *testing.T, o *plan.Outcome) {
				if o.PeakActive != 10 {
					t.Errorf("peak active %d, want 10", o.PeakActive)
				}
				if o.AdmittedOnJoin != 10 {
					t.Errorf("admitted on join %d, want 10", o.AdmittedOnJoin)
				}
				// Waves at 0 (on join), 3, 6, …: the last of
				// 100 is in the 10th wave, at 27 s.
				if o.Wait.Max != 27*time.Second {
					t.Errorf("max wait %s, want 27s", o.Wait.Max)
				}
			}},
		// Non-buyers hold the slot for the whole window.
		{"non-buyers hold the window", func() *plan.Crowd {
			c := MustCrowd(t, 20, 0, 1)
			for k := range c.Users {
				c.Users[k].Buys = false
			}
			return c
		}(), plan.Setting{Policy: plan.PolicyCapacity, Batch: 10, Capacity: 10, Interval: time.Second}, ev,
			func(t *testing.T, o *plan.Outcome) {
				if o.Sold != 0 || o.Wait.Max != 10*time.Second {
					t.Errorf("sold %d, max wait %s; want 0 and 10s", o.Sold, o.Wait.Max)
				}
			}},
		// Seats run out: later buyers leave without an order.
		{"sold out", MustCrowd(t, 50, 0, 1),
			plan.Setting{Policy: plan.PolicyBatch, Batch: 10, Capacity: 1, Interval: time.Second},
			plan.Event{Seats: 25, Window: time.Minute},
			func(t *testing.T, o *plan.Outcome) {
				if o.Sold != 25 || o.Admitted != 50 {
					t.Errorf("sold %d admitted %d, want 25 and 50", o.Sold, o.Admitted)
				}
				// Orders at 1 s (10), 2 s (10), 3 s (the 25th).
				if o.SoldOutAt != 3 {
					t.Errorf("sold out at %gs, want 3s", o.SoldOutAt)
				}
			}},
		// Adaptive: 10 orders in the second before a tick at max_tps 10 is full
		// load, so the tick admits 1; with no orders it admits the whole batch.
		{"adaptive slows to 1 at max_tps", MustCrowd(t, 40, 0, 0.5),
			plan.Setting{Policy: plan.PolicyAdaptive, Batch: 10, Capacity: 1000, Interval: time.Second, MaxTPS: 10}, ev,
			func(t *testing.T, o *plan.Outcome) {
				// t=0: 10 (no load); t=1: 10 orders → 1; t=2: 1 order → 9.1 → 9;
				// t=3: 9 orders → 1.9 → 2; t=4: 2 → 8.2 → 8; t=5: 8 → 2.8 → 3; t=6: 3 → 7.3 → 7.
				want := []int32{10, 1, 9, 2, 8, 3, 7}
				for i, w := range want {
					if o.Series.Admits[i] != w {
						t.Fatalf("admits per second %v, want %v…", o.Series.Admits[:len(want)], want)
					}
				}
			}},
		// Patience: users who would wait past their patience leave the line.
		{"patience empties the line", func() *plan.Crowd {
			c := MustCrowd(t, 30, 0, 0)
			for k := range c.Users {
				c.Users[k].Patience = 1.5
			}
			return c
		}(), plan.Setting{Policy: plan.PolicyBatch, Batch: 10, Capacity: 1, Interval: time.Second}, ev,
			func(t *testing.T, o *plan.Outcome) {
				// Ticks at 0 and 1 admit 20; the last 10 leave at 1.5 s.
				if o.Admitted != 20 || o.Abandoned != 10 || o.Drain != 1.5 {
					t.Errorf("admitted %d abandoned %d drain %g; want 20, 10, 1.5", o.Admitted, o.Abandoned, o.Drain)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, plan.Simulate(tc.c, tc.s, tc.ev)) })
	}
}

// BenchmarkSimulateMillion is one setting over a million users in a 60 s spike.
func BenchmarkSimulateMillion(b *testing.B) {
	c := MustCrowd(b, 1_000_000, 60.0/1e6, 30)
	s := plan.Setting{Policy: plan.PolicyCapacity, Batch: 500, Capacity: 5000, Interval: 500 * time.Millisecond}
	for b.Loop() {
		plan.Simulate(c, s, plan.Event{Window: 5 * time.Minute})
	}
}
