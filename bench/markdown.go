package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// num writes a figure with about three significant digits.
func num(v float64) string {
	switch a := max(v, -v); {
	case a >= 100, v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// setupLine says what ran where.
func setupLine(r *Result) string {
	if r.onlyDrop() {
		return fmt.Sprintf("%d CPUs, %s, Redis %s. One rushline-server with its private Redis plays the drop's crowd; "+
			"the people are simulated over HTTP and SSE by the bench on the same machine.", r.CPUs, r.Go, r.RedisVersion)
	}
	return fmt.Sprintf("%d CPUs, %s, Redis %s. %d closed-loop connections; each HTTP figure sums %d round(s) of %s s, "+
		"the servers taking turns; the CPU targets and ceilings take the rounds' median (see Round to round). "+
		"The load generator, both servers and Redis share the machine.",
		r.CPUs, r.Go, r.RedisVersion, r.Settings.Connections, max(r.Settings.Rounds, 1), num(r.Settings.DurationS))
}

// loadLine gives the machine's load around the run ("" when unknown).
func loadLine(r *Result) string {
	if len(r.LoadAvg) != 2 {
		return ""
	}
	// The load after the run is mostly the run's own: the one before says
	// whether other work shared the machine.
	verdict := "at most the CPU count before it, a quiet machine."
	if r.LoadAvg[0] > float64(r.CPUs) {
		verdict = "above the CPU count, other work competed for the cores and the figures are noisier."
	}
	return fmt.Sprintf("1-minute load average %s before the run, %s after it (%d CPUs): %s",
		num(r.LoadAvg[0]), num(r.LoadAvg[1]), r.CPUs, verdict)
}

// pinnedMarkdown writes the pinned joins' section, if the run has them.
func pinnedMarkdown(b *strings.Builder, r *Result) {
	if len(r.Settings.Sizes) == 0 {
		return
	}
	n := r.Settings.Sizes[0]
	fl, ok1 := r.PinnedFor(ServerFloor, OpJoin, n)
	rl, ok2 := r.PinnedFor(ServerRushline, OpJoin, n)
	if !ok1 || !ok2 {
		return
	}
	fmt.Fprintf(b, "\n## Servers pinned @%s: joins with the servers on CPUs of their own\n\n"+
		"The floor and rushline take joins once more, in turns, on the first half of the cores, "+
		"while the load generator and Redis have the others: a second view of the server target, "+
		"without the other processes' threads on the servers' cores. "+
		"It is another regime, not a cleaner copy: a Go server's GOMAXPROCS follows its CPUs "+
		"(one on a 2-CPU machine), and the load generator and Redis share the rest, so the load "+
		"generator may set the pace. Its ratio is shown beside the target's, without a verdict.\n\n"+
		"| server | rps | p99 ms | server CPU µs per join, each round | median |\n|---|---:|---:|---:|---:|\n",
		SizeLabel(n))
	for _, h := range []HTTPFigures{fl, rl} {
		rounds := joinNums(h.ServerCPURounds)
		if len(h.ServerCPURounds) == 0 { // one round
			rounds = num(h.ServerCPU)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", h.Server, num(h.RPS), num(h.P99), rounds, num(h.ServerCPUMedian()))
	}
}

// ceilingIntro says what one event's ceiling is.
const ceilingIntro = "An event's keys share one Redis core, so whatever the replicas, one event takes at most " +
	"1 s ÷ (Redis CPU per request): Redis CPU over the HTTP loads above, divided by the answered requests. " +
	"Over HTTP on this machine the load generator and the server take most of the cores, so Redis sees small " +
	"batches; the engine rows drive the queue engine in process with as many callers and no HTTP, so Redis is " +
	"the bottleneck: one replica's batches under that many callers, new users joining from the line length " +
	"given (an upper bound for replicas that each see fewer callers, or for a mix with repeated joins)."

// lineFloorIntro says what the sorted-set floor is.
const lineFloorIntro = "The least a join into a line held in a Redis sorted set can cost Redis: the floor script takes " +
	"join.lua's arguments for a batch of new users and only takes their seqs (one INCRBY) and puts them in line " +
	"(one ZADD), with no config, counters, audit record or answers. The two take turns on one Redis, driven in process " +
	"with batches of new users, each on an event of its own whose line starts at the length given. The floor follows " +
	"the machine and the Redis version as the targets do; join.lua ÷ floor is what rushline's join adds to the line itself."

// targetText is x's target as "≥ t" or "≤ t", or "—" without one.
func (x Ratio) targetText() string {
	switch {
	case x.Target == 0:
		return "—"
	case x.LowerIsBetter:
		return "≤ " + num(x.Target)
	}
	return "≥ " + num(x.Target)
}

// Markdown writes the result as Markdown tables: targets and ratios first,
// then every figure.
func Markdown(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# rushline bench: %s, %s\n\n%s\n\n", r.Host, r.Date.UTC().Format("2006-01-02 15:04 UTC"), setupLine(r))
	if l := loadLine(r); l != "" {
		b.WriteString(l + "\n\n")
	}

	b.WriteString("## Targets and ratios\n\n| figure | value | target | verdict |\n|---|---:|---:|---|\n")
	for _, x := range r.Ratios {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.Name, num(x.Value), x.targetText(), x.Verdict())
	}
	if r.onlyDrop() {
		dropMarkdown(&b, r.Drop)
		_, err := io.WriteString(w, b.String())
		return err
	}

	b.WriteString("\n## HTTP: naive baseline vs rushline (same client, same Redis)\n\n" +
		"| op | waiting | naive rps | naive p50 ms | naive p99 ms | rushline rps | rushline p50 ms | rushline p99 ms | rushline ÷ naive | errors naive / rushline |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, op := range []string{OpJoin, OpStatus} {
		for _, n := range r.Settings.Sizes {
			nv, ok1 := r.HTTPFor(ServerNaive, op, n)
			rl, ok2 := r.HTTPFor(ServerRushline, op, n)
			if !ok1 && !ok2 {
				continue
			}
			ratio := "—"
			if nv.RPS > 0 {
				ratio = num(rl.RPS/nv.RPS) + "×"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d |\n", op, SizeLabel(n),
				num(nv.RPS), num(nv.P50), num(nv.P99), num(rl.RPS), num(rl.P50), num(rl.P99), ratio, nv.Errors, rl.Errors)
		}
	}

	if len(r.Settings.Sizes) > 0 {
		n := r.Settings.Sizes[0]
		var floor strings.Builder
		for _, op := range []string{OpJoin, OpStatus} {
			fl, ok := r.HTTPFor(ServerFloor, op, n)
			nv, _ := r.HTTPFor(ServerNaive, op, n)
			rl, _ := r.HTTPFor(ServerRushline, op, n)
			if !ok || nv.RPS <= 0 || fl.RPS <= 0 {
				continue
			}
			fmt.Fprintf(&floor, "| %s | %s | %s | %s | %s | %s× | %s× |\n", op, num(fl.RPS), num(fl.P50), num(fl.P99),
				num(fl.ServerCPU), num(fl.RPS/nv.RPS), num(rl.RPS/fl.RPS))
		}
		if floor.Len() > 0 {
			fmt.Fprintf(&b, "\n## HTTP floor @%s: the same routes answered with a constant, no Redis\n\n"+
				"No server gets more from this load generator on this machine, so floor ÷ naive caps every rushline ÷ naive ratio.\n\n"+
				"| op | floor rps | p50 ms | p99 ms | server CPU µs/req | floor ÷ naive | rushline ÷ floor |\n"+
				"|---|---:|---:|---:|---:|---:|---:|\n%s", SizeLabel(n), floor.String())
		}
	}

	pinnedMarkdown(&b, r)

	var cpu strings.Builder
	for _, op := range []string{OpJoin, OpStatus} {
		for _, n := range r.Settings.Sizes {
			nv, ok1 := r.HTTPFor(ServerNaive, op, n)
			rl, ok2 := r.HTTPFor(ServerRushline, op, n)
			if !ok1 || !ok2 || nv.ServerCPU == 0 || rl.ServerCPU == 0 {
				continue
			}
			perScript := "–" // a status read runs no script
			if op == OpJoin && rl.PerScript > 0 {
				perScript = num(rl.PerScript)
			}
			fmt.Fprintf(&cpu, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, SizeLabel(n),
				num(nv.ServerCPU), num(rl.ServerCPU), num(nv.RedisCPU), num(rl.RedisCPU), num(nv.ClientCPU), num(rl.ClientCPU),
				num(nv.ServerCPU+nv.RedisCPU+nv.ClientCPU), num(rl.ServerCPU+rl.RedisCPU+rl.ClientCPU), perScript)
		}
	}
	if cpu.Len() > 0 {
		b.WriteString("\n## CPU per answered request (µs)\n\n" +
			"The load generator, the server and Redis share the CPUs, so throughput follows the sum of the three. " +
			"Rushline's joins per script call (EVAL, EVALSHA, ticks and pushes included) is its batch size: " +
			"each call has a fixed cost, so Redis CPU per request follows it.\n\n" +
			"| op | waiting | naive server | rushline server | Redis, naive | Redis, rushline | load generator, naive | load generator, rushline | sum naive | sum rushline | rushline joins per script call |\n" +
			"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + cpu.String())
	}

	var rounds strings.Builder
	for _, h := range r.HTTP {
		if len(h.RedisCPURounds) > 0 {
			fmt.Fprintf(&rounds, "| %s | %s | %s | %s | %s | %s | %s |\n", h.Server, h.Op, SizeLabel(h.Waiting),
				joinNums(h.ServerCPURounds), num(median(h.ServerCPURounds)), joinNums(h.RedisCPURounds), num(h.RedisCPUMedian()))
		}
	}
	if rounds.Len() > 0 {
		b.WriteString("\n## Round to round\n\n" +
			"The tables above sum the rounds of each load; here is each round alone, in the order they ran, and their median. " +
			"Rounds of one build under one load differ only by what else the machine did: their spread is the measurement's noise. " +
			"So the CPU figures in the targets take the median: Redis CPU per request (and so one event's ceiling) is the rounds' median, " +
			"and every CPU ratio of two servers the median of the round-by-round ratios (the servers take turns within a round); " +
			"throughput and p99 ratios stay over every request of every round.\n\n" +
			"| server | op | waiting | server CPU µs per request | median | Redis CPU µs per request | median |\n|---|---|---:|---:|---:|---:|---:|\n" +
			rounds.String())
	}

	if cs := r.Ceilings(); len(cs) > 0 {
		b.WriteString("\n## One event's ceiling\n\n" + ceilingIntro + "\n\n" +
			"| op | waiting | measured | Redis CPU µs per request | one event's ceiling, per s |\n|---|---:|---|---:|---:|\n")
		for _, c := range cs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Op, SizeLabel(c.Waiting), c.Via, num(c.RedisCPU), num(c.PerS))
		}
	}

	if len(r.LineFloor) > 0 {
		b.WriteString("\n## The sorted-set floor\n\n" + lineFloorIntro + "\n\n" +
			"| waiting | batch | users each | join.lua, Redis CPU µs per user | floor, Redis CPU µs per user | join.lua ÷ floor | the floor's ceiling, joins/s |\n" +
			"|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, f := range r.LineFloor {
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s |\n", SizeLabel(f.Waiting), f.Batch, f.Users,
				num(f.JoinCPU), num(f.FloorCPU), num(f.Ratio()), num(f.Ceiling()))
		}
	}

	fmt.Fprintf(&b, "\n## redis-benchmark: the raw ceiling (-c %d)\n\n| test | pipeline | rps | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|\n",
		r.Settings.Connections)
	for _, x := range r.RedisBenchmark {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", x.Name, x.Pipeline, num(x.RPS), num(x.P50), num(x.P99))
	}

	b.WriteString("\n## Admission, push and memory\n\n| figure | value |\n|---|---:|\n")
	fmt.Fprintf(&b, "| promotions/s, one event, batch %d (%d promoted) | %s |\n", r.Admission.Batch, r.Admission.Promoted, num(r.Admission.PromotionsPerS))
	fmt.Fprintf(&b, "| promotion latency p50 / p99, %d SSE streams (%d admitted, %d duplicates) | %s / %s ms |\n",
		r.Push.Streams, r.Push.Admitted, r.Push.Duplicates, num(r.Push.P50), num(r.Push.P99))
	fmt.Fprintf(&b, "| promotions/s delivered over SSE | %s |\n", num(r.Push.PromotionsPerS))
	fmt.Fprintf(&b, "| rushline-server RSS with %d streams | %s MB |\n", r.Push.Streams, num(r.Push.ServerRSSMB))
	fmt.Fprintf(&b, "| Redis bytes per waiting user (over %d joins through rushline) | %s |\n", r.Memory.MeasuredOver, num(r.Memory.RedisBytesPerWaiting))
	fmt.Fprintf(&b, "| rushline-server RSS after the HTTP loads | %s MB |\n", num(r.Memory.ServerRSSMB))
	fmt.Fprintf(&b, "| naive baseline RSS after the HTTP loads | %s MB |\n", num(r.Memory.NaiveRSSMB))
	if r.Drop != nil {
		dropMarkdown(&b, r.Drop)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// onlyDrop is true for a result of the drop step alone.
func (r *Result) onlyDrop() bool {
	return r.Drop != nil && len(r.HTTP) == 0 && len(r.RedisBenchmark) == 0 && r.Push.Streams == 0 && r.Admission.Promoted == 0
}

// check is PASS when ok, else MISS.
func check(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// secondsText is a time from the opening, or "—" when it did not happen.
func secondsText(s float64) string {
	if s == 0 {
		return "—"
	}
	return num(s) + " s"
}

// dropTitle and dropIntro head the drop step's section.
func (d *DropFigures) dropTitle() string {
	return fmt.Sprintf("Practice drop: %s crowd, %d people on SSE", SizeLabel(d.Crowd), d.People)
}

func (d *DropFigures) dropIntro() string {
	return fmt.Sprintf("Drop %s (%s, level %s, %d seats). The server plays the crowd through the engine's crowd join; "+
		"each person makes a guest session, joins at the opening, holds the SSE stream until `admitted`, "+
		"then reads the seat map and buys a seat.", d.ID, d.Scenario, d.Level, d.Seats)
}

// dropRows are the drop step's figures and checks, for both reports.
func (d *DropFigures) dropRows() []htmlRatio {
	outcomes := make([]string, 0, len(d.Outcomes))
	for _, o := range []string{"seat", "sold_out", "expired", "left", "waiting"} {
		if n := d.Outcomes[o]; n > 0 {
			outcomes = append(outcomes, fmt.Sprintf("%s %d", o, n))
		}
	}
	rows := []htmlRatio{
		{Name: "crowd joined", Value: fmt.Sprintf("%d of %d", d.CrowdJoined, d.Crowd), Verdict: check(d.CrowdJoined == int64(d.Crowd))},
		{Name: fmt.Sprintf("people joined / admitted (%d at their join) / bought a seat", d.AdmittedAtJoin),
			Value: fmt.Sprintf("%d / %d / %d", d.PeopleJoined, d.PeopleAdmitted, d.PeopleBought)},
		{Name: fmt.Sprintf("people's promotion latency p50 / p90 / p99 / max, admitted with the stream open (%d pushed, %d duplicates)",
			d.Latency.Count, d.Duplicates),
			Value: fmt.Sprintf("%s / %s / %s / %s ms", num(d.Latency.P50), num(d.Latency.P90), num(d.Latency.P99), num(d.Latency.Max))},
		{Name: fmt.Sprintf("the same with the %d admitted before their stream was asked for (`admitted` its first message)", d.BeforeStream),
			Value: fmt.Sprintf("%s / %s / %s / %s ms", num(d.LatencyAll.P50), num(d.LatencyAll.P90), num(d.LatencyAll.P99), num(d.LatencyAll.Max))},
		{Name: fmt.Sprintf("Redis CPU per virtual user joined (%s s from the opening to the end)", num(d.RedisCPUS)),
			Value: num(d.RedisCPUPerCrowdUS) + " µs"},
		{Name: fmt.Sprintf("server CPU per virtual user joined (%s s)", num(d.ServerCPUS)), Value: num(d.ServerCPUPerCrowdUS) + " µs"},
		{Name: "server RSS peak", Value: num(d.ServerRSSPeakMB) + " MB"},
		{Name: "opening to the whole crowd joined", Value: secondsText(d.CrowdJoinedS)},
		{Name: fmt.Sprintf("opening to sold out (%d of %d seats sold)", d.Sold, d.Seats), Value: secondsText(d.SoldOutS)},
		{Name: "opening to the drop finished", Value: secondsText(d.FinishedS)},
		{Name: fmt.Sprintf("people with a final result (%s)", strings.Join(outcomes, ", ")),
			Value: fmt.Sprintf("%d of %d", d.PeopleWithResult, d.People), Verdict: check(d.PeopleWithResult == d.People)},
		{Name: fmt.Sprintf("seats sold twice (API, results, Redis seat map with %d, SQL with %d orders and %d conflicts)",
			d.SeatMapSold, d.SQLOrders, d.SQLConflicts),
			Value: fmt.Sprint(d.SoldTwice), Verdict: check(d.SoldTwice == 0 && d.SQLConflicts == 0)},
		{Name: "consistency checks failed", Value: fmt.Sprint(len(d.Mismatches)), Verdict: check(len(d.Mismatches) == 0)},
	}
	if c := d.Contention; c != nil {
		// After the latency rows: a stall with little CPU for us is the machine's.
		rows = slices.Insert(rows, 4, htmlRatio{
			Name:  fmt.Sprintf("CPU in the first %s s after the opening: the drop's processes (server, Redis, bench) / other work", num(c.Seconds)),
			Value: fmt.Sprintf("%s / %s cores", num(c.Ours), num(c.Others))})
	}
	return rows
}

// dropMarkdown writes the drop step's section.
func dropMarkdown(b *strings.Builder, d *DropFigures) {
	fmt.Fprintf(b, "\n## %s\n\n%s\n\n| figure | value | verdict |\n|---|---:|---|\n", d.dropTitle(), d.dropIntro())
	for _, x := range d.dropRows() {
		fmt.Fprintf(b, "| %s | %s | %s |\n", x.Name, x.Value, x.Verdict)
	}
	for _, m := range d.Mismatches {
		fmt.Fprintf(b, "\n- %s", m)
	}
	if len(d.Mismatches) > 0 {
		b.WriteString("\n")
	}
}

// joinNums is xs as num puts each, separated by " / ".
func joinNums(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = num(x)
	}
	return strings.Join(s, " / ")
}
