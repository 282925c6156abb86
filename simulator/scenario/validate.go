package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Defaults, applied to fields the file leaves out (scenarios/README.md lists them).
const (
	defaultSeed            = 1
	defaultWeight          = 1
	defaultPollInterval    = Duration(time.Second)
	defaultPolicy          = "capacity"
	defaultAdmitIntervalMS = 1000
	defaultActiveTTLS      = 300
	// The default capacity holds two ticks' worth of admissions, so a full
	// batch can come in while the previous one is still choosing seats.
	defaultCapacityBatches = 2
)

// Limits from API.md ("Events") and sanity bounds of the simulator.
const (
	maxSeats           = 1_000_000
	maxCapacity        = 1_000_000
	maxAdmitBatch      = 100_000
	minAdmitIntervalMS = 50
	maxAdmitIntervalMS = 3_600_000
	maxActiveTTLS      = 86_400
	maxSpikeUsers      = 10_000_000
	maxConcurrency     = 1_000_000
	minPollInterval    = Duration(50 * time.Millisecond)
	maxRetryOnTaken    = 100
)

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)
	eventIDRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	seatIDRE  = regexp.MustCompile(`^[A-Z]{1,3}-[1-9][0-9]{0,6}$`)
)

// fieldSpec says which fields a kind takes: all of required, any of optional.
type fieldSpec struct{ required, optional []string }

func (f fieldSpec) allows(name string) bool {
	for _, n := range f.required {
		if n == name {
			return true
		}
	}
	for _, n := range f.optional {
		if n == name {
			return true
		}
	}
	return false
}

func (f fieldSpec) String() string {
	all := append(append([]string(nil), f.required...), f.optional...)
	return strings.Join(all, ", ")
}

var (
	arrivalOrder = []string{ArrivalConstant, ArrivalRamp, ArrivalSpike, ArrivalSine, ArrivalPoisson, ArrivalClosed}
	arrivalSpecs = map[string]fieldSpec{
		ArrivalConstant: {required: []string{"rate", "duration"}},
		ArrivalRamp:     {required: []string{"from", "to", "duration"}},
		ArrivalSpike:    {required: []string{"users", "over"}, optional: []string{"duration"}},
		ArrivalSine:     {required: []string{"mean", "amplitude", "period", "duration"}},
		ArrivalPoisson:  {required: []string{"rate", "duration"}},
		ArrivalClosed:   {required: []string{"concurrency", "duration"}},
	}
	phaseShapeFields = []string{"duration", "rate", "from", "to", "users", "over", "mean", "amplitude", "period", "concurrency"}

	distOrder = []string{DistConstant, DistUniform, DistNormal, DistLognormal, DistExponential}
	distSpecs = map[string]fieldSpec{
		DistConstant:    {required: []string{"value"}},
		DistUniform:     {required: []string{"min", "max"}},
		DistNormal:      {required: []string{"mean", "stddev"}},
		DistLognormal:   {required: []string{"median", "p90"}},
		DistExponential: {required: []string{"mean"}},
	}
	distParamFields = []string{"value", "min", "max", "mean", "stddev", "median", "p90"}

	policies = []string{"capacity", "batch", "adaptive"}
)

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// defaults fills the fields the file left out. A field written as 0 stays 0
// (and validation may refuse it); only absent ones are filled.
func (d *decoder) defaults(s *Scenario) {
	if !d.has("seed") {
		s.Seed = defaultSeed
	}
	if c := s.Event.Create; c != nil {
		p := "event.create."
		if !d.has(p + "name") {
			c.Name = s.Name
		}
		if !d.has(p + "policy") {
			c.Policy = defaultPolicy
		}
		if !d.has(p + "admit_interval_ms") {
			c.AdmitIntervalMS = defaultAdmitIntervalMS
		}
		if !d.has(p + "active_ttl_s") {
			c.ActiveTTLS = defaultActiveTTLS
		}
		if !d.has(p+"capacity") && c.AdmitBatch >= 1 && c.AdmitBatch <= maxAdmitBatch {
			c.Capacity = min(defaultCapacityBatches*c.AdmitBatch, maxCapacity)
		}
	}
	for i := range s.Phases {
		ph, p := &s.Phases[i], index("phases", i)
		if !d.has(p + ".name") {
			ph.Name = fmt.Sprintf("phase-%d", i+1)
		}
		if ph.Arrival == ArrivalSpike && !d.has(p+".duration") {
			ph.Duration = ph.Over
		}
	}
	for i := range s.Bots {
		b, p := &s.Bots[i], index("bots", i)
		if !d.has(p + ".name") {
			b.Name = fmt.Sprintf("bot-%d", i+1)
		}
		if !d.has(p + ".weight") {
			b.Weight = defaultWeight
		}
		if !d.has(p + ".wait") {
			b.Wait = WaitSSE
		}
		if b.Wait == WaitPoll && !d.has(p+".poll_interval") {
			b.PollInterval = defaultPollInterval
		}
		if !d.has(p + ".seat") {
			b.Seat = SeatBest
		}
	}
}

