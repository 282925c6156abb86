package scenario_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

func ms(n float64) scenario.Duration { return scenario.Duration(n * float64(time.Millisecond)) }

// samples draws n durations from d with a fixed seed.
func samples(d scenario.Dist, n int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d.Sample(r)
	}
	return out
}

func mean(xs []time.Duration) time.Duration {
	var sum float64
	for _, x := range xs {
		sum += float64(x)
	}
	return time.Duration(sum / float64(len(xs)))
}

func quantile(xs []time.Duration, q float64) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func within(got, want time.Duration, frac float64) bool {
	return math.Abs(float64(got-want)) <= frac*float64(want)
}

func TestDistSample(t *testing.T) {
	const n = 20_000
	tests := []struct {
		name  string
		dist  scenario.Dist
		check func(t *testing.T, xs []time.Duration)
	}{
		{
			name: "zero dist is always 0",
			dist: scenario.Dist{},
			check: func(t *testing.T, xs []time.Duration) {
				if slices.Max(xs) != 0 {
					t.Errorf("max %v, want 0", slices.Max(xs))
				}
			},
		},
		{
			name: "constant",
			dist: scenario.Dist{Kind: scenario.DistConstant, Value: ms(250)},
			check: func(t *testing.T, xs []time.Duration) {
				if slices.Min(xs) != 250*time.Millisecond || slices.Max(xs) != 250*time.Millisecond {
					t.Errorf("range %v..%v, want 250ms", slices.Min(xs), slices.Max(xs))
				}
			},
		},
		{
			name: "uniform stays in bounds, mean in the middle",
			dist: scenario.Dist{Kind: scenario.DistUniform, Min: ms(300), Max: ms(1500)},
			check: func(t *testing.T, xs []time.Duration) {
				if lo, hi := slices.Min(xs), slices.Max(xs); lo < 300*time.Millisecond || hi >= 1500*time.Millisecond {
					t.Errorf("range %v..%v, want within [300ms, 1.5s)", lo, hi)
				}
				if lo, hi := slices.Min(xs), slices.Max(xs); lo > 310*time.Millisecond || hi < 1490*time.Millisecond {
					t.Errorf("range %v..%v does not fill [300ms, 1.5s)", lo, hi)
				}
				if m := mean(xs); !within(m, 900*time.Millisecond, 0.02) {
					t.Errorf("mean %v, want 900ms ± 2%%", m)
				}
			},
		},
		{
			name: "uniform with min = max",
			dist: scenario.Dist{Kind: scenario.DistUniform, Min: ms(10), Max: ms(10)},
			check: func(t *testing.T, xs []time.Duration) {
				if slices.Min(xs) != 10*time.Millisecond || slices.Max(xs) != 10*time.Millisecond {
					t.Errorf("range %v..%v, want 10ms", slices.Min(xs), slices.Max(xs))
				}
			},
		},
		{
			name: "lognormal median and p90",
			dist: scenario.Dist{Kind: scenario.DistLognormal, Median: ms(400), P90: ms(1200)},
			check: func(t *testing.T, xs []time.Duration) {
				if m := quantile(xs, 0.5); !within(m, 400*time.Millisecond, 0.05) {
					t.Errorf("median %v, want 400ms ± 5%%", m)
				}
				if p := quantile(xs, 0.9); !within(p, 1200*time.Millisecond, 0.05) {
					t.Errorf("p90 %v, want 1.2s ± 5%%", p)
				}
				// E[X] = median·e^(σ²/2).
				sigma := math.Log(3) / 1.2815515655446004
				want := time.Duration(400e6 * math.Exp(sigma*sigma/2))
				if m := mean(xs); !within(m, want, 0.05) {
					t.Errorf("mean %v, want %v ± 5%%", m, want)
				}
			},
		},
		{
			name: "lognormal with p90 = median is constant",
			dist: scenario.Dist{Kind: scenario.DistLognormal, Median: ms(400), P90: ms(400)},
			check: func(t *testing.T, xs []time.Duration) {
				if slices.Min(xs) != 400*time.Millisecond || slices.Max(xs) != 400*time.Millisecond {
					t.Errorf("range %v..%v, want 400ms", slices.Min(xs), slices.Max(xs))
				}
			},
		},
		{
			name: "exponential mean",
			dist: scenario.Dist{Kind: scenario.DistExponential, Mean: ms(800)},
			check: func(t *testing.T, xs []time.Duration) {
				if m := mean(xs); !within(m, 800*time.Millisecond, 0.05) {
					t.Errorf("mean %v, want 800ms ± 5%%", m)
				}
				// P(X ≤ mean) = 1 − 1/e.
				if m := quantile(xs, 1-1/math.E); !within(m, 800*time.Millisecond, 0.05) {
					t.Errorf("63rd percentile %v, want 800ms ± 5%%", m)
				}
			},
		},
		{
			name: "normal mean and stddev",
			dist: scenario.Dist{Kind: scenario.DistNormal, Mean: ms(2000), Stddev: ms(500)},
			check: func(t *testing.T, xs []time.Duration) {
				if m := mean(xs); !within(m, 2*time.Second, 0.02) {
					t.Errorf("mean %v, want 2s ± 2%%", m)
				}
				if sd := quantile(xs, 0.8413) - quantile(xs, 0.5); !within(sd, 500*time.Millisecond, 0.05) {
					t.Errorf("p84 − p50 = %v, want one stddev (500ms) ± 5%%", sd)
				}
			},
		},
		{
			name: "normal is truncated at 0, not clamped",
			dist: scenario.Dist{Kind: scenario.DistNormal, Mean: 0, Stddev: ms(1000)},
			check: func(t *testing.T, xs []time.Duration) {
				zeros := 0
				for _, x := range xs {
					if x < 0 {
						t.Fatalf("negative sample %v", x)
					}
					if x == 0 {
						zeros++
					}
				}
				if zeros > 2 {
					t.Errorf("%d samples at exactly 0: clamped rather than truncated", zeros)
				}
				// A half-normal's mean is σ·√(2/π).
				if m, want := mean(xs), time.Duration(1e9*math.Sqrt(2/math.Pi)); !within(m, want, 0.05) {
					t.Errorf("mean %v, want %v ± 5%%", m, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, samples(tt.dist, n))
		})
	}
}

func TestDistSampleIsReproducible(t *testing.T) {
	d := scenario.Dist{Kind: scenario.DistLognormal, Median: ms(400), P90: ms(1200)}
	if a, b := samples(d, 100), samples(d, 100); !slices.Equal(a, b) {
		t.Error("the same seed gave different samples")
	}
}

func TestDistSampleExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	huge := scenario.Duration(math.MaxInt64)
	for _, d := range []scenario.Dist{
		{Kind: scenario.DistExponential, Mean: huge},
		{Kind: scenario.DistLognormal, Median: huge / 2, P90: huge},
		{Kind: scenario.DistNormal, Mean: huge, Stddev: huge},
		{Kind: scenario.DistUniform, Min: 0, Max: huge},
		{Kind: "gamma", Mean: ms(5)},
	} {
		for range 1000 {
			if v := d.Sample(r); v < 0 {
				t.Fatalf("%+v sampled %v", d, v)
			}
		}
	}
}

