// Package plan is the capacity planner behind `rushline-sim plan`: it runs an
// expected crowd through a fast discrete-event model of the waiting room
// (no network), sweeps admission settings, predicts waits, line length,
// downstream load, Redis memory and the servers needed, and recommends one
// setting. Validate replays a setting live on a scaled-down crowd through
// simulator/engine and sets prediction and measurement side by side. The
// model and its assumptions are documented in docs/plan.md.
package plan

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Defaults of Input.
const (
	// DefaultHeadroom is the share of a server's measured rate a plan uses.
	DefaultHeadroom = 0.7
	// DefaultServerMemory is the memory a server may spend on SSE streams.
	DefaultServerMemory = 2 << 30
)

// Input is what a plan is made of.
type Input struct {
	// Name and Crowd describe the expected crowd; Users is from Crowd.
	Name, Describe string
	Crowd          *Crowd
	Event          Event
	// Limit is the orders per second the shop behind the queue can take.
	Limit float64
	// Conversion is the share of admitted users who buy (already in Crowd;
	// kept for the report and the default grid).
	Conversion float64
	Rates      Rates
	// Headroom is the share of a server's measured rates to plan with
	// (DefaultHeadroom when 0); ServerMemory is the bytes a server may spend
	// on SSE streams (DefaultServerMemory when 0).
	Headroom     float64
	ServerMemory float64
	Grid         Grid
	// Progress, when set, gets a line per finished setting.
	Progress io.Writer
}

// Grid is the sweep: every policy × interval × batch × capacity. Empty lists
// get defaults derived from the limit (see DefaultGrid).
type Grid struct {
	Policies   []string
	Intervals  []time.Duration
	Batches    []int
	Capacities []int
}

// Result is one setting's prediction.
type Result struct {
	*Outcome
	// Within is true when orders never exceed the limit in any second.
	Within bool
	// RedisBytes is (peak waiting + peak active) × bytes per user.
	RedisBytes float64
	// JoinLoad, StatusLoad and StreamLoad are the servers each need alone
	// (fractions); Servers is max(1, ⌈JoinLoad + StatusLoad⌉, ⌈StreamLoad⌉).
	JoinLoad, StatusLoad, StreamLoad float64
	Servers                          int
	// AdmissionOver is true when the setting promotes faster than one Redis
	// can (Rates.PromotionsPerS).
	AdmissionOver bool
}

// Plan is a finished sweep, best setting first.
type Plan struct {
	Input
	Users int
	// PeakJoins is the most joins in one second; Joins the joins per second.
	PeakJoins int
	Joins     []int32
	Results   []Result
	// Validation, when set, is a live run of the best setting; the Markdown
	// and HTML reports show it.
	Validation *Validation
}

// ErrNoSettings is returned when the grid is empty.
var ErrNoSettings = errors.New("plan: the sweep has no settings")

// Best is the recommended setting.
func (p *Plan) Best() *Result { return &p.Results[0] }

// DefaultGrid derives the sweep from the input: intervals 250ms, 500ms, 1s;
// capacities of 0.5, 0.75, 1 and 1.5 × limit ÷ conversion × the mean time a slot
// is held; policies capacity, batch and adaptive (max_tps = the limit).
func DefaultGrid(in *Input) Grid {
	g := in.Grid
	if len(g.Policies) == 0 {
		g.Policies = []string{PolicyCapacity, PolicyBatch, PolicyAdaptive}
	}
	if len(g.Intervals) == 0 {
		g.Intervals = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	}
	rate := in.Limit
	if in.Conversion > 0 {
		rate /= in.Conversion
	}
	if len(g.Capacities) == 0 {
		hold := meanHold(in.Crowd, in.Event.Window.Seconds())
		for _, f := range []float64{0.5, 0.75, 1, 1.5} {
			g.Capacities = appendNew(g.Capacities, clamp(int(math.Round(rate*hold*f)), 1, 1_000_000))
		}
	}
	return g
}

// settings lists the grid's settings. Without batches, each interval gets
// the batches of 0.5–1.5 × limit ÷ conversion admissions per second.
func (in *Input) settings(g Grid) []Setting {
	rate := in.Limit
	if in.Conversion > 0 {
		rate /= in.Conversion
	}
	var out []Setting
	for _, pol := range g.Policies {
		for _, iv := range g.Intervals {
			batches := g.Batches
			if len(batches) == 0 {
				for _, f := range []float64{0.5, 0.75, 1, 1.25, 1.5} {
					batches = appendNew(batches, clamp(int(math.Round(rate*f*iv.Seconds())), 1, 100_000))
				}
			}
			for _, b := range batches {
				switch pol {
				case PolicyBatch:
					out = append(out, Setting{Policy: pol, Batch: b, Capacity: min(2*b, 1_000_000), Interval: iv})
				case PolicyAdaptive:
					out = append(out, Setting{Policy: pol, Batch: b, Capacity: g.Capacities[len(g.Capacities)-1],
						Interval: iv, MaxTPS: max(1, int(math.Ceil(in.Limit)))})
				default:
					for _, c := range g.Capacities {
						out = append(out, Setting{Policy: pol, Batch: b, Capacity: c, Interval: iv})
					}
				}
			}
		}
	}
	return out
}

