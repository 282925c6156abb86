package drop

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/rushline/rushline/simulator/pace"
	"github.com/rushline/rushline/simulator/scenario"
)

// ErrNoArrivals is returned by NewPlan for a scenario without open-model
// arrivals: a crowd follows an arrival curve, which closed phases lack.
var ErrNoArrivals = errors.New("drop: the scenario has no open-model arrival phase")

// planPoints is how many steps the plan's time grid has: enough that
// interpolating between grid points is finer than any figure reported, few
// enough that building a plan costs milliseconds.
const planPoints = 4096

// reactionTail is the share of reactions the grid may cut off at its end.
const reactionTail = 1e-5

// Plan is a drop's crowd: when each virtual user joins, counted from the
// opening, and how long it thinks once admitted. A user's join time is its
// arrival on the scenario's arrival curve plus the level's reaction, so the
// crowd joins at the times of the distribution of arrival + reaction.
// Virtual user k (0-based) joins at the quantile (k + u_k) / size of that
// distribution, u_k a uniform draw seeded per drop and index: each index's
// figures are computed alone, users join in index order, and a plan holds
// O(grid), not O(crowd). Safe for concurrent use.
type Plan struct {
	size int
	seed uint64
	// step is the grid spacing in nanoseconds; cdf[j] is the share of the
	// crowd joined by j·step (cdf[0] = 0, the last is 1), and macro[j] the
	// share of macro-like users among those joining in (j·step, (j+1)·step].
	step  float64
	cdf   []float64
	macro []float64
	beh   Behaviour
	// flow is the scenario's order steps, none for a scenario without.
	flow []string
}

// NewPlan plans a crowd of size virtual users for a scenario's arrival
// phases (their shape only: the crowd's size replaces the scenario's count)
// and a level's behaviour. seed fixes every per-user draw.
func NewPlan(sc *scenario.Scenario, level Level, size int, seed uint64) (*Plan, error) {
	beh, ok := level.Behaviour()
	if !ok {
		return nil, fmt.Errorf("drop: unknown level %q", level)
	}
	span := sc.TotalDuration()
	total := 0.0
	for _, p := range sc.Phases {
		total += pace.Expected(p, time.Duration(p.Duration))
	}
	if !(total > 0) || span <= 0 || span == math.MaxInt64 {
		return nil, ErrNoArrivals
	}
	reach := time.Millisecond
	for beh.ReactionCDF(reach) < 1-reactionTail && reach < time.Hour {
		reach *= 2
	}
	step := float64(span+reach) / planPoints
	// arrivals[i]: the share of arrivals in [i·step, (i+1)·step).
	arrivals := make([]float64, int(math.Ceil(float64(span)/step)))
	var start time.Duration
	for _, p := range sc.Phases {
		for i := range arrivals {
			a := time.Duration(float64(i)*step) - start
			b := time.Duration(float64(i+1)*step) - start
			arrivals[i] += (pace.Expected(p, b) - pace.Expected(p, a)) / total
		}
		start += time.Duration(p.Duration)
	}
	// human[m], macro[m]: the shares reacting within (m − ½)·step, the mean
	// offset from an arrival bin to a grid point m steps after it.
	human := make([]float64, planPoints+1)
	macros := make([]float64, planPoints+1)
	for m := 1; m <= planPoints; m++ {
		at := time.Duration((float64(m) - 0.5) * step)
		human[m] = (1 - beh.MacroShare) * beh.Reaction.CDF(at)
		macros[m] = beh.MacroShare * beh.MacroReaction.CDF(at)
	}
	all := make([]float64, planPoints+1)
	fromMacros := make([]float64, planPoints+1)
	for j := 1; j <= planPoints; j++ {
		for i := 0; i < j && i < len(arrivals); i++ {
			all[j] += arrivals[i] * (human[j-i] + macros[j-i])
			fromMacros[j] += arrivals[i] * macros[j-i]
		}
	}
	pl := &Plan{size: size, seed: seed, step: step, cdf: make([]float64, planPoints+1),
		macro: make([]float64, planPoints), beh: beh, flow: sc.Steps}
	end := all[planPoints]
	for j := 1; j <= planPoints; j++ {
		pl.cdf[j] = math.Max(pl.cdf[j-1], math.Min(1, all[j]/end))
		if d := all[j] - all[j-1]; d > 0 {
			pl.macro[j-1] = math.Min(1, math.Max(0, (fromMacros[j]-fromMacros[j-1])/d))
		}
	}
	pl.cdf[planPoints] = 1
	return pl, nil
}

