package pace

import (
	"math"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// Expected is the model's H(t): the expected number of arrivals of an
// open-model phase from its start until t, with t clipped to [0, Duration].
// A pacer from For puts arrival k where H reaches k, so it starts within
// one of Expected(p, t) arrivals in [0, t). The closed model, which has no
// arrival curve, gives 0.
func Expected(p scenario.Phase, t time.Duration) float64 {
	d := time.Duration(p.Duration)
	t = min(max(t, 0), d)
	s := t.Seconds()
	switch p.Arrival {
	case scenario.ArrivalConstant, scenario.ArrivalPoisson:
		return float64(p.Rate) * s
	case scenario.ArrivalRamp:
		from, to := float64(p.From), float64(p.To)
		return from*s + (to-from)*s*s/(2*d.Seconds())
	case scenario.ArrivalSpike:
		over := time.Duration(p.Over)
		if over <= 0 {
			return 0
		}
		return float64(p.Users) * min(t, over).Seconds() / over.Seconds()
	case scenario.ArrivalSine:
		n := float64(p.Mean) * s
		if per := time.Duration(p.Period).Seconds(); per > 0 {
			n += float64(p.Amplitude) * per / (2 * math.Pi) * (1 - math.Cos(2*math.Pi*s/per))
		}
		return n
	}
	return 0
}
