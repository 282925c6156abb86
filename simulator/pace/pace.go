// Package pace turns the open-model arrival phases of a scenario into
// vegeta pacers, and pacers into arrival schedules.
//
// Every pacer here follows one convention, whatever its model: arrival k
// (counting from 0) falls at the moment the model's expected count of arrivals
// since the phase start, H(t) = ∫₀ᵗ rate, reaches k. So the first arrival is at
// the phase start, the count in any window [a, b) is within one of
// H(b) − H(a), and arrivals fall in [0, Duration): the last one strictly before
// the phase ends, so back-to-back phases never share an instant. Poisson is
// the exception by nature: its first arrival is one exponential gap in. The
// constant model runs on vegeta's ConstantPacer, whose interval is whole
// nanoseconds: at rates whose interval isn't, it drifts by up to
// rate²·0.5e-9 arrivals per second (3000/s: 11 extra an hour), still within
// one per window. Ramp, spike, sine and poisson are this package's own pacers;
// their types say why vegeta's LinearPacer and SinePacer don't fit.
//
// The pacers stop (stop=true) once the next arrival would fall at or after the
// phase Duration, or once elapsed reaches it, so vegeta's Attacker can run them
// with a zero duration. A lagging attacker catches up (wait 0) as in vegeta.
package pace

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rushline/rushline/simulator/scenario"
)

// Pacer is vegeta's Pacer plus the rate it means at a moment, for reports and tests.
//
// vegeta.Pacer already declares Rate; it is repeated here because vegeta's own
// adapter, PacerFunc, does not have it, and reports need it. Rate returns the
// model's formula in arrivals per second (not the rate rounded to whole
// nanoseconds that the pacing achieves), and 0 outside [0, Duration).
type Pacer interface {
	vegeta.Pacer
	Rate(elapsed time.Duration) float64
}

var (
	// ErrClosed is returned by For for the closed model, which has no pacer:
	// its bots are replaced as they finish, not paced.
	ErrClosed = errors.New("pace: the closed model has no pacer")
	// ErrInvalid wraps every other error of For: a phase with an unknown
	// model, no duration, or parameters its model cannot pace.
	ErrInvalid = errors.New("pace: invalid phase")
)

// MaxRate is the highest rate For accepts, in arrivals per second: pacing
// works in whole nanoseconds.
const MaxRate = 1e9

// For builds the pacer of one open-model phase (constant, ramp, spike, sine,
// poisson); the closed model has none (ErrClosed).
//
// seed is used by poisson only; the same seed gives the same schedule. Give
// each phase of a run its own seed (e.g. derived from the scenario seed and
// the phase index) so phases don't repeat each other's gaps.
//
// Requirements, beyond Duration > 0 (rates in arrivals per second, finite and
// at most MaxRate):
//   - constant, poisson: Rate > 0;
//   - ramp: From, To >= 0, not both 0;
//   - spike: Users >= 1, 0 < Over <= Duration;
//   - sine: Mean > 0, 0 <= Amplitude <= Mean, Period > 0 (the rate may touch 0).
func For(p scenario.Phase, seed int64) (Pacer, error) {
	if p.Arrival == scenario.ArrivalClosed {
		return nil, ErrClosed
	}
	d := time.Duration(p.Duration)
	if d <= 0 {
		return nil, invalid(p, "duration must be > 0, got %s", d)
	}
	switch p.Arrival {
	case scenario.ArrivalConstant:
		r := float64(p.Rate)
		if err := positiveRate(p, "rate", r); err != nil {
			return nil, err
		}
		return &constantPacer{vp: vegetaRate(r), rate: r, d: d}, nil

	case scenario.ArrivalRamp:
		from, to := float64(p.From), float64(p.To)
		if err := rate(p, "from", from); err != nil {
			return nil, err
		}
		if err := rate(p, "to", to); err != nil {
			return nil, err
		}
		if from == 0 && to == 0 {
			return nil, invalid(p, "from and to are both 0")
		}
		return &rampPacer{from: from, to: to, slope: (to - from) / d.Seconds(), d: d}, nil

	case scenario.ArrivalSpike:
		over := time.Duration(p.Over)
		switch {
		case p.Users < 1:
			return nil, invalid(p, "users must be >= 1, got %d", p.Users)
		case over <= 0:
			return nil, invalid(p, "over must be > 0, got %s", over)
		case over > d:
			return nil, invalid(p, "over (%s) must not exceed duration (%s)", over, d)
		}
		return &spikePacer{users: uint64(p.Users), over: over, d: d}, nil

	case scenario.ArrivalSine:
		mean, amp, period := float64(p.Mean), float64(p.Amplitude), time.Duration(p.Period)
		if err := positiveRate(p, "mean", mean); err != nil {
			return nil, err
		}
		if err := rate(p, "amplitude", amp); err != nil {
			return nil, err
		}
		if period <= 0 {
			return nil, invalid(p, "period must be > 0, got %s", period)
		}
		if amp > mean {
			return nil, invalid(p, "amplitude (%g/s) must not exceed mean (%g/s)", amp, mean)
		}
		return &sinePacer{mean: mean, amp: amp, omega: 2 * math.Pi / period.Seconds(), period: period, d: d}, nil

	case scenario.ArrivalPoisson:
		r := float64(p.Rate)
		if err := positiveRate(p, "rate", r); err != nil {
			return nil, err
		}
		return newPoisson(r, d, seed), nil

	case "":
		return nil, invalid(p, "no arrival model")
	default:
		return nil, invalid(p, "unknown arrival model %q", p.Arrival)
	}
}