// Size is the crowd's number of virtual users.
func (p *Plan) Size() int { return p.size }

// Flow is the order steps the crowd takes after admission, none for a
// scenario without steps.
func (p *Plan) Flow() []string { return p.flow }

// splitmix64 is a fast, well-mixed hash of one word.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// jitter is u_k: a uniform draw in [0, 1) fixed by the seed and the index.
func (p *Plan) jitter(k int) float64 {
	return float64(splitmix64(p.seed^splitmix64(uint64(k)))>>11) / (1 << 53)
}

// at is the time, in nanoseconds after the opening, by which a share q of
// the crowd has joined, and the grid step it falls in.
func (p *Plan) at(q float64) (float64, int) {
	// The first grid point past q; the step before it holds q.
	j := sort.SearchFloat64s(p.cdf, math.Nextafter(q, 2)) - 1
	j = min(max(j, 0), len(p.cdf)-2)
	lo, hi := p.cdf[j], p.cdf[j+1]
	frac := 0.0
	if hi > lo {
		frac = min(max((q-lo)/(hi-lo), 0), 1)
	}
	return (float64(j) + frac) * p.step, j
}

// Offset is when virtual user k joins, after the opening. It never
// decreases with k.
func (p *Plan) Offset(k int) time.Duration {
	t, _ := p.at((float64(k) + p.jitter(k)) / float64(p.size))
	return time.Duration(t)
}

// Due is how many virtual users have joined by elapsed after the opening:
// users 0 to Due − 1.
func (p *Plan) Due(elapsed time.Duration) int {
	if elapsed < 0 {
		return 0
	}
	return sort.Search(p.size, func(k int) bool { return p.Offset(k) > elapsed })
}

// User is one virtual user's part in the crowd.
type User struct {
	Index int
	// Offset is when it joins, after the opening.
	Offset time.Duration
	// Think is its delay from admission to the order: the sum of Steps
	// for a scenario with order steps.
	Think time.Duration
	// Steps is its time at each of the plan's order steps, in the flow's
	// order.
	Steps []time.Duration
	// Macro is set for a macro-like user.
	Macro bool
	// Seed seeds its remaining choices (the seat).
	Seed uint64
}

// User returns virtual user k's figures, the same on every call and replica.
func (p *Plan) User(k int) User {
	t, j := p.at((float64(k) + p.jitter(k)) / float64(p.size))
	seed := splitmix64(p.seed ^ splitmix64(uint64(k)^0x5eed))
	r := rand.New(rand.NewPCG(seed, uint64(k)))
	u := User{Index: k, Offset: time.Duration(t), Seed: seed, Macro: r.Float64() < p.macro[min(j, len(p.macro)-1)]}
	think, steps := p.beh.Think, p.beh.Steps
	if u.Macro {
		think, steps = p.beh.MacroThink, p.beh.MacroSteps
	}
	if len(p.flow) == 0 {
		u.Think = think.Sample(r)
		return u
	}
	u.Steps = make([]time.Duration, len(p.flow))
	for i, name := range p.flow {
		u.Steps[i] = steps[name].Sample(r)
		u.Think += u.Steps[i]
	}
	return u
}

// ReactionQuantile is the q-quantile (0..1) of the join times, after the
// opening, of the first joined users: the crowd's reaction figure once that
// many have joined. 0 when none has.
func (p *Plan) ReactionQuantile(joined int, q float64) time.Duration {
	if joined <= 0 {
		return 0
	}
	k := min(int(q*float64(joined)), joined-1)
	return p.Offset(k)
}

// Share is the share (0..1) of the crowd joined by elapsed after the
// opening, from the plan's grid: the same for every size and seed.
func (p *Plan) Share(elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	x := float64(elapsed) / p.step
	j := int(x)
	if j >= len(p.cdf)-1 {
		return 1
	}
	return p.cdf[j] + (x-float64(j))*(p.cdf[j+1]-p.cdf[j])
}