// required reports whether path was given and decoded; a missing one is an error.
func (d *decoder) required(path, format string, args ...any) bool {
	if !d.has(path) {
		d.invalid(path, format, args...)
		return false
	}
	return !d.bad[path]
}

// intRange checks a given whole-number field.
func (d *decoder) intRange(path string, v, lo, hi int) {
	if d.ok(path) && (v < lo || v > hi) {
		d.invalid(path, "must be from %d to %d, got %d", lo, hi, v)
	}
}

// positive checks that a given duration or rate is above zero.
func (d *decoder) positive(path string, zero bool) {
	if d.ok(path) && zero {
		d.invalid(path, "must be > 0")
	}
}

func (d *decoder) validate(s *Scenario) {
	if d.required("name", "is required (1–40 of a-z, 0-9 and -)") && !nameRE.MatchString(s.Name) {
		d.invalid("name", "must be 1–40 of a-z, 0-9 and -, got %q", s.Name)
	}
	d.validateEvent(s)

	if d.required("phases", "is required: at least one phase") && len(s.Phases) == 0 {
		d.invalid("phases", "needs at least one phase")
	}
	phaseNames := map[string]int{}
	for i := range s.Phases {
		p := index("phases", i)
		d.validatePhase(&s.Phases[i], p)
		d.unique(phaseNames, s.Phases[i].Name, i, p, "phases")
	}

	if d.required("bots", "is required: at least one bot") && len(s.Bots) == 0 {
		d.invalid("bots", "needs at least one bot")
	}
	botNames := map[string]int{}
	for i := range s.Bots {
		p := index("bots", i)
		d.validateBot(&s.Bots[i], p)
		d.unique(botNames, s.Bots[i].Name, i, p, "bots")
	}
	if err := ValidSteps(s.Steps); err != nil && d.ok("steps") {
		d.invalid("steps", "%v", err)
	}
}

// ValidSteps checks a list of order steps: each one of StepOrder, in its
// order, once, with "seat" and a step after it (where the seat is bought).
// An empty list is valid: no steps.
func ValidSteps(steps []string) error {
	if len(steps) == 0 {
		return nil
	}
	last := -1
	for _, st := range steps {
		i := slices.Index(StepOrder, st)
		switch {
		case i < 0:
			return fmt.Errorf("unknown step %q (steps: %s)", st, strings.Join(StepOrder, ", "))
		case i <= last:
			return fmt.Errorf("step %q is out of order or twice (order: %s)", st, strings.Join(StepOrder, ", "))
		}
		last = i
	}
	if s := slices.Index(steps, "seat"); s < 0 || s == len(steps)-1 {
		return fmt.Errorf("steps need \"seat\" and a step after it (confirm or payment), where the seat is bought")
	}
	return nil
}

// unique checks that a phase or bot name is not empty and not used before.
func (d *decoder) unique(seen map[string]int, name string, i int, path, list string) {
	np := path + ".name"
	if d.bad[np] || d.bad[path] {
		return
	}
	if name == "" {
		d.invalid(np, "must not be empty")
		return
	}
	if j, dup := seen[name]; dup {
		d.invalid(np, "%q is already the name of %s", name, index(list, j))
		return
	}
	seen[name] = i
}