func invalid(p scenario.Phase, format string, args ...any) error {
	name := p.Name
	if name == "" {
		name = "(unnamed)"
	}
	return fmt.Errorf("%w %s (%s): %s", ErrInvalid, name, p.Arrival, fmt.Sprintf(format, args...))
}

// rate checks a rate that may be 0.
func rate(p scenario.Phase, field string, r float64) error {
	if math.IsNaN(r) || r < 0 || r > MaxRate {
		return invalid(p, "%s must be in [0, %g]/s, got %g", field, MaxRate, r)
	}
	return nil
}

func positiveRate(p scenario.Phase, field string, r float64) error {
	if math.IsNaN(r) || r <= 0 || r > MaxRate {
		return invalid(p, "%s must be in (0, %g]/s, got %g", field, MaxRate, r)
	}
	return nil
}

// vegetaRate converts r > 0 arrivals per second to vegeta's integer Freq per
// Per. Rates that are whole per second, minute or hour (50/s, 20/m = 0.333…/s,
// 0.5/s = 30/m) are exact; any other gets Freq 1 and Per its interval rounded
// to the nanosecond, which is also the best a ConstantPacer can do.
func vegetaRate(r float64) vegeta.Rate {
	for _, per := range []time.Duration{time.Second, time.Minute, time.Hour} {
		f := r * per.Seconds()
		n := math.Round(f)
		if n >= 1 && n < 1<<53 && math.Abs(f-n) <= 1e-9*n {
			return vegeta.Rate{Freq: int(n), Per: per}
		}
	}
	return vegeta.Rate{Freq: 1, Per: durationOf(math.Max(1, math.Round(1e9/r)))}
}

// within is the rate of a model that is rate(elapsed) inside the phase and 0
// outside it.
func within(elapsed, d time.Duration) bool { return elapsed >= 0 && elapsed < d }

// clip turns the offset of the next arrival, at, into a Pace answer.
func clip(elapsed, at, d time.Duration) (time.Duration, bool) {
	if elapsed >= d || at >= d {
		return 0, true
	}
	if at <= elapsed {
		return 0, false // due or late: now
	}
	return at - elapsed, false
}

