package pace

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rushline/rushline/simulator/scenario"
)

// Pacer extends vegeta's, so a Pacer runs in vegeta's Attacker.
var _ vegeta.Pacer = Pacer(nil)

// MustFor builds the pacer of p or fails the test.
func MustFor(tb testing.TB, p scenario.Phase, seed int64) Pacer {
	tb.Helper()
	pc, err := For(p, seed)
	if err != nil {
		tb.Fatalf("For(%+v): %v", p, err)
	}
	return pc
}

// MustSchedule builds the pacer of p and its schedule over the phase, and
// checks that the arrivals are in order and inside [0, Duration).
func MustSchedule(tb testing.TB, p scenario.Phase, seed int64) []time.Duration {
	tb.Helper()
	d := time.Duration(p.Duration)
	s := Schedule(MustFor(tb, p, seed), d)
	for i, at := range s {
		if at < 0 || at >= d {
			tb.Fatalf("arrival %d at %s is outside [0, %s)", i, at, d)
		}
		if i > 0 && at < s[i-1] {
			tb.Fatalf("arrival %d at %s is before arrival %d at %s", i, at, i-1, s[i-1])
		}
	}
	return s
}

// MustWindows counts the arrivals of s in consecutive windows of w over d.
func MustWindows(tb testing.TB, s []time.Duration, w, d time.Duration) []int {
	tb.Helper()
	if w <= 0 || d%w != 0 {
		tb.Fatalf("window %s does not divide %s", w, d)
	}
	n := make([]int, d/w)
	for _, at := range s {
		n[at/w]++
	}
	return n
}

func sec(s float64) scenario.Duration { return scenario.Duration(s * float64(time.Second)) }

// Integrals of each model's rate from the phase start to t seconds: the
// expected count of arrivals. Written from the model, independently of the
// package.
func constantH(r float64) func(float64) float64 { return func(t float64) float64 { return r * t } }

func rampH(from, to, d float64) func(float64) float64 {
	return func(t float64) float64 { return from*t + (to-from)/d*t*t/2 }
}

func sineH(mean, amp, period float64) func(float64) float64 {
	return func(t float64) float64 { return mean*t + amp*period/(2*math.Pi)*(1-math.Cos(2*math.Pi*t/period)) }
}

func spikeH(users int, over float64) func(float64) float64 {
	return func(t float64) float64 { return float64(users) * min(t, over) / over }
}

