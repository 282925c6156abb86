package pace

import (
	"math"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// TestExpectedFollowsThePacers: for every deterministic model, the pacer's
// arrivals before t number Expected(p, t), within one, at many t.
func TestExpectedFollowsThePacers(t *testing.T) {
	tests := []struct {
		name  string
		phase scenario.Phase
	}{
		{"constant", scenario.Phase{Arrival: scenario.ArrivalConstant, Rate: 300, Duration: scenario.Duration(2 * time.Second)}},
		// Rising and falling ramps have a curved H.
		{"ramp up", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 10, To: 800, Duration: scenario.Duration(3 * time.Second)}},
		{"ramp down", scenario.Phase{Arrival: scenario.ArrivalRamp, From: 900, To: 0, Duration: scenario.Duration(2 * time.Second)}},
		// A spike ends before its phase does.
		{"spike", scenario.Phase{Arrival: scenario.ArrivalSpike, Users: 4000, Over: scenario.Duration(3 * time.Second),
			Duration: scenario.Duration(5 * time.Second)}},
		{"sine", scenario.Phase{Arrival: scenario.ArrivalSine, Mean: 200, Amplitude: 150,
			Period: scenario.Duration(time.Second), Duration: scenario.Duration(2500 * time.Millisecond)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := MustSchedule(t, tc.phase, 1)
			d := time.Duration(tc.phase.Duration)
			for i := 0; i <= 50; i++ {
				at := d * time.Duration(i) / 50
				n := 0
				for _, a := range s {
					if a < at {
						n++
					}
				}
				if want := Expected(tc.phase, at); math.Abs(float64(n)-want) > 1+1e-6 {
					t.Errorf("%d arrivals before %v, Expected says %.2f", n, at, want)
				}
			}
			if got, want := Expected(tc.phase, d+time.Hour), tc.phase.ExpectedArrivals(); math.Abs(got-want) > 1e-6*want {
				t.Errorf("Expected past the end = %.3f, want the phase's ExpectedArrivals %.3f", got, want)
			}
		})
	}
}

// TestExpectedPoissonAndClosed: poisson's curve is its mean, rate·t; the
// closed model has none.
func TestExpectedPoissonAndClosed(t *testing.T) {
	p := scenario.Phase{Arrival: scenario.ArrivalPoisson, Rate: 50, Duration: scenario.Duration(20 * time.Second)}
	if got := Expected(p, 4*time.Second); math.Abs(got-200) > 1e-9 {
		t.Errorf("poisson Expected(4s) = %v, want 200", got)
	}
	c := scenario.Phase{Arrival: scenario.ArrivalClosed, Concurrency: 10, Duration: scenario.Duration(time.Minute)}
	if got := Expected(c, 30*time.Second); got != 0 {
		t.Errorf("closed Expected = %v, want 0", got)
	}
}
