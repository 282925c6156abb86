package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// run is one run: its shards, and the shard whose event stats count.
type run struct {
	shards []int         // indexes into the sorted raws, in shard order
	stats  int           // the shard whose Samples and Final are used
	bought map[int]int64 // seats bought by bots, by shard
	opens  time.Time
	info   Run
}

// outcomeOrder is how outcomes are listed; others follow by name.
var outcomeOrder = []string{OutcomeBought, OutcomeSoldOut, OutcomeOutbid, OutcomeExpired, OutcomeAbandoned, OutcomeFailed, OutcomeCancelled}

// stepOrder is how steps are listed; others follow by name.
var stepOrder = []string{StepJoin, StepStatus, StepStream, StepSeats, StepOrder, StepLeave}

func build(in []Raw, thresholds []scenario.Threshold) (*Report, error) {
	for i := range in {
		if in[i].Agg == nil {
			a := aggregate(&in[i])
			in[i].Agg = &a
		}
	}
	raws, runs, err := groupRuns(in)
	if err != nil {
		return nil, err
	}
	r := &Report{Schema: Schema, Raw: raws, Runs: make([]Run, len(runs)), Shards: []string{}}
	for g := range runs {
		r.Runs[g] = runs[g].info
	}
	if len(runs) > 0 {
		first := runs[0].info
		r.Scenario, r.Seed, r.Target, r.Event, r.Shards = first.Scenario, first.Seed, first.Target, first.Event, first.Shards
		for _, ru := range runs {
			if r.Started.IsZero() || ru.info.Started.Before(r.Started) && !ru.info.Started.IsZero() {
				r.Started = ru.info.Started
			}
			if ru.info.Finished.After(r.Finished) {
				r.Finished = ru.info.Finished
			}
		}
		if !r.Started.IsZero() && r.Finished.After(r.Started) {
			r.Duration = r.Finished.Sub(r.Started)
		}
	}

	// Every shard's seconds count from its own opening; a run's from the
	// earliest of its shards'; different runs each from their own.
	var all Aggregates
	fifo := make([][][2]int64, len(runs))
	for g, ru := range runs {
		for _, i := range ru.shards {
			a := raws[i].Agg
			all.merge(a, secondOf(openingOf(&raws[i]), ru.opens))
			fifo[g] = append(fifo[g], a.FIFO...)
		}
	}
	all.FIFO = nil

	s := &r.Summary
	s.Bots = botsOf(&all)
	s.Steps, s.Errors = stepsOf(&all)
	for _, st := range s.Steps {
		s.Requests += int64(st.Requests)
		s.Unexpected += st.Unexpected
	}
	for _, sec := range all.Seconds {
		s.Orders += sec.Orders
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Unexpected) / float64(s.Requests)
	}
	waiting(s, &all, runs, fifo)
	s.Generator = generatorOf(&all, raws)
	if r.Timeline, err = timeline(&all, raws, runs); err != nil {
		return nil, err
	}
	r.WaitHistogram = histogram(&all.Wait)
	s.Metrics = metricsOf(s)
	r.Thresholds = make([]ThresholdResult, 0, len(thresholds))
	units := map[string]string{}
	for _, m := range scenario.Metrics() {
		units[m.Name] = m.Unit.String()
	}
	for _, t := range thresholds {
		v, ok := s.Metrics[t.Metric]
		pass := ok && t.Check(v)
		if !ok {
			v = 0
		}
		rule := t.Source
		if rule == "" {
			rule = t.Metric + " " + t.Op + " " + strconv.FormatFloat(t.Value, 'g', -1, 64)
		}
		r.Thresholds = append(r.Thresholds, ThresholdResult{
			Rule: rule, Metric: t.Metric, Op: t.Op, Limit: t.Value, Unit: units[t.Metric],
			Value: v, Measured: ok, Pass: pass,
		})
	}
	r.Verdict = VerdictPass
	if !r.Passed() {
		r.Verdict = VerdictFail
	}
	return r, nil
}

// openingOf is when a raw run's seconds count from.
func openingOf(raw *Raw) time.Time {
	if raw.OpensAt.IsZero() {
		return raw.Started
	}
	return raw.OpensAt
}

