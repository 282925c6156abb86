package scenario

import (
	"math"
	"math/rand/v2"
	"time"
)

// z90 is the standard normal's 90th percentile: a lognormal's p90 is
// median·e^(σ·z90).
const z90 = 1.2815515655446004

// Sample draws one duration. The zero Dist (and an unknown kind) gives 0.
// A normal is truncated at 0 by drawing again, so it has no lump at 0.
// Not safe for concurrent use with the same r.
func (ds Dist) Sample(r *rand.Rand) time.Duration {
	switch ds.Kind {
	case DistConstant:
		return time.Duration(ds.Value)
	case DistUniform:
		lo, hi := int64(ds.Min), int64(ds.Max)
		if hi <= lo {
			return time.Duration(lo)
		}
		return time.Duration(lo + r.Int64N(hi-lo))
	case DistNormal:
		for range 64 { // mean ≥ 0, so each draw is kept with p ≥ 1/2
			if v := float64(ds.Mean) + float64(ds.Stddev)*r.NormFloat64(); v >= 0 {
				return nanos(v)
			}
		}
		return 0
	case DistLognormal:
		if ds.Median <= 0 {
			return 0
		}
		sigma := 0.0
		if ds.P90 > ds.Median {
			sigma = (math.Log(float64(ds.P90)) - math.Log(float64(ds.Median))) / z90
		}
		return nanos(float64(ds.Median) * math.Exp(sigma*r.NormFloat64()))
	case DistExponential:
		return nanos(float64(ds.Mean) * r.ExpFloat64())
	}
	return 0
}

// nanos converts float nanoseconds to a Duration, clamped to [0, max].
func nanos(v float64) time.Duration {
	switch {
	case !(v > 0):
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(v)
}

// PickBot draws a bot behaviour by weight; nil when there are no bots.
// Not safe for concurrent use with the same r.
func (s *Scenario) PickBot(r *rand.Rand) *Bot {
	total := 0.0
	for _, b := range s.Bots {
		if b.Weight > 0 {
			total += b.Weight
		}
	}
	if len(s.Bots) == 0 {
		return nil
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return &s.Bots[r.IntN(len(s.Bots))]
	}
	x := r.Float64() * total
	last := 0
	for i, b := range s.Bots {
		if b.Weight <= 0 {
			continue
		}
		if x -= b.Weight; x < 0 {
			return &s.Bots[i]
		}
		last = i
	}
	return &s.Bots[last] // rounding left x just above 0
}

// TotalDuration is the length of all phases, counted from the opening
// (OpensIn is not included). A spike lasts its duration, by default its over.
func (s *Scenario) TotalDuration() time.Duration {
	var total time.Duration
	for _, p := range s.Phases {
		if d := time.Duration(p.Duration); d > math.MaxInt64-total {
			return math.MaxInt64 // saturate rather than wrap
		} else if d > 0 {
			total += d
		}
	}
	return total
}

// ExpectedArrivals is the mean number of bots the phase starts:
//
//	constant, poisson  rate·d
//	ramp               (from+to)/2·d
//	spike              users
//	sine               mean·d + amplitude·period/2π·(1 − cos(2π·d/period))
//	closed             -1: unknown before the run, as it depends on how fast bots finish
//
// where d is the phase duration in seconds.
func (p Phase) ExpectedArrivals() float64 {
	d := time.Duration(p.Duration).Seconds()
	switch p.Arrival {
	case ArrivalConstant, ArrivalPoisson:
		return float64(p.Rate) * d
	case ArrivalRamp:
		return float64(p.From+p.To) / 2 * d
	case ArrivalSpike:
		return float64(p.Users)
	case ArrivalSine:
		n := float64(p.Mean) * d
		if per := time.Duration(p.Period).Seconds(); per > 0 {
			n += float64(p.Amplitude) * per / (2 * math.Pi) * (1 - math.Cos(2*math.Pi*d/per))
		}
		return n
	case ArrivalClosed:
		return -1
	}
	return 0
}

// PlannedBots is how many bots the scenario starts: its open phases'
// expected arrivals plus its closed phases' concurrency, rounded.
func (s *Scenario) PlannedBots() int {
	var n float64
	for _, p := range s.Phases {
		if e := p.ExpectedArrivals(); e >= 0 {
			n += e
		} else {
			n += float64(p.Concurrency)
		}
	}
	return int(math.Round(n))
}