// Check refuses an input the planner cannot use.
func (in *Input) Check() error {
	switch {
	case in.Crowd == nil || len(in.Crowd.Users) == 0:
		return errors.New("plan: no crowd")
	case !(in.Limit > 0):
		return fmt.Errorf("plan: --limit (orders/s the shop takes) must be > 0, got %g", in.Limit)
	case in.Event.Window < time.Second:
		return fmt.Errorf("plan: --window must be >= 1s, got %s", in.Event.Window)
	case in.Event.Seats < 0:
		return fmt.Errorf("plan: --seats must be >= 0, got %d", in.Event.Seats)
	case in.Headroom < 0 || in.Headroom > 1:
		return fmt.Errorf("plan: --headroom must be 0–1, got %g", in.Headroom)
	}
	for _, p := range in.Grid.Policies {
		if p != PolicyCapacity && p != PolicyBatch && p != PolicyAdaptive {
			return fmt.Errorf("plan: --policies: unknown policy %q (capacity, batch, adaptive)", p)
		}
	}
	return nil
}

// Make runs the sweep and ranks the settings: those whose orders never
// exceed the limit first, fastest drain first (then lower p95 wait, fewer
// actives); then the others by how little they exceed it.
func Make(in Input) (*Plan, error) {
	if in.Headroom == 0 {
		in.Headroom = DefaultHeadroom
	}
	if in.ServerMemory == 0 {
		in.ServerMemory = DefaultServerMemory
	}
	if err := in.Check(); err != nil {
		return nil, err
	}
	in.Grid = DefaultGrid(&in)
	settings := in.settings(in.Grid)
	for _, s := range settings {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("plan: setting %s: %w", s, err)
		}
	}
	if len(settings) == 0 {
		return nil, ErrNoSettings
	}
	p := &Plan{Input: in, Users: len(in.Crowd.Users)}
	p.Joins = joinsPerSecond(in.Crowd)
	for _, n := range p.Joins {
		p.PeakJoins = max(p.PeakJoins, int(n))
	}
	p.Results = make([]Result, len(settings))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
		next = make(chan int)
	)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				p.Results[i] = p.result(Simulate(in.Crowd, settings[i], in.Event))
				if in.Progress != nil {
					mu.Lock()
					done++
					fmt.Fprintf(in.Progress, "\rplan: %d/%d settings", done, len(settings))
					mu.Unlock()
				}
			}
		})
	}
	for i := range settings {
		next <- i
	}
	close(next)
	wg.Wait()
	if in.Progress != nil {
		fmt.Fprintln(in.Progress)
	}
	slices.SortStableFunc(p.Results, rank)
	return p, nil
}

func (p *Plan) result(o *Outcome) Result {
	r := Result{Outcome: o, Within: float64(o.OrdersPeak) <= p.Limit}
	o.OverLimit = o.overLimit(p.Limit)
	rt := p.Rates
	r.RedisBytes = float64(o.PeakWaiting+o.PeakActive) * rt.RedisBytesPerWaiting
	r.JoinLoad = float64(p.PeakJoins) / (rt.JoinRPS * p.Headroom)
	r.StatusLoad = o.PeakStatusRPS / (rt.StatusRPS * p.Headroom)
	r.StreamLoad = float64(o.PeakStreams) * rt.StreamBytes / p.ServerMemory
	r.Servers = max(1, int(math.Ceil(r.JoinLoad+r.StatusLoad-1e-9)), int(math.Ceil(r.StreamLoad-1e-9)))
	r.AdmissionOver = float64(o.Setting.Batch)/o.Setting.Interval.Seconds() > rt.PromotionsPerS
	return r
}

func rank(a, b Result) int {
	if a.Within != b.Within {
		if a.Within {
			return -1
		}
		return 1
	}
	if !a.Within {
		if c := cmp.Compare(a.OrdersPeak, b.OrdersPeak); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(a.Drain, b.Drain), cmp.Compare(a.Wait.P95, b.Wait.P95),
		cmp.Compare(a.PeakActive, b.PeakActive), cmp.Compare(a.Setting.Interval, b.Setting.Interval),
		cmp.Compare(a.Setting.Batch, b.Setting.Batch), cmp.Compare(a.Setting.Capacity, b.Setting.Capacity),
		cmp.Compare(a.Setting.Policy, b.Setting.Policy))
}

// joinsPerSecond counts the crowd's joins per second.
func joinsPerSecond(c *Crowd) []int32 {
	var out []int32
	for _, u := range c.Users {
		s := max(int(u.Join), 0)
		for len(out) <= s {
			out = append(out, 0)
		}
		out[s]++
	}
	return out
}

// meanHold is the mean time an admitted user holds a slot.
func meanHold(c *Crowd, window float64) float64 {
	sum := 0.0
	for _, u := range c.Users {
		if u.Buys {
			sum += min(u.Think, window)
		} else {
			sum += window
		}
	}
	return max(sum/float64(len(c.Users)), 0.05)
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

func appendNew(s []int, v int) []int {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