func TestPickBot(t *testing.T) {
	s := &scenario.Scenario{Bots: []scenario.Bot{
		{Name: "fast", Weight: 6},
		{Name: "casual", Weight: 3},
		{Name: "front", Weight: 1},
	}}
	r := rand.New(rand.NewPCG(5, 6))
	const n = 100_000
	counts := map[string]int{}
	for range n {
		counts[s.PickBot(r).Name]++
	}
	for _, b := range s.Bots {
		if got, want := float64(counts[b.Name])/n, b.Weight/10; math.Abs(got-want) > 0.01 {
			t.Errorf("%s picked %.3f of the time, want %.2f ± 0.01", b.Name, got, want)
		}
	}

	// PickBot returns a pointer into the scenario, not a copy.
	if b := s.PickBot(r); b != &s.Bots[0] && b != &s.Bots[1] && b != &s.Bots[2] {
		t.Error("PickBot returned a copy")
	}
	if b := (&scenario.Scenario{}).PickBot(r); b != nil {
		t.Errorf("PickBot with no bots = %+v, want nil", b)
	}
	one := &scenario.Scenario{Bots: []scenario.Bot{{Name: "only", Weight: 0}}}
	if b := one.PickBot(r); b == nil || b.Name != "only" {
		t.Errorf("PickBot with zero weights = %+v, want the only bot", b)
	}
}

func TestPhaseExpectedArrivals(t *testing.T) {
	sec := scenario.Duration(time.Second)
	tests := []struct {
		name  string
		phase scenario.Phase
		want  float64
	}{
		{"constant: rate·d", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 50, Duration: 20 * sec}, 1000},
		{"poisson: rate·d", scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 50, Duration: 20 * sec}, 1000},
		{"ramp: (from+to)/2·d", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 10, To: 30, Duration: 60 * sec}, 1200},
		{"spike: users", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 4000, Over: 3 * sec, Duration: 3 * sec}, 4000},
		{"sine over whole periods: mean·d", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 30, Amplitude: 20, Period: 20 * sec, Duration: 60 * sec}, 1800},
		{"sine over half a period adds the crest", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 30, Amplitude: 20, Period: 20 * sec, Duration: 10 * sec}, 300 + 20*20/math.Pi},
		{"closed: unknown", scenario.Phase{Arrival: scenario.ArrivalClosed, Concurrency: 100, Duration: 60 * sec}, -1},
		{"unknown arrival: 0", scenario.Phase{Arrival: "burst"}, 0},
	}
	for _, tt := range tests {
		if got := tt.phase.ExpectedArrivals(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: ExpectedArrivals = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTotalDuration(t *testing.T) {
	s := MustLoad(t, "../../scenarios/concert-rush.yaml")
	if got := s.TotalDuration(); got != 23*time.Second {
		t.Errorf("concert-rush lasts %v, want 23s (3s spike + 20s tail)", got)
	}
	huge := &scenario.Scenario{Phases: []scenario.Phase{{Duration: math.MaxInt64}, {Duration: math.MaxInt64}}}
	if got := huge.TotalDuration(); got != math.MaxInt64 {
		t.Errorf("overflowing total = %v, want it saturated", got)
	}
}