// durationOf converts a float offset in nanoseconds, saturating instead of
// overflowing.
func durationOf(ns float64) time.Duration {
	if ns >= math.MaxInt64 || math.IsNaN(ns) {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// constantPacer is vegeta's ConstantPacer, shifted one arrival earlier so
// the first is at the phase start: arrival k at k/rate.
type constantPacer struct {
	vp   vegeta.ConstantPacer
	rate float64
	d    time.Duration
}

func (p *constantPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits == 0 {
		return clip(elapsed, 0, p.d)
	}
	// vegeta's arrival hits-1 falls at (hits)·interval, which is our arrival hits.
	wait, stop := p.vp.Pace(elapsed, hits-1)
	if stop {
		return 0, true
	}
	return clip(elapsed, elapsed+max(wait, 0), p.d)
}

func (p *constantPacer) Rate(elapsed time.Duration) float64 {
	if !within(elapsed, p.d) {
		return 0
	}
	return p.rate
}

func (p *constantPacer) String() string {
	return fmt.Sprintf("Constant{%g/s for %s}", p.rate, p.d)
}

// rampPacer paces a linear ramp from `from` to `to` arrivals per second over
// d. It is not vegeta's LinearPacer, which cannot start at 0/s (a zero
// StartAt means an infinite rate), leaves a gap of two intervals after its
// first hit, and steps with the rate at the current moment, so it bursts to
// catch up on steep ramps. Here arrival k falls exactly where
// H(t) = from·t + slope·t²/2 reaches k.
type rampPacer struct {
	from, to float64 // per second
	slope    float64 // per second²
	d        time.Duration
}

func (p *rampPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	k := float64(hits)
	disc := p.from*p.from + 2*p.slope*k
	if disc < 0 { // a falling ramp that never reaches k arrivals
		return 0, true
	}
	var at float64 // seconds
	if k > 0 {
		// The root of slope/2·t² + from·t − k = 0 in its stable form, good for
		// any slope including 0 (from > 0 then) and for from = 0 (slope > 0).
		at = 2 * k / (p.from + math.Sqrt(disc))
	}
	return clip(elapsed, durationOf(at*1e9), p.d)
}

func (p *rampPacer) Rate(elapsed time.Duration) float64 {
	if !within(elapsed, p.d) {
		return 0
	}
	return p.from + p.slope*elapsed.Seconds()
}

func (p *rampPacer) String() string {
	return fmt.Sprintf("Ramp{%g/s → %g/s over %s}", p.from, p.to, p.d)
}

// spikePacer sends users arrivals spread evenly over `over` from the phase
// start (arrival k at k·over/users), then nothing for the rest of d.
type spikePacer struct {
	users uint64
	over  time.Duration
	d     time.Duration
}

func (p *spikePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.users {
		return 0, true
	}
	// hits·over/users, exactly: hits < users keeps the quotient in 64 bits.
	hi, lo := bits.Mul64(hits, uint64(p.over))
	at, _ := bits.Div64(hi, lo, p.users)
	return clip(elapsed, time.Duration(at), p.d)
}

func (p *spikePacer) Rate(elapsed time.Duration) float64 {
	if !within(elapsed, p.d) || elapsed >= p.over {
		return 0
	}
	return float64(p.users) / p.over.Seconds()
}

func (p *spikePacer) String() string {
	return fmt.Sprintf("Spike{%d users over %s, for %s}", p.users, p.over, p.d)
}

// sinePacer paces mean ± amp per second, one cycle per period, starting at
// the mean going up (vegeta's MeanUp): arrival k where
// H(t) = mean·t + amp/ω·(1 − cos ωt), ω = 2π/period, reaches k.
//
// It is not vegeta's SinePacer, whose solver (five fixed-point steps, then
// whatever it has) breaks down near a deep trough: with 200 ± 199/s every 3 s
// its waits shrink geometrically from 2.2 s on and the attack piles up
// arrivals at one instant, never passing 2.22 s; and it refuses
// amplitude = mean. Here H(t) = k is solved by Newton's method inside a
// shrinking bracket, falling back to bisection where the rate is (near) 0.
type sinePacer struct {
	mean, amp float64 // per second
	omega     float64 // radians per second
	period    time.Duration
	d         time.Duration
}

func (p *sinePacer) h(t float64) float64 {
	return p.mean*t + p.amp/p.omega*(1-math.Cos(p.omega*t))
}

func (p *sinePacer) rate(t float64) float64 { return p.mean + p.amp*math.Sin(p.omega*t) }

func (p *sinePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if elapsed >= p.d {
		return 0, true
	}
	k := float64(hits)
	e := max(elapsed, 0).Seconds()
	if p.h(e) >= k {
		return 0, false // due or late: now
	}
	// H(t) − mean·t is in [0, 2·amp/ω], so the root is in [lo, hi].
	lo := max(e, (k-2*p.amp/p.omega)/p.mean)
	hi := k / p.mean
	if lo >= p.d.Seconds() {
		return 0, true
	}
	// From the last arrival (Schedule, a punctual attacker) one Newton step
	// from e is nearly there.
	x := e + (k-p.h(e))/p.rate(e)
	for range 100 {
		if !(x > lo && x < hi) {
			x = lo + (hi-lo)/2
		}
		f := p.h(x) - k
		if f >= 0 {
			hi = x
		} else {
			lo = x
		}
		next := x - f/p.rate(x) // ±Inf at a zero rate: bisect next time
		if math.Abs(next-x) < 1e-11 || hi-lo < 1e-11 {
			x = next
			break
		}
		x = next
	}
	return clip(elapsed, durationOf(math.Round(min(max(x, lo), hi)*1e9)), p.d)
}

func (p *sinePacer) Rate(elapsed time.Duration) float64 {
	if !within(elapsed, p.d) {
		return 0
	}
	return p.mean + p.amp*math.Sin(2*math.Pi*float64(elapsed)/float64(p.period))
}

func (p *sinePacer) String() string {
	return fmt.Sprintf("Sine{%g/s ± %g/s every %s, for %s}", p.mean, p.amp, p.period, p.d)
}

// poissonPacer is a Poisson process: exponential gaps with mean 1/rate, drawn
// from a PCG source seeded by seed. Arrival k is a function of (seed, k)
// only, whatever the elapsed times given to Pace: the pacer draws gaps as hits
// grows and, should hits go back (a second Schedule or attack with the same
// pacer), starts again from the seed.
//
// Concurrency: Pace takes a mutex, so it is safe from any goroutine; vegeta's
// Attacker calls it from one goroutine with hits growing by one, which costs
// one draw per call. Rate and String are read-only.
type poissonPacer struct {
	rate float64
	d    time.Duration
	seed int64

	mu   sync.Mutex
	rng  *rand.Rand
	next uint64  // index of the arrival at `at`
	at   float64 // its offset, in nanoseconds
}

// pcgStream is the second PCG word; the phase seed is the first.
const pcgStream = 0x72757368_6c696e65 // "rushline"

func newPoisson(rate float64, d time.Duration, seed int64) *poissonPacer {
	p := &poissonPacer{rate: rate, d: d, seed: seed}
	p.reset()
	return p
}

func (p *poissonPacer) reset() {
	p.rng = rand.New(rand.NewPCG(uint64(p.seed), pcgStream))
	p.next = 0
	p.at = p.gap()
}

func (p *poissonPacer) gap() float64 { return p.rng.ExpFloat64() * 1e9 / p.rate }

func (p *poissonPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if elapsed >= p.d {
		return 0, true
	}
	p.mu.Lock()
	if hits < p.next {
		p.reset()
	}
	end := float64(p.d)
	for p.next < hits && p.at < end {
		p.at += p.gap()
		p.next++
	}
	at := p.at
	p.mu.Unlock()
	if at >= end {
		return 0, true
	}
	return clip(elapsed, time.Duration(at), p.d)
}

func (p *poissonPacer) Rate(elapsed time.Duration) float64 {
	if !within(elapsed, p.d) {
		return 0
	}
	return p.rate
}

func (p *poissonPacer) String() string {
	return fmt.Sprintf("Poisson{%g/s for %s, seed %d}", p.rate, p.d, p.seed)
}

// Schedule returns the arrival offsets of an open-model phase, from its start,
// by stepping the pacer the way vegeta's attacker does (hits count, wait) —
// no sleeping. Arrivals fall in [0, d): stepping ends when the pacer stops or
// the next arrival would be at or after d; d <= 0 gives none.
//
// The pacer must make progress (every pacer from For does); a pacer with an
// infinite rate, such as vegeta's zero ConstantPacer, never ends.
func Schedule(p Pacer, d time.Duration) []time.Duration {
	if d <= 0 {
		return nil
	}
	out := make([]time.Duration, 0, estimate(p, d))
	var t time.Duration
	for hits := uint64(0); ; hits++ {
		wait, stop := p.Pace(t, hits)
		if stop || wait >= d-t {
			return out
		}
		if wait > 0 {
			t += wait
		}
		out = append(out, t)
	}
}

// estimate is a capacity hint for Schedule: the integral of p.Rate over
// [0, d) by the midpoint rule, with some slack, kept within reason.
func estimate(p Pacer, d time.Duration) int {
	const steps = 256
	var n float64
	for i := range steps {
		mid := time.Duration((float64(i) + 0.5) * float64(d) / steps)
		if r := p.Rate(mid); r > 0 && !math.IsInf(r, 0) {
			n += r
		}
	}
	n = n*d.Seconds()/steps*1.02 + 16
	if !(n < 1<<24) { // also NaN
		return 1 << 24
	}
	return int(n)
}