func TestScheduleWindowCountsMatchModel(t *testing.T) {
	tests := []struct {
		name   string
		phase  scenario.Phase
		window time.Duration
		h      func(t float64) float64 // expected arrivals in [0, t s)
		tol    float64                 // per window, in arrivals
	}{
		// constant: a whole rate per second, exact to ±1 per window.
		{"constant 50/s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 50, Duration: sec(10)}, time.Second, constantH(50), 1},
		// constant: an interval that isn't whole nanoseconds (333333.3 ns).
		{"constant 3000/s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 3000, Duration: sec(5)}, time.Second, constantH(3000), 1},
		// constant: 1/7 per second, not whole per second, minute or hour.
		{"constant 1/7 per s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: scenario.Rate(1.0 / 7), Duration: sec(70)}, 7 * time.Second, constantH(1.0 / 7), 1},
		// constant: fractional 0.5/s in 1 s windows: 1, 0, 1, 0, …
		{"constant 0.5/s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 0.5, Duration: sec(10)}, time.Second, constantH(0.5), 1},
		// ramp: from zero, the usual opening ramp.
		{"ramp 0→100/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 100, Duration: sec(10)}, time.Second, rampH(0, 100, 10), 2},
		// ramp: down to zero.
		{"ramp 100→0/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 100, To: 0, Duration: sec(10)}, time.Second, rampH(100, 0, 10), 2},
		// ramp: steep from a low start, where vegeta's LinearPacer bursts.
		{"ramp 1→51/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 1, To: 51, Duration: sec(5)}, time.Second, rampH(1, 51, 5), 2},
		// ramp: long and large.
		{"ramp 10→2000/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 10, To: 2000, Duration: sec(60)}, time.Second, rampH(10, 2000, 60), 2},
		// ramp: flat, From == To.
		{"ramp 40→40/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 40, To: 40, Duration: sec(5)}, time.Second, constantH(40), 2},
		// ramp: fractional rates, 0 → 3/s over 20 s.
		{"ramp 0→3/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 3, Duration: sec(20)}, time.Second, rampH(0, 3, 20), 2},
		// sine: 100 ± 50 every 4 s, ±3% of the mean per window.
		{"sine 100±50/4s", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 100, Amplitude: 50, Period: sec(4), Duration: sec(12)}, time.Second, sineH(100, 50, 4), 3},
		// sine: almost touching zero, a period that doesn't divide the duration.
		{"sine 200±199/3s", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 200, Amplitude: 199, Period: sec(3), Duration: sec(10)}, time.Second, sineH(200, 199, 3), 6},
		// sine: amplitude = mean, the rate touching 0 at each trough.
		{"sine 100±100/4s", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 100, Amplitude: 100, Period: sec(4), Duration: sec(12)}, time.Second, sineH(100, 100, 4), 3},
		// sine: amplitude = mean at a low rate, in 0.5 s windows around the troughs.
		{"sine 2±2/10s", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 2, Amplitude: 2, Period: sec(10), Duration: sec(30)}, 500 * time.Millisecond, sineH(2, 2, 10), 1},
		// sine: a long slow wave in 10 s windows.
		{"sine 50±25/60s", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 50, Amplitude: 25, Period: sec(60), Duration: sec(120)}, 10 * time.Second, sineH(50, 25, 60), 0.03 * 50 * 10},
		// sine: zero amplitude is constant.
		{"sine 80±0", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 80, Amplitude: 0, Period: sec(5), Duration: sec(5)}, time.Second, constantH(80), 0.03 * 80},
		// spike: 1000 users over 2 s of a 10 s phase, then nothing.
		{"spike 1000/2s", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 1000, Over: sec(2), Duration: sec(10)}, time.Second, spikeH(1000, 2), 1},
		// spike: over the whole phase.
		{"spike 7/7s", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 7, Over: sec(7), Duration: sec(7)}, time.Second, spikeH(7, 7), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := time.Duration(tt.phase.Duration)
			s := MustSchedule(t, tt.phase, 1)
			got := MustWindows(t, s, tt.window, d)
			w := tt.window.Seconds()
			for i, n := range got {
				want := tt.h(float64(i+1)*w) - tt.h(float64(i)*w)
				if math.Abs(float64(n)-want) > tt.tol {
					t.Errorf("window %d [%gs, %gs): %d arrivals, model %.2f ± %g\nall: %v", i, float64(i)*w, float64(i+1)*w, n, want, tt.tol, got)
				}
			}
			if want := tt.h(d.Seconds()); math.Abs(float64(len(s))-want) > 1 {
				t.Errorf("%d arrivals in all, model %.2f ± 1", len(s), want)
			}
		})
	}
}

func TestFractionalRates(t *testing.T) {
	tests := []struct {
		name  string
		phase scenario.Phase
		want  []time.Duration
	}{
		// 0.5/s: one arrival per 2 s, from the phase start.
		{"0.5/s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 0.5, Duration: sec(10)},
			[]time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}},
		// 20/m read as a float per second (0.333…): one per 3 s, exactly.
		{"20/m", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: scenario.Rate(20.0 / 60), Duration: sec(12)},
			[]time.Duration{0, 3 * time.Second, 6 * time.Second, 9 * time.Second}},
		// 0.5/s that ends mid-interval: the arrival due at 4 s is past 3 s.
		{"0.5/s over 3s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 0.5, Duration: sec(3)},
			[]time.Duration{0, 2 * time.Second}},
		// 0.5/s over exactly 4 s: the arrival at 4 s belongs to the next phase.
		{"0.5/s over 4s", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 0.5, Duration: sec(4)},
			[]time.Duration{0, 2 * time.Second}},
		// a flat ramp at 0.5/s matches the constant one.
		{"ramp 0.5→0.5/s", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0.5, To: 0.5, Duration: sec(10)},
			[]time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second, 8 * time.Second}},
		// 3 users over 1.5 s: one per 0.5 s.
		{"spike 3/1.5s", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 3, Over: sec(1.5), Duration: sec(10)},
			[]time.Duration{0, 500 * time.Millisecond, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MustSchedule(t, tt.phase, 1); !slices.Equal(got, tt.want) {
				t.Errorf("schedule %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSpikeAllUsersWithinOver(t *testing.T) {
	tests := []struct {
		name  string
		users int
		over  time.Duration
		dur   time.Duration
	}{
		// the opening second: 10 000 users in 1 s of a 1-minute phase.
		{"10k in 1s", 10000, time.Second, time.Minute},
		// more users than nanoseconds: several share an instant.
		{"5000 in 1µs", 5000, time.Microsecond, time.Second},
		// a user count that doesn't divide the window.
		{"7 in 1s", 7, time.Second, 2 * time.Second},
		// one user.
		{"1 in 1ms", 1, time.Millisecond, time.Millisecond},
		// a long spike with many users, where users·over overflows 64 bits.
		{"1M in 3h", 1_000_000, 3 * time.Hour, 3 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := scenario.Phase{Arrival: scenario.ArrivalSpike, Users: tt.users, Over: scenario.Duration(tt.over), Duration: scenario.Duration(tt.dur)}
			s := MustSchedule(t, p, 1)
			if len(s) != tt.users {
				t.Fatalf("%d arrivals, want %d", len(s), tt.users)
			}
			if s[0] != 0 {
				t.Errorf("first arrival at %s, want the phase start", s[0])
			}
			if last := s[len(s)-1]; last >= tt.over {
				t.Errorf("last arrival at %s, not within %s", last, tt.over)
			}
			// Evenly: arrival k at floor(k·over/users).
			for _, k := range []int{0, tt.users / 3, tt.users / 2, tt.users - 1} {
				want := time.Duration(float64(k) * float64(tt.over) / float64(tt.users))
				if diff := s[k] - want; diff < -1 || diff > 1 {
					t.Errorf("arrival %d at %s, want %s", k, s[k], want)
				}
			}
		})
	}
}

func TestPoisson(t *testing.T) {
	const (
		rate = 200.0
		dur  = 500 * time.Second
		seed = 20240601
	)
	p := scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: rate, Duration: scenario.Duration(dur)}
	s := MustSchedule(t, p, seed)
	lambda := rate * dur.Seconds()

	t.Run("total within 3σ", func(t *testing.T) {
		t.Logf("%d arrivals, λT = %g", len(s), lambda)
		if sigma := math.Sqrt(lambda); math.Abs(float64(len(s))-lambda) > 3*sigma {
			t.Errorf("%d arrivals, want %g ± %.0f", len(s), lambda, 3*sigma)
		}
	})

	t.Run("per-window counts are Poisson", func(t *testing.T) {
		// Counts per 1 s window are Poisson(rate): the chi-square statistic
		// Σ(n−λ)²/λ over K windows has mean K and standard deviation √(2K),
		// and the variance equals the mean (a constant pacer would give ~0).
		counts := MustWindows(t, s, time.Second, dur)
		k := float64(len(counts))
		var chi2, sum, sumsq float64
		for _, n := range counts {
			chi2 += (float64(n) - rate) * (float64(n) - rate) / rate
			sum += float64(n)
			sumsq += float64(n) * float64(n)
		}
		if sd := math.Sqrt(2 * k); math.Abs(chi2-k) > 4*sd {
			t.Errorf("chi-square %.1f over %g windows, want %g ± %.1f", chi2, k, k, 4*sd)
		}
		mean := sum / k
		variance := (sumsq - sum*sum/k) / (k - 1)
		t.Logf("chi-square %.1f over %g windows; mean %.2f, variance %.2f", chi2, k, mean, variance)
		if ratio := variance / mean; ratio < 0.8 || ratio > 1.2 {
			t.Errorf("variance/mean %.3f (variance %.1f, mean %.1f), want about 1", ratio, variance, mean)
		}
	})

	t.Run("gaps are exponential", func(t *testing.T) {
		// First arrival one gap in; gaps have mean 1/rate, and
		// P(gap > mean) = 1/e.
		n := float64(len(s))
		var sum float64
		var over int
		prev := time.Duration(0)
		for _, at := range s {
			g := (at - prev).Seconds()
			sum += g
			if g > 1/rate {
				over++
			}
			prev = at
		}
		if mean, se := sum/n, 1/rate/math.Sqrt(n); math.Abs(mean-1/rate) > 4*se {
			t.Errorf("mean gap %gs, want %gs ± %g", mean, 1/rate, 4*se)
		}
		q := math.Exp(-1)
		t.Logf("mean gap %.6fs, %.4f of gaps above it", sum/n, float64(over)/n)
		if frac, se := float64(over)/n, math.Sqrt(q*(1-q)/n); math.Abs(frac-q) > 4*se {
			t.Errorf("gaps above the mean: %.4f, want %.4f ± %.4f", frac, q, 4*se)
		}
	})

	t.Run("fractional rate", func(t *testing.T) {
		// 0.5/s over 20 000 s: about one per 2 s.
		p := scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 0.5, Duration: sec(20000)}
		n := float64(len(MustSchedule(t, p, seed)))
		if math.Abs(n-10000) > 3*100 {
			t.Errorf("%g arrivals, want 10000 ± 300", n)
		}
	})
}

