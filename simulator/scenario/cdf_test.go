package scenario_test

import (
	"math"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// TestDistCDFMatchesSample: for every kind, the share of Sample draws at or
// below a point is the CDF at that point (within sampling noise).
func TestDistCDFMatchesSample(t *testing.T) {
	const n = 40_000
	tests := []struct {
		name string
		dist scenario.Dist
	}{
		// The zero Dist is always 0.
		{"zero", scenario.Dist{}},
		{"constant", scenario.Dist{Kind: scenario.DistConstant, Value: ms(250)}},
		{"uniform", scenario.Dist{Kind: scenario.DistUniform, Min: ms(300), Max: ms(1500)}},
		// Truncated at 0: a quarter of the untruncated mass lies below 0.
		{"normal, truncated", scenario.Dist{Kind: scenario.DistNormal, Mean: ms(400), Stddev: ms(600)}},
		{"lognormal", scenario.Dist{Kind: scenario.DistLognormal, Median: ms(350), P90: ms(900)}},
		// p90 = median: a constant.
		{"lognormal without spread", scenario.Dist{Kind: scenario.DistLognormal, Median: ms(350), P90: ms(350)}},
		{"exponential", scenario.Dist{Kind: scenario.DistExponential, Mean: ms(800)}},
	}
	points := []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, 349 * time.Millisecond,
		400 * time.Millisecond, 900 * time.Millisecond, 1400 * time.Millisecond, 3 * time.Second}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			xs := samples(tc.dist, n)
			for _, p := range points {
				below := 0
				for _, x := range xs {
					if x <= p {
						below++
					}
				}
				got, want := float64(below)/n, tc.dist.CDF(p)
				if math.Abs(got-want) > 0.01 {
					t.Errorf("at %v: %.4f of the samples, CDF says %.4f", p, got, want)
				}
			}
			if got := tc.dist.CDF(-time.Millisecond); got != 0 {
				t.Errorf("CDF(-1ms) = %v, want 0", got)
			}
		})
	}
}
