package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rushline/rushline/simulator/scenario"
)

// run is one run: its shards, and the shard whose event stats count.
type run struct {
	shards []int // indexes into the sorted raws, in shard order
	stats  int   // the shard whose Samples and Final are used
	opens  time.Time
	info   Run
}

// outcomeOrder is how outcomes are listed; others follow by name.
var outcomeOrder = []string{OutcomeBought, OutcomeSoldOut, OutcomeOutbid, OutcomeExpired, OutcomeAbandoned, OutcomeFailed, OutcomeCancelled}

// stepOrder is how steps are listed; others follow by name.
var stepOrder = []string{StepJoin, StepStatus, StepStream, StepSeats, StepOrder, StepLeave}

func build(in []Raw, thresholds []scenario.Threshold) (*Report, error) {
	raws, runs, err := groupRuns(in)
	if err != nil {
		return nil, err
	}
	runOf := make([]int, len(raws))
	for g, ru := range runs {
		for _, i := range ru.shards {
			runOf[i] = g
		}
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

	s := &r.Summary
	s.Bots = botsOf(raws)
	r.feedSteps(raws)
	waiting(s, raws, runs, runOf)
	if r.Timeline, err = timeline(raws, runs, runOf); err != nil {
		return nil, err
	}
	r.WaitHistogram = histogram(waits(raws))
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
		ru.info = Run{
			Scenario: first.Scenario, Seed: first.Seed, Target: first.Target, Event: first.EventID,
			Shards: []string{},
		}
		for _, i := range ru.shards {
			raw := &raws[i]
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
			ru.info.Bots += int64(len(raw.Bots))
			ru.info.Requests += int64(len(raw.Requests))
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

func botsOf(raws []Raw) Bots {
	b := Bots{Outcomes: map[string]int64{}, Behaviors: []BehaviorBots{}}
	idx := map[string]int{}
	for i := range raws {
		for j := range raws[i].Bots {
			bot := &raws[i].Bots[j]
			o := outcomeName(bot.Outcome)
			b.Total++
			b.Outcomes[o]++
			k, ok := idx[bot.Behavior]
			if !ok {
				k = len(b.Behaviors)
				idx[bot.Behavior] = k
				b.Behaviors = append(b.Behaviors, BehaviorBots{Behavior: bot.Behavior, Outcomes: map[string]int64{}})
			}
			b.Behaviors[k].Total++
			b.Behaviors[k].Outcomes[o]++
		}
	}
	slices.SortFunc(b.Behaviors, func(x, y BehaviorBots) int { return cmp.Compare(x.Behavior, y.Behavior) })
	return b
}

// feedSteps feeds every request to its step's vegeta Metrics, in canonical order.
func (r *Report) feedSteps(raws []Raw) {
	s := &r.Summary
	r.steps = map[string]*vegeta.Metrics{}
	byStep := map[string]*Step{}
	codes := map[string]map[int]int64{} // counted as ints, named once at the end
	var res vegeta.Result               // Metrics.Add keeps no reference to it
	for i, ref := range requestOrder(raws) {
		q := &raws[ref.raw].Requests[ref.req]
		m := r.steps[q.Step]
		st := byStep[q.Step]
		if m == nil {
			m = &vegeta.Metrics{}
			r.steps[q.Step] = m
			st = &Step{Step: q.Step, StatusCodes: map[string]int64{}, Errors: map[string]int64{}}
			byStep[q.Step] = st
			codes[q.Step] = map[int]int64{}
		}
		setResult(&res, q, uint64(i))
		m.Add(&res)
		codes[q.Step][int(res.Code)]++
		if res.Error != "" {
			st.Errors[res.Error]++
		}
		s.Requests++
		if unexpected(q) {
			st.Unexpected++
			s.Unexpected++
		}
		if q.Step == StepOrder && q.Code >= 200 && q.Code < 300 && q.Error == "" {
			s.Orders++
		}
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Unexpected) / float64(s.Requests)
	}
	s.Steps = make([]Step, 0, len(byStep))
	for name, st := range byStep {
		m := r.steps[name]
		m.Close()
		for code, n := range codes[name] {
			st.StatusCodes[strconv.Itoa(code)] = n
		}
		l := m.Latencies
		st.Requests = m.Requests
		st.Rate, st.Throughput, st.Success = finite(m.Rate), finite(m.Throughput), finite(m.Success)
		st.BytesIn, st.BytesOut = m.BytesIn.Total, m.BytesOut.Total
		st.Latency = Dist{
			Count: int64(m.Requests), Min: l.Min, Mean: l.Mean,
			P50: l.P50, P90: l.P90, P95: l.P95, P99: l.P99, Max: l.Max,
			Curve: make([]Quantile, len(CurveQuantiles)),
		}
		for k, q := range CurveQuantiles {
			v := l.Min
			switch {
			case q == 1:
				v = l.Max
			case q > 0:
				v = l.Quantile(q)
			}
			st.Latency.Curve[k] = Quantile{Q: q, Value: v}
		}
		s.Steps = append(s.Steps, *st)
	}
	slices.SortFunc(s.Steps, func(a, b Step) int {
		ia, ib := rankOf(stepOrder, a.Step), rankOf(stepOrder, b.Step)
		if ia != ib {
			return cmp.Compare(ia, ib)
		}
		return cmp.Compare(a.Step, b.Step)
	})
}

func rankOf(order []string, s string) int {
	if i := slices.Index(order, s); i >= 0 {
		return i
	}
	return len(order)
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// waiting computes the waiting-room figures: admissions, seats, the
// promotion, wait and reaction distributions, and FIFO order per run.
func waiting(s *Summary, raws []Raw, runs []run, runOf []int) {
	var promo, promoPoll, reaction []time.Duration
	pairs := make([][]fifoPair, len(runs))
	virtual := make([]int64, len(runs))
	for i := range raws {
		g := runOf[i]
		for j := range raws[i].Bots {
			b := &raws[i].Bots[j]
			if !b.JoinedAt.IsZero() {
				s.Joined++
			}
			if !b.AdmittedAt.IsZero() || !b.AdmittedSeen.IsZero() {
				s.Admitted++
			}
			// Promotion latency is push delivery: bots that waited on a
			// stream. Polling bots learn at their next poll (reported apart);
			// bots admitted on join never waited.
			if !b.AdmittedAt.IsZero() && !b.AdmittedSeen.IsZero() && b.PositionAtJoin > 0 {
				d := max(b.AdmittedSeen.Sub(b.AdmittedAt), 0)
				if b.Wait == "poll" {
					promoPoll = append(promoPoll, d)
				} else {
					promo = append(promo, d)
				}
			}
			if !b.ArrivedAt.IsZero() {
				reaction = append(reaction, max(b.Reaction, 0))
			}
			switch b.Outcome {
			case OutcomeBought:
				virtual[g]++
			case OutcomeAbandoned:
				s.Abandoned++
			}
			if b.Seq > 0 && b.AdmissionNo > 0 {
				pairs[g] = append(pairs[g], fifoPair{b.Seq, b.AdmissionNo})
			}
		}
	}
	for g := range runs {
		s.SeatsVirtual += virtual[g]
		final := runs[g].info.Final
		s.SeatsActual += max(final.Sold-virtual[g], 0)
		s.Event.Waiting += final.Waiting
		s.Event.Active += final.Active
		s.Event.AdmittedTotal += final.AdmittedTotal
		s.Event.Sold += final.Sold
		s.Event.SeatsLeft += final.SeatsLeft
	}
	if s.Joined > 0 {
		s.AbandonRate = float64(s.Abandoned) / float64(s.Joined)
	}
	s.Promotion = distOf(promo)
	s.PromotionPoll = distOf(promoPoll)
	s.Wait = distOf(waits(raws))
	s.Reaction = distOf(reaction)

	var sum fifoCounts
	for g := range pairs {
		c := countFIFO(pairs[g])
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

// waits are the times in line (AdmittedAt − JoinedAt) of admitted bots.
func waits(raws []Raw) []time.Duration {
	var ws []time.Duration
	for i := range raws {
		for j := range raws[i].Bots {
			b := &raws[i].Bots[j]
			if !b.JoinedAt.IsZero() && !b.AdmittedAt.IsZero() {
				ws = append(ws, max(b.AdmittedAt.Sub(b.JoinedAt), 0))
			}
		}
	}
	return ws
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

// timeline counts events per second since each run's opening and adds the
// runs up; queue figures are each run's last sample in the second.
func timeline(raws []Raw, runs []run, runOf []int) ([]Second, error) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	see := func(t, base time.Time) {
		if t.IsZero() {
			return
		}
		k := secondOf(t, base)
		lo, hi = min(lo, k), max(hi, k)
	}
	each := func(fn func(t time.Time, g int, kind int, st *Sample)) {
		for i := range raws {
			g := runOf[i]
			for j := range raws[i].Bots {
				b := &raws[i].Bots[j]
				fn(b.ArrivedAt, g, 0, nil)
				fn(b.JoinedAt, g, 1, nil)
				fn(b.AdmittedSeen, g, 2, nil)
			}
			for j := range raws[i].Requests {
				q := &raws[i].Requests[j]
				if q.Step == StepOrder && q.Code >= 200 && q.Code < 300 && q.Error == "" {
					fn(q.At.Add(q.Latency), g, 3, nil)
				}
			}
		}
		for g := range runs {
			samples := raws[runs[g].stats].Samples
			for j := range samples {
				fn(samples[j].At, g, 4, &samples[j])
			}
		}
	}
	each(func(t time.Time, g, _ int, _ *Sample) { see(t, runs[g].opens) })
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
	type last struct {
		at   time.Time
		s    *Sample
		seen bool
	}
	lasts := make([][]last, len(runs))
	each(func(t time.Time, g, kind int, st *Sample) {
		if t.IsZero() {
			return
		}
		k := secondOf(t, runs[g].opens) - lo
		switch kind {
		case 0:
			out[k].Arrivals++
		case 1:
			out[k].Joins++
		case 2:
			out[k].Promotions++
		case 3:
			out[k].Orders++
		case 4:
			if lasts[g] == nil {
				lasts[g] = make([]last, len(out))
			}
			if l := &lasts[g][k]; !l.seen || !t.Before(l.at) {
				*l = last{t, st, true}
			}
		}
	})
	for g := range lasts {
		for k, l := range lasts[g] {
			if !l.seen {
				continue
			}
			if out[k].Waiting == nil {
				out[k].Waiting, out[k].Active = new(int64), new(int64)
			}
			*out[k].Waiting += l.s.Waiting
			*out[k].Active += l.s.Active
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