func TestPoissonReproducible(t *testing.T) {
	p := scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 50, Duration: sec(60)}
	d := time.Duration(p.Duration)
	a := MustSchedule(t, p, 7)

	tests := []struct {
		name string
		got  func(t *testing.T) []time.Duration
		same bool
	}{
		// a new pacer with the same seed: the same schedule.
		{"same seed", func(t *testing.T) []time.Duration { return MustSchedule(t, p, 7) }, true},
		// one pacer scheduled twice: it restarts from its seed.
		{"reused pacer", func(t *testing.T) []time.Duration {
			pc := MustFor(t, p, 7)
			Schedule(pc, d)
			return Schedule(pc, d)
		}, true},
		// a pacer half-stepped elsewhere first.
		{"after a partial run", func(t *testing.T) []time.Duration {
			pc := MustFor(t, p, 7)
			Schedule(pc, d/2)
			return Schedule(pc, d)
		}, true},
		// another seed: another schedule.
		{"different seed", func(t *testing.T) []time.Duration { return MustSchedule(t, p, 8) }, false},
		// seeds far apart.
		{"negative seed", func(t *testing.T) []time.Duration { return MustSchedule(t, p, -7) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(t); slices.Equal(got, a) != tt.same {
				t.Errorf("equal to the seed-7 schedule: %v, want %v (%d vs %d arrivals)", !tt.same, tt.same, len(got), len(a))
			}
		})
	}

	t.Run("arrival k does not depend on elapsed", func(t *testing.T) {
		// An attacker that lags or runs early asks at other moments; the
		// arrival it is told to wait for is still a[k].
		pc := MustFor(t, p, 7)
		for k := range uint64(len(a)) {
			elapsed := a[k] / 2
			wait, stop := pc.Pace(elapsed, k)
			if stop || elapsed+wait != a[k] {
				t.Fatalf("Pace(%s, %d) = %s, %v; want arrival at %s", elapsed, k, wait, stop, a[k])
			}
		}
		// Late: now.
		if wait, stop := pc.Pace(a[10]+time.Millisecond, 10); wait != 0 || stop {
			t.Errorf("late Pace = %s, %v; want 0, false", wait, stop)
		}
	})
}

