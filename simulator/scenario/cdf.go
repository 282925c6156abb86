package scenario

import (
	"math"
	"time"
)

// CDF is the probability that Sample returns at most d: the distribution
// function of the very draws Sample makes (a normal truncated at 0, a
// uniform over [min, max)). The zero Dist (and an unknown kind) is always 0,
// so its CDF is 1 from 0 on.
func (ds Dist) CDF(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	x := float64(d)
	switch ds.Kind {
	case DistConstant:
		return step(x, float64(ds.Value))
	case DistUniform:
		lo, hi := float64(ds.Min), float64(ds.Max)
		if hi <= lo {
			return step(x, lo)
		}
		return math.Min(1, math.Max(0, (x-lo)/(hi-lo)))
	case DistNormal:
		mean, sd := float64(ds.Mean), float64(ds.Stddev)
		if sd <= 0 {
			return step(x, mean)
		}
		below := phi(-mean / sd) // the mass the truncation draws again
		return (phi((x-mean)/sd) - below) / (1 - below)
	case DistLognormal:
		if ds.Median <= 0 {
			return 1
		}
		med := float64(ds.Median)
		if ds.P90 <= ds.Median {
			return step(x, med)
		}
		if x == 0 {
			return 0
		}
		sigma := (math.Log(float64(ds.P90)) - math.Log(med)) / z90
		return phi((math.Log(x) - math.Log(med)) / sigma)
	case DistExponential:
		if ds.Mean <= 0 {
			return 1
		}
		return 1 - math.Exp(-x/float64(ds.Mean))
	}
	return 1
}

// step is the CDF of a constant at v.
func step(x, v float64) float64 {
	if x >= v {
		return 1
	}
	return 0
}

// phi is the standard normal's distribution function.
func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