// groupRuns sorts the raws (runs by start, shards by index) and groups the
// shards of each run. See Merge for the rule.
func groupRuns(in []Raw) ([]Raw, []run, error) {
	type keyed struct {
		raw   Raw
		i, n  int
		runID string
	}
	ks := make([]keyed, len(in))
	for j, raw := range in {
		i, n, err := ParseShard(raw.Shard)
		if err != nil {
			return nil, nil, err
		}
		id := fmt.Sprintf("%q %d %q %q", raw.Scenario, raw.Seed, raw.Target, raw.EventID)
		if n > 0 {
			id += " /" + strconv.Itoa(n)
		} else {
			id += " @" + raw.Started.UTC().Format(time.RFC3339Nano)
		}
		ks[j] = keyed{raw, i, n, id}
	}
	// Runs in order of their earliest start; shards by index.
	start := map[string]time.Time{}
	for _, k := range ks {
		if t, ok := start[k.runID]; !ok || k.raw.Started.Before(t) {
			start[k.runID] = k.raw.Started
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := start[a.runID].Compare(start[b.runID]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.runID, b.runID); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	raws := make([]Raw, len(ks))
	var runs []run
	for j, k := range ks {
		raws[j] = k.raw
		if j > 0 && ks[j-1].runID == k.runID {
			if k.n == 0 || ks[j-1].i == k.i {
				what := "run"
				if k.n > 0 {
					what = "shard " + k.raw.Shard + " of run"
				}
				return nil, nil, fmt.Errorf("report: %s %s (event %s, started %s) appears twice",
					what, k.raw.Scenario, k.raw.EventID, k.raw.Started.UTC().Format(time.RFC3339))
			}
			runs[len(runs)-1].shards = append(runs[len(runs)-1].shards, j)
			continue
		}
		runs = append(runs, run{shards: []int{j}})
	}
	for g := range runs {
		ru := &runs[g]
		first := &raws[ru.shards[0]]
		ru.stats = ru.shards[0]
		ru.bought = map[int]int64{}
		ru.info = Run{
			Scenario: first.Scenario, Seed: first.Seed, Target: first.Target, Event: first.EventID,
			Shards: []string{},
		}
		for _, i := range ru.shards {
			raw := &raws[i]
			ru.bought[i] = raw.Agg.Bought
			if raw.Shard != "" {
				ru.info.Shards = append(ru.info.Shards, raw.Shard)
			}
			if raw.Finished.After(raws[ru.stats].Finished) {
				ru.stats = i
			}
			if !raw.OpensAt.IsZero() && (ru.opens.IsZero() || raw.OpensAt.Before(ru.opens)) {
				ru.opens = raw.OpensAt
			}
			if !raw.Started.IsZero() && (ru.info.Started.IsZero() || raw.Started.Before(ru.info.Started)) {
				ru.info.Started = raw.Started
			}
			if raw.Finished.After(ru.info.Finished) {
				ru.info.Finished = raw.Finished
			}
			for _, by := range raw.Agg.Outcomes {
				for _, n := range by {
					ru.info.Bots += n
				}
			}
			for _, st := range raw.Agg.Steps {
				ru.info.Requests += st.Requests
			}
		}
		if ru.opens.IsZero() {
			ru.opens = ru.info.Started
		}

		ru.info.OpensAt = ru.opens
		ru.info.Final = raws[ru.stats].Final
		if ru.opens.IsZero() && (ru.info.Bots > 0 || ru.info.Requests > 0) {
			return nil, nil, fmt.Errorf("report: run %s (event %s) has neither opens_at nor started", first.Scenario, first.EventID)
		}
	}
	return raws, runs, nil
}

func outcomeName(o string) string {
	if o == "" {
		return "unknown"
	}
	return o
}

func botsOf(a *Aggregates) Bots {
	b := Bots{Outcomes: map[string]int64{}, Behaviors: []BehaviorBots{}}
	for beh, by := range a.Outcomes {
		bb := BehaviorBots{Behavior: beh, Outcomes: map[string]int64{}}
		for o, n := range by {
			bb.Total += n
			bb.Outcomes[o] += n
			b.Total += n
			b.Outcomes[o] += n
		}
		b.Behaviors = append(b.Behaviors, bb)
	}
	slices.SortFunc(b.Behaviors, func(x, y BehaviorBots) int { return cmp.Compare(x.Behavior, y.Behavior) })
	return b
}

// stepsOf summarises each step, and lists every error kind, most frequent first.
func stepsOf(a *Aggregates) ([]Step, []ErrorKind) {
	steps := make([]Step, 0, len(a.Steps))
	errs := []ErrorKind{}
	for name, sa := range a.Steps {
		st := Step{Step: name, Requests: uint64(sa.Requests), Unexpected: sa.Unexpected,
			Latency: sa.Latency.Dist(), ClientWait: sa.Wait.Dist(),
			BytesIn: uint64(sa.BytesIn), BytesOut: uint64(sa.BytesOut),
			StatusCodes: map[string]int64{}, Errors: map[string]int64{}}
		maps.Copy(st.StatusCodes, sa.Codes)
		if sa.Requests > 0 {
			st.Success = float64(sa.Success) / float64(sa.Requests)
		}
		if span := sa.Last.Sub(sa.First).Seconds(); span > 0 {
			st.Rate = float64(sa.Requests) / span
		}
		if span := sa.LastDone.Sub(sa.First).Seconds(); span > 0 {
			st.Throughput = float64(sa.Success) / span
		}
		for _, e := range sa.Errors {
			st.Errors[e.Kind] += e.Count
			errs = append(errs, e)
		}
		steps = append(steps, st)
	}
	slices.SortFunc(steps, func(a, b Step) int {
		ia, ib := rankOf(stepOrder, a.Step), rankOf(stepOrder, b.Step)
		if ia != ib {
			return cmp.Compare(ia, ib)
		}
		return cmp.Compare(a.Step, b.Step)
	})
	slices.SortFunc(errs, func(x, y ErrorKind) int {
		if x.Count != y.Count {
			return cmp.Compare(y.Count, x.Count)
		}
		if c := cmp.Compare(rankOf(stepOrder, x.Step), rankOf(stepOrder, y.Step)); c != 0 {
			return c
		}
		return cmp.Compare(x.Step+" "+x.Kind, y.Step+" "+y.Kind)
	})
	return steps, errs
}

func rankOf(order []string, s string) int {
	if i := slices.Index(order, s); i >= 0 {
		return i
	}
	return len(order)
}

// waiting computes the waiting-room figures: admissions, seats, the
// promotion, wait and reaction distributions, and FIFO order per run.
func waiting(s *Summary, a *Aggregates, runs []run, fifo [][][2]int64) {
	s.Joined, s.Admitted, s.Abandoned = a.Joined, a.Admitted, a.Abandoned
	for g := range runs {
		var virtual int64
		for _, i := range runs[g].shards {
			virtual += runs[g].bought[i]
		}
		s.SeatsVirtual += virtual
		final := runs[g].info.Final
		s.SeatsActual += max(final.Sold-virtual, 0)
		s.Event.Waiting += final.Waiting
		s.Event.Active += final.Active
		s.Event.AdmittedTotal += final.AdmittedTotal
		s.Event.Sold += final.Sold
		s.Event.SeatsLeft += final.SeatsLeft
	}
	if s.Joined > 0 {
		s.AbandonRate = float64(s.Abandoned) / float64(s.Joined)
	}
	s.Promotion = a.Promotion.Dist()
	s.PromotionPoll = a.PromotionPoll.Dist()
	s.Wait = a.Wait.Dist()
	s.Reaction = a.Reaction.Dist()

	var sum fifoCounts
	for g := range fifo {
		ps := make([]fifoPair, len(fifo[g]))
		for i, p := range fifo[g] {
			ps[i] = fifoPair{p[0], p[1]}
		}
		c := countFIFO(ps)
		sum.n += c.n
		sum.pairs += c.pairs
		sum.tiesX += c.tiesX
		sum.tiesY += c.tiesY
		sum.tiesXY += c.tiesXY
		sum.inversions += c.inversions
	}
	s.FIFO = FIFO{Admitted: sum.n, Pairs: sum.pairs, Inversions: sum.inversions}
	if tau, ok := sum.tauB(); ok {
		s.FIFO.KendallTau = &tau
	}
}

// generatorOf says how the generator kept to its schedule: the largest
// tolerance any shard was given holds for the whole.
func generatorOf(a *Aggregates, raws []Raw) GeneratorSummary {
	g := GeneratorSummary{Planned: a.Planned, Arrived: a.Lag.Count, Lag: a.Lag.Dist(), HeldBack: a.HeldBack,
		LateStarts: []LateStart{}}
	for i := range raws {
		gen := &raws[i].Generator
		g.Tolerance = max(g.Tolerance, gen.LagTolerance)
		if gen.StartLate > 0 {
			g.LateStarts = append(g.LateStarts, LateStart{Shard: orDash(raws[i].Shard), Late: gen.StartLate})
		}
	}
	if g.Tolerance == 0 {
		g.Tolerance = DefaultLagTolerance
	}
	g.Late = a.Lag.CountAbove(g.Tolerance)
	g.Saturated = a.Lag.Count > 0 && g.Lag.P99 > g.Tolerance || g.Arrived < g.Planned
	return g
}

// metricsOf gives every threshold metric that was measured.
func metricsOf(s *Summary) map[string]float64 {
	m := map[string]float64{}
	dist := func(prefix string, d Dist, ps ...string) {
		if d.Count == 0 {
			return
		}
		for _, p := range ps {
			m[prefix+"_"+p] = d.At(p).Seconds()
		}
	}
	step := func(name string) Dist {
		for _, st := range s.Steps {
			if st.Step == name {
				return st.Latency
			}
		}
		return Dist{}
	}
	dist("promotion", s.Promotion, "p50", "p90", "p95", "p99", "max")
	dist("wait", s.Wait, "p50", "p95", "p99", "max")
	dist("rank", step(StepStatus), "p50", "p95", "p99")
	dist("join", step(StepJoin), "p50", "p95", "p99")
	dist("order", step(StepOrder), "p99")
	if s.Requests > 0 {
		m["error_rate"] = s.ErrorRate
	}
	if g := s.Generator; g.Lag.Count > 0 {
		m["arrival_lag_p99"] = g.Lag.P99.Seconds()
		m["arrival_lag_max"] = g.Lag.Max.Seconds()
		m["late_arrivals"] = float64(g.Late) / float64(g.Lag.Count)
	}
	m["fifo_inversions"] = float64(s.FIFO.Inversions)
	if s.FIFO.KendallTau != nil {
		m["kendall_tau"] = *s.FIFO.KendallTau
	}
	if s.Joined > 0 {
		m["abandon_rate"] = s.AbandonRate
	}
	m["seats_virtual"] = float64(s.SeatsVirtual)
	m["seats_actual"] = float64(s.SeatsActual)
	m["orders"] = float64(s.Orders)
	m["admitted"] = float64(s.Admitted)
	return m
}

// timeline lays the merged per-second counts out contiguously; queue figures
// are each run's last sample in the second, added up over runs.
func timeline(a *Aggregates, raws []Raw, runs []run) ([]Second, error) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range a.Seconds {
		lo, hi = min(lo, s.T), max(hi, s.T)
	}
	for g := range runs {
		for _, sm := range raws[runs[g].stats].Samples {
			k := secondOf(sm.At, runs[g].opens)
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	if lo > hi {
		return []Second{}, nil
	}
	if hi-lo >= maxTimeline {
		return nil, fmt.Errorf("report: the run spans %d s; the timeline holds at most %d", hi-lo+1, maxTimeline)
	}
	out := make([]Second, hi-lo+1)
	for k := range out {
		out[k].T = lo + int64(k)
	}
	for _, s := range a.Seconds {
		o := &out[s.T-lo]
		o.Planned, o.Arrivals, o.Joins, o.Promotions, o.Orders = s.Planned, s.Arrivals, s.Joins, s.Promotions, s.Orders
	}
	for g := range runs {
		last := make([]*Sample, len(out))
		samples := raws[runs[g].stats].Samples
		for j := range samples {
			k := secondOf(samples[j].At, runs[g].opens) - lo
			if l := last[k]; l == nil || !samples[j].At.Before(l.At) {
				last[k] = &samples[j]
			}
		}
		for k, l := range last {
			if l == nil {
				continue
			}
			if out[k].Waiting == nil {
				out[k].Waiting, out[k].Active = new(int64), new(int64)
			}
			*out[k].Waiting += l.Waiting
			*out[k].Active += l.Active
		}
	}
	return out, nil
}

// secondOf is the whole second since base that t falls in (floor).
func secondOf(t, base time.Time) int64 {
	d := t.Sub(base)
	k := int64(d / time.Second)
	if d < 0 && d%time.Second != 0 {
		k--
	}
	return k
}