func TestPoissonConcurrentUse(t *testing.T) {
	// Not vegeta's pattern, but Pace must not race: run under -race.
	pc := MustFor(t, scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 1000, Duration: sec(10)}, 3)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range uint64(500) {
				pc.Pace(time.Duration(g)*time.Millisecond, k)
				pc.Rate(time.Duration(k) * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

func TestRate(t *testing.T) {
	type point struct {
		at   time.Duration
		want float64
	}
	tests := []struct {
		name   string
		phase  scenario.Phase
		points []point
	}{
		// constant: Rate, and 0 outside the phase.
		{"constant", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 0.5, Duration: sec(10)},
			[]point{{-time.Second, 0}, {0, 0.5}, {5 * time.Second, 0.5}, {10*time.Second - 1, 0.5}, {10 * time.Second, 0}}},
		// ramp: From + (To−From)·t/Duration.
		{"ramp up", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 100, Duration: sec(10)},
			[]point{{0, 0}, {2500 * time.Millisecond, 25}, {5 * time.Second, 50}, {9 * time.Second, 90}, {10 * time.Second, 0}}},
		// ramp: downwards.
		{"ramp down", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 30, To: 10, Duration: sec(4)},
			[]point{{0, 30}, {time.Second, 25}, {3 * time.Second, 15}}},
		// spike: Users/Over during Over, then 0.
		{"spike", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 1000, Over: sec(2), Duration: sec(10)},
			[]point{{0, 500}, {1999 * time.Millisecond, 500}, {2 * time.Second, 0}, {9 * time.Second, 0}}},
		// sine: Mean + Amplitude·sin(2πt/Period), starting at the mean going up.
		{"sine", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 100, Amplitude: 50, Period: sec(4), Duration: sec(12)},
			[]point{{0, 100}, {500 * time.Millisecond, 100 + 50*math.Sqrt2/2}, {time.Second, 150}, {2 * time.Second, 100}, {3 * time.Second, 50}, {5 * time.Second, 150}, {12 * time.Second, 0}}},
		// poisson: its mean rate.
		{"poisson", scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 200, Duration: sec(3)},
			[]point{{0, 200}, {2 * time.Second, 200}, {3 * time.Second, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := MustFor(t, tt.phase, 1)
			for _, pt := range tt.points {
				if got := pc.Rate(pt.at); math.Abs(got-pt.want) > 1e-9*max(1, pt.want) {
					t.Errorf("Rate(%s) = %g, want %g", pt.at, got, pt.want)
				}
			}
		})
	}
}

