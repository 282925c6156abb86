package plan

import (
	"fmt"
	"io"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// Defaults of Options.
const (
	// DefaultWindow is the active window when neither the options nor the
	// scenario give one.
	DefaultWindow = 5 * time.Minute
	// DefaultThink and DefaultThinkP90 are the median and 90th percentile of
	// the time from admission to order of a Shape's users.
	DefaultThink    = time.Minute
	DefaultThinkP90 = 3 * time.Minute
	// DefaultBenchDir is where Resolve looks for the newest bench result,
	// relative to the working directory.
	DefaultBenchDir = "bench/results"
)

// Options describe a plan as `rushline-sim plan` takes it: a crowd from a
// scenario file or a Shape, assumptions that override the scenario's, the
// shop, the sweep and the bench figures. Start from DefaultOptions; Resolve
// turns them into the scenario and the Input of Make.
type Options struct {
	// Scenario is a scenario file; empty: the crowd is Shape.
	Scenario string
	Shape    Shape
	// Think and ThinkP90 are the think time's median and p90 (ThinkDist). A
	// Shape always uses them; a scenario's bots get them when SetThink.
	Think, ThinkP90 time.Duration
	SetThink        bool
	// Abandon is the share of the line that leaves per minute (ExpPatience).
	// A Shape always uses it; a scenario's bots get it when SetAbandon.
	Abandon    float64
	SetAbandon bool
	// Limit is the orders per second the shop takes; Conversion is the share
	// of admitted users who buy.
	Limit, Conversion float64
	// Window is the active window; 0: the scenario's active_ttl_s, else
	// DefaultWindow.
	Window time.Duration
	// Seats are the seats for sale, 0 unlimited; negative: the scenario's,
	// else 0.
	Seats int
	Grid  Grid
	// Bench is a bench result file; empty: the newest in BenchDir, else
	// DefaultRates.
	Bench, BenchDir string
	// Headroom and ServerMemory are as in Input; ServerMemory must be at
	// least 1 MiB.
	Headroom     float64
	ServerMemory float64
	// Progress, when set, gets a line per finished setting.
	Progress io.Writer
}

// DefaultOptions are the options of `rushline-sim plan` without flags: a
// 1-minute spike of streaming users who think for a minute (p90 3 minutes)
// and never leave, every admitted user buys, the newest bench result.
func DefaultOptions() Options {
	return Options{Shape: Shape{Kind: ShapeSpike, Over: time.Minute, PollInterval: time.Second, Seed: 1},
		Think: DefaultThink, ThinkP90: DefaultThinkP90, Conversion: 1, Seats: -1, BenchDir: DefaultBenchDir,
		Headroom: DefaultHeadroom, ServerMemory: DefaultServerMemory}
}

// Resolve loads the scenario file (or builds the Shape's scenario), applies
// the think and abandon overrides and the event defaults, draws the crowd
// and reads the rates. The scenario is what Validate replays; the Input is
// what Make sweeps.
func (o Options) Resolve() (*scenario.Scenario, Input, error) {
	if o.ServerMemory < 1<<20 {
		return nil, Input{}, fmt.Errorf("plan: --server-memory-mb must be >= 1, got %g", o.ServerMemory/(1<<20))
	}
	sc, err := o.crowdScenario()
	if err != nil {
		return nil, Input{}, err
	}
	ev := Event{Seats: max(o.Seats, 0), Window: o.Window}
	if c := sc.Event.Create; c != nil {
		if o.Seats < 0 {
			ev.Seats = c.Seats
		}
		if o.Window == 0 {
			ev.Window = time.Duration(c.ActiveTTLS) * time.Second
		}
	}
	if ev.Window == 0 {
		ev.Window = DefaultWindow
	}
	crowd, err := CrowdOf(sc, o.Conversion)
	if err != nil {
		return nil, Input{}, err
	}
	rates, err := RatesFor(o.Bench, o.BenchDir)
	if err != nil {
		return nil, Input{}, err
	}
	return sc, Input{Name: sc.Name, Describe: Describe(sc), Crowd: crowd, Event: ev, Limit: o.Limit,
		Conversion: o.Conversion, Rates: rates, Headroom: o.Headroom, ServerMemory: o.ServerMemory, Grid: o.Grid,
		Progress: o.Progress}, nil
}

// crowdScenario is the crowd's scenario with the overrides applied.
func (o Options) crowdScenario() (*scenario.Scenario, error) {
	if o.Scenario == "" {
		s := o.Shape
		var err error
		if s.Think, err = ThinkDist(o.Think, o.ThinkP90); err != nil {
			return nil, err
		}
		if s.Patience, err = ExpPatience(o.Abandon); err != nil {
			return nil, err
		}
		return ShapeScenario("crowd", s)
	}
	sc, err := scenario.Load(o.Scenario)
	if err != nil {
		return nil, err
	}
	if o.SetThink {
		d, err := ThinkDist(o.Think, o.ThinkP90)
		if err != nil {
			return nil, err
		}
		for i := range sc.Bots {
			sc.Bots[i].Think = d
		}
	}
	if o.SetAbandon {
		d, err := ExpPatience(o.Abandon)
		if err != nil {
			return nil, err
		}
		for i := range sc.Bots {
			sc.Bots[i].Patience = d
		}
	}
	return sc, nil
}