func (d *decoder) validateEvent(s *Scenario) {
	if !d.required("event", "is required: use: ID of an existing event, or create: {seats: …, admit_batch: …}") {
		return
	}
	hasUse, hasCreate := d.has("event.use"), d.has("event.create")
	switch {
	case hasUse && hasCreate:
		d.invalid("event", "give either use or create, not both")
	case !hasUse && !hasCreate:
		d.invalid("event", "give use: ID of an existing event, or create: {seats: …, admit_batch: …}")
	}
	if d.ok("event.use") && !eventIDRE.MatchString(s.Event.Use) {
		d.invalid("event.use", "must be an event id: 1–64 of a-z, 0-9 and -, got %q", s.Event.Use)
	}
	c := s.Event.Create
	if c == nil {
		return
	}
	const p = "event.create."
	if d.ok(p+"id") && !eventIDRE.MatchString(c.ID) {
		d.invalid(p+"id", "must be 1–64 of a-z, 0-9 and -, got %q", c.ID)
	}
	if d.ok(p+"name") && c.Name == "" {
		d.invalid(p+"name", "must not be empty")
	}
	d.required(p+"seats", "is required when creating an event (1 to %d)", maxSeats)
	d.intRange(p+"seats", c.Seats, 1, maxSeats)
	d.required(p+"admit_batch", "is required when creating an event (1 to %d)", maxAdmitBatch)
	d.intRange(p+"admit_batch", c.AdmitBatch, 1, maxAdmitBatch)
	d.intRange(p+"capacity", c.Capacity, 1, maxCapacity)
	d.intRange(p+"admit_interval_ms", c.AdmitIntervalMS, minAdmitIntervalMS, maxAdmitIntervalMS)
	d.intRange(p+"active_ttl_s", c.ActiveTTLS, 1, maxActiveTTLS)
	if d.ok(p+"policy") && !oneOf(c.Policy, policies) {
		d.invalid(p+"policy", "must be one of %s, got %q", strings.Join(policies, ", "), c.Policy)
	}
	if d.ok(p+"max_tps") && c.MaxTPS < 0 {
		d.invalid(p+"max_tps", "must be ≥ 0, got %d", c.MaxTPS)
	}
	if c.Policy == "adaptive" && !d.bad[p+"policy"] && !d.bad[p+"max_tps"] && c.MaxTPS < 1 {
		d.invalid(p+"max_tps", "must be ≥ 1 with policy adaptive")
	}
	if d.ok(p+"closes_in") && !d.bad[p+"opens_in"] && c.ClosesIn <= c.OpensIn {
		if c.OpensIn == 0 {
			d.invalid(p+"closes_in", "must be > 0")
		} else {
			d.invalid(p+"closes_in", "must be after opens_in (%s)", c.OpensIn)
		}
	}
}

func (d *decoder) validatePhase(ph *Phase, p string) {
	if d.bad[p] {
		return
	}
	if !d.required(p+".arrival", "is required: one of %s", strings.Join(arrivalOrder, ", ")) {
		return
	}
	spec, known := arrivalSpecs[ph.Arrival]
	if !known {
		d.invalid(p+".arrival", "must be one of %s, got %q", strings.Join(arrivalOrder, ", "), ph.Arrival)
		return
	}
	for _, f := range phaseShapeFields {
		if d.has(p+"."+f) && !spec.allows(f) {
			d.invalid(p+"."+f, "%s does not apply to a %s phase (it takes %s)", f, ph.Arrival, spec)
		}
	}
	for _, f := range spec.required {
		d.required(p+"."+f, "is required for a %s phase", ph.Arrival)
	}
	field := func(f string) string { return p + "." + f }
	if spec.allows("duration") {
		d.positive(field("duration"), ph.Duration == 0)
	}
	switch ph.Arrival {
	case ArrivalConstant, ArrivalPoisson:
		d.positive(field("rate"), ph.Rate == 0)
	case ArrivalRamp:
		if d.ok(field("from")) && d.ok(field("to")) && ph.From == 0 && ph.To == 0 {
			d.invalid(field("to"), "from and to can't both be 0")
		}
	case ArrivalSpike:
		d.intRange(field("users"), ph.Users, 1, maxSpikeUsers)
		d.positive(field("over"), ph.Over == 0)
		if d.ok(field("duration")) && d.ok(field("over")) && ph.Duration > 0 && ph.Duration < ph.Over {
			d.invalid(field("duration"), "must be ≥ over (%s)", ph.Over)
		}
	case ArrivalSine:
		d.positive(field("mean"), ph.Mean == 0)
		d.positive(field("period"), ph.Period == 0)
		if d.ok(field("mean")) && d.ok(field("amplitude")) && ph.Amplitude > ph.Mean {
			d.invalid(field("amplitude"), "must be ≤ mean (%s), or the rate would go below 0", ph.Mean)
		}
	case ArrivalClosed:
		d.intRange(field("concurrency"), ph.Concurrency, 1, maxConcurrency)
	}
}