func TestPacersStopAfterDuration(t *testing.T) {
	tests := []struct {
		name  string
		phase scenario.Phase
	}{
		// each model, for 3 s.
		{"constant", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 10, Duration: sec(3)}},
		{"ramp", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 10, Duration: sec(3)}},
		{"ramp to zero", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 10, To: 0, Duration: sec(3)}},
		{"spike", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 10, Over: sec(1), Duration: sec(3)}},
		{"sine", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 10, Amplitude: 5, Period: sec(1), Duration: sec(3)}},
		{"poisson", scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 10, Duration: sec(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := time.Duration(tt.phase.Duration)
			s := MustSchedule(t, tt.phase, 1)
			pc := MustFor(t, tt.phase, 1)
			n := uint64(len(s))
			// Past the last arrival: stop, whatever the moment.
			for _, at := range []time.Duration{s[n-1], d - 1, d, 2 * d} {
				if _, stop := pc.Pace(at, n); !stop {
					t.Errorf("Pace(%s, %d) does not stop after the last arrival", at, n)
				}
			}
			// At or after Duration: stop even with arrivals owed.
			if _, stop := pc.Pace(d, 0); !stop {
				t.Errorf("Pace(%s, 0) does not stop", d)
			}
			// A longer Schedule adds nothing: the pacer ends the phase.
			if got := Schedule(pc, 10*d); !slices.Equal(got, s) {
				t.Errorf("Schedule over 10×Duration gave %d arrivals, want %d", len(got), len(s))
			}
			// A shorter one cuts: the arrivals before d/3, no more.
			n = 0
			for n < uint64(len(s)) && s[n] < d/3 {
				n++
			}
			cut := s[:n]
			if got := Schedule(pc, d/3); !slices.Equal(got, cut) {
				t.Errorf("Schedule over Duration/3 = %v, want %v", got, cut)
			}
		})
	}
}

func TestScheduleEmpty(t *testing.T) {
	pc := MustFor(t, scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 10, Duration: sec(1)}, 1)
	for _, d := range []time.Duration{0, -time.Second} {
		if got := Schedule(pc, d); got != nil {
			t.Errorf("Schedule(%s) = %v, want nil", d, got)
		}
	}
}

func TestForErrors(t *testing.T) {
	c := scenario.Phase{Name: "p", Arrival: scenario.ArrivalConstant, Rate: 10, Duration: sec(10)}
	with := func(f func(p *scenario.Phase)) scenario.Phase { p := c; f(&p); return p }
	tests := []struct {
		name  string
		phase scenario.Phase
		want  error
	}{
		// the closed model has no pacer.
		{"closed", scenario.Phase{Arrival: scenario.ArrivalClosed, Concurrency: 100, Duration: sec(10)}, ErrClosed},
		// the closed model even with no duration: still ErrClosed.
		{"closed, zero duration", scenario.Phase{Arrival: scenario.ArrivalClosed}, ErrClosed},
		// zero-length phases, per model.
		{"constant, zero duration", with(func(p *scenario.Phase) { p.Duration = 0 }), ErrInvalid},
		{"ramp, zero duration", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 10}, ErrInvalid},
		{"spike, zero duration", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 10}, ErrInvalid},
		{"sine, zero duration", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 10, Amplitude: 5, Period: sec(1)}, ErrInvalid},
		{"poisson, zero duration", scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 10}, ErrInvalid},
		// a negative duration.
		{"negative duration", with(func(p *scenario.Phase) { p.Duration = sec(-1) }), ErrInvalid},
		// constant: rate 0, negative, NaN, infinite, above MaxRate.
		{"constant, rate 0", with(func(p *scenario.Phase) { p.Rate = 0 }), ErrInvalid},
		{"constant, negative rate", with(func(p *scenario.Phase) { p.Rate = -1 }), ErrInvalid},
		{"constant, NaN rate", with(func(p *scenario.Phase) { p.Rate = scenario.Rate(math.NaN()) }), ErrInvalid},
		{"constant, infinite rate", with(func(p *scenario.Phase) { p.Rate = scenario.Rate(math.Inf(1)) }), ErrInvalid},
		{"constant, rate above MaxRate", with(func(p *scenario.Phase) { p.Rate = 2 * MaxRate }), ErrInvalid},
		// ramp: both ends 0, a negative end.
		{"ramp, 0→0", scenario.Phase{Arrival: scenario.ArrivalRamp, Duration: sec(10)}, ErrInvalid},
		{"ramp, negative from", scenario.Phase{Arrival: scenario.ArrivalRamp, From: -1, To: 10, Duration: sec(10)}, ErrInvalid},
		{"ramp, negative to", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 10, To: -1, Duration: sec(10)}, ErrInvalid},
		// spike: no users, no Over, Over longer than the phase.
		{"spike, no users", scenario.Phase{Arrival: scenario.ArrivalSpike, Over: sec(1), Duration: sec(10)}, ErrInvalid},
		{"spike, no over", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 10, Duration: sec(10)}, ErrInvalid},
		{"spike, over > duration", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 10, Over: sec(11), Duration: sec(10)}, ErrInvalid},
		// sine: no mean, amplitude reaching the mean, negative amplitude, no period.
		{"sine, mean 0", scenario.Phase{Arrival: scenario.ArrivalSine, Period: sec(1), Duration: sec(10)}, ErrInvalid},
		{"sine, amplitude > mean", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 10, Amplitude: 10.5, Period: sec(1), Duration: sec(10)}, ErrInvalid},
		{"sine, negative amplitude", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 10, Amplitude: -1, Period: sec(1), Duration: sec(10)}, ErrInvalid},
		{"sine, no period", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 10, Amplitude: 5, Duration: sec(10)}, ErrInvalid},
		// poisson: rate 0.
		{"poisson, rate 0", scenario.Phase{Arrival: scenario.ArrivalPoisson, Duration: sec(10)}, ErrInvalid},
		// no model, an unknown one.
		{"no model", with(func(p *scenario.Phase) { p.Arrival = "" }), ErrInvalid},
		{"unknown model", with(func(p *scenario.Phase) { p.Arrival = "burst" }), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc, err := For(tt.phase, 1)
			if !errors.Is(err, tt.want) {
				t.Fatalf("For: %v, want %v", err, tt.want)
			}
			if pc != nil {
				t.Errorf("For returned a pacer with its error: %v", pc)
			}
		})
	}
}