func (d *decoder) validateBot(b *Bot, p string) {
	if d.bad[p] {
		return
	}
	field := func(f string) string { return p + "." + f }
	if d.ok(field("weight")) && b.Weight <= 0 {
		d.invalid(field("weight"), "must be > 0")
	}
	switch {
	case d.bad[field("wait")]:
	case !oneOf(b.Wait, []string{WaitSSE, WaitPoll}):
		d.invalid(field("wait"), "must be sse or poll, got %q", b.Wait)
	case b.Wait == WaitPoll:
		if d.ok(field("poll_interval")) && b.PollInterval < minPollInterval {
			d.invalid(field("poll_interval"), "must be ≥ %s", minPollInterval)
		}
	case d.has(field("poll_interval")):
		d.invalid(field("poll_interval"), "applies only to wait: poll")
	}
	d.validateDist(&b.Reaction, field("reaction"))
	d.validateDist(&b.Patience, field("patience"))
	d.validateDist(&b.Think, field("think"))

	seats := []string{SeatRandom, SeatBest, SeatFixed}
	switch {
	case d.bad[field("seat")]:
	case !oneOf(b.Seat, seats):
		d.invalid(field("seat"), "must be one of %s, got %q", strings.Join(seats, ", "), b.Seat)
	case b.Seat == SeatFixed:
		if d.required(field("seat_id"), "is required with seat: fixed, e.g. A-1") && !seatIDRE.MatchString(b.SeatID) {
			d.invalid(field("seat_id"), "must look like \"A-1\" (row letters, dash, seat number), got %q", b.SeatID)
		}
	case d.has(field("seat_id")):
		d.invalid(field("seat_id"), "applies only to seat: fixed")
	}
	d.intRange(field("retry_on_taken"), b.RetryOnTaken, 0, maxRetryOnTaken)
}

func (d *decoder) validateDist(ds *Dist, p string) {
	if !d.ok(p) {
		return
	}
	kinds := strings.Join(distOrder, ", ")
	if !d.required(p+".dist", "is required: one of %s", kinds) {
		return
	}
	spec, known := distSpecs[ds.Kind]
	if !known {
		d.invalid(p+".dist", "must be one of %s, got %q", kinds, ds.Kind)
		return
	}
	for _, f := range distParamFields {
		if d.has(p+"."+f) && !spec.allows(f) {
			d.invalid(p+"."+f, "%s does not apply to a %s distribution (it takes %s)", f, ds.Kind, spec)
		}
	}
	for _, f := range spec.required {
		d.required(p+"."+f, "is required for a %s distribution", ds.Kind)
	}
	field := func(f string) string { return p + "." + f }
	switch ds.Kind {
	case DistUniform:
		if d.ok(field("min")) && d.ok(field("max")) && ds.Max < ds.Min {
			d.invalid(field("max"), "must be ≥ min (%s)", ds.Min)
		}
	case DistLognormal:
		d.positive(field("median"), ds.Median == 0)
		if d.ok(field("median")) && d.ok(field("p90")) && ds.Median > 0 && ds.P90 < ds.Median {
			d.invalid(field("p90"), "must be ≥ median (%s)", ds.Median)
		}
	case DistExponential:
		d.positive(field("mean"), ds.Mean == 0)
	}
}