func TestString(t *testing.T) {
	pc := MustFor(t, scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 100, Duration: sec(10)}, 1)
	if got, want := fmt.Sprint(pc), "Ramp{0/s → 100/s over 10s}"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestVegetaRate(t *testing.T) {
	tests := []struct {
		name string
		r    float64
		want vegeta.Rate
	}{
		// whole per second.
		{"50/s", 50, vegeta.Rate{Freq: 50, Per: time.Second}},
		// whole per minute.
		{"0.5/s", 0.5, vegeta.Rate{Freq: 30, Per: time.Minute}},
		{"20/m", 20.0 / 60, vegeta.Rate{Freq: 20, Per: time.Minute}},
		// whole per hour.
		{"1/h", 1.0 / 3600, vegeta.Rate{Freq: 1, Per: time.Hour}},
		// none: the interval in nanoseconds.
		{"1/7 per s", 1.0 / 7, vegeta.Rate{Freq: 1, Per: 7 * time.Second}},
		{"3/7 per s", 3.0 / 7, vegeta.Rate{Freq: 1, Per: 2333333333}},
		// so small the interval saturates.
		{"1e-300/s", 1e-300, vegeta.Rate{Freq: 1, Per: math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := vegetaRate(tt.r); got != tt.want {
				t.Errorf("vegetaRate(%g) = %v, want %v", tt.r, got, tt.want)
			}
		})
	}
}

// TestVegetaAttackerStops runs a pacer in vegeta's Attacker with no duration:
// the pacer alone must end the attack. Only counts are checked, not timing.
func TestVegetaAttackerStops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	p := scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 100, Duration: scenario.Duration(300 * time.Millisecond)}
	want := len(MustSchedule(t, p, 1))
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: srv.URL})
	atk := vegeta.NewAttacker()
	var n int
	for res := range atk.Attack(tr, MustFor(t, p, 1), 0, "constant") {
		if res.Code != http.StatusOK {
			t.Errorf("hit %d: %d %s", n, res.Code, res.Error)
		}
		n++
	}
	// A slow machine can lag past the end and lose the last arrivals.
	if n < 1 || n > want {
		t.Errorf("%d hits, want 1..%d", n, want)
	}
}

func BenchmarkSchedule(b *testing.B) {
	benchmarks := []struct {
		name  string
		phase scenario.Phase
	}{
		// 1M poisson arrivals: 10 000/s for 100 s.
		{"poisson", scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 10000, Duration: sec(100)}},
		// the others, 1M each, for comparison.
		{"constant", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 10000, Duration: sec(100)}},
		{"ramp", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 0, To: 20000, Duration: sec(100)}},
		{"sine", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 10000, Amplitude: 5000, Period: sec(10), Duration: sec(100)}},
		{"spike", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 1_000_000, Over: sec(10), Duration: sec(100)}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			pc := MustFor(b, bm.phase, 1)
			d := time.Duration(bm.phase.Duration)
			var n int
			for b.Loop() {
				n = len(Schedule(pc, d))
			}
			b.ReportMetric(float64(n), "arrivals/op")
		})
	}
}
