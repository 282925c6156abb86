package engine_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/internal/simtest"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// MustScenario loads a scenario shipped in scenarios/.
func MustScenario(tb testing.TB, name string) *scenario.Scenario {
	tb.Helper()
	sc, err := scenario.Load("../../scenarios/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

// finals are the outcomes a bot may end a complete run with.
var finals = map[string]bool{report.OutcomeBought: true, report.OutcomeSoldOut: true, report.OutcomeOutbid: true,
	report.OutcomeAbandoned: true, report.OutcomeExpired: true}

// MustCheckRun asserts what every run of practice-small must show.
func MustCheckRun(tb testing.TB, sc *scenario.Scenario, raw report.Raw, bots []report.Bot) {
	tb.Helper()
	if len(bots) != 300 {
		tb.Fatalf("%d bots, want 300", len(bots))
	}
	bought, admitted := 0, 0
	var inOrder []report.Bot
	for _, b := range bots {
		if !finals[b.Outcome] {
			tb.Fatalf("bot %s ended %q (%s)", b.ID, b.Outcome, b.Error)
		}
		if b.Outcome == report.OutcomeBought {
			bought++
		}
		if b.AdmissionNo > 0 {
			admitted++
			inOrder = append(inOrder, b)
		}
		if b.LeftActive {
			admitted++ // admitted as its patience ran out: it left instead
		}
	}
	// Bots outnumber seats: exactly every seat is sold, all to bots.
	if bought != sc.Event.Create.Seats || raw.Final.Sold != int64(bought) || raw.Final.SeatsLeft != 0 {
		tb.Fatalf("bought %d, server sold %d, left %d; want %d", bought, raw.Final.Sold, raw.Final.SeatsLeft, sc.Event.Create.Seats)
	}
	// The report's counts match the server's.
	if int64(admitted) != raw.Final.AdmittedTotal {
		tb.Fatalf("bots saw %d admissions, server counted %d", admitted, raw.Final.AdmittedTotal)
	}
	// Zero FIFO inversions: admission order follows join order.
	sort.Slice(inOrder, func(i, j int) bool { return inOrder[i].Seq < inOrder[j].Seq })
	for i := 1; i < len(inOrder); i++ {
		if inOrder[i].AdmissionNo < inOrder[i-1].AdmissionNo {
			tb.Fatalf("FIFO inversion: seq %d admitted #%d after seq %d #%d", inOrder[i].Seq, inOrder[i].AdmissionNo,
				inOrder[i-1].Seq, inOrder[i-1].AdmissionNo)
		}
	}
}

func TestPracticeSmallEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	t.Parallel()
	target := simtest.MustServer(t)
	sc := MustScenario(t, "practice-small.yaml")
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator,
		AdminKey: simtest.Keys.Admin, KeepBots: true, KeepRequests: true})
	if err != nil {
		t.Fatal(err)
	}
	MustCheckRun(t, sc, raw, raw.Bots)
	// The aggregates count what the raw records hold.
	if a := raw.Agg; a == nil || a.Steps["join"].Requests != int64(countStep(raw.Requests, "join")) || a.Joined != int64(len(raw.Bots)) {
		t.Fatalf("aggregates %+v disagree with %d bots", a, len(raw.Bots))
	}
	steps := map[string]int{}
	for _, r := range raw.Requests {
		steps[r.Step]++
	}
	for _, s := range []string{"join", "stream", "status", "seats", "order"} {
		if steps[s] == 0 {
			t.Fatalf("no %s requests recorded: %v", s, steps)
		}
	}
	if len(raw.Samples) == 0 {
		t.Fatal("no event stats sampled")
	}
}

func TestShardsMergeToOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	t.Parallel()
	target := simtest.MustServer(t)
	sc := MustScenario(t, "practice-small.yaml")
	cfg := engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator, AdminKey: simtest.Keys.Admin, KeepBots: true}
	var (
		wg     sync.WaitGroup
		single report.Raw
		shards [2]report.Raw
		errs   [3]error
	)
	// One unsharded run and two shards of another, all at once on one server.
	wg.Go(func() { single, errs[2] = engine.Run(context.Background(), sc, cfg) })
	for i := range 2 {
		wg.Go(func() {
			c := cfg
			c.Shard, c.Shards, c.EventID = i+1, 2, "sharded"
			shards[i], errs[i] = engine.Run(context.Background(), sc, c)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if shards[0].Shard != "1/2" || len(shards[0].Bots) != 150 || len(shards[1].Bots) != 150 {
		t.Fatalf("shards ran %d and %d bots (%q)", len(shards[0].Bots), len(shards[1].Bots), shards[0].Shard)
	}
	one := MustBuild(t, sc, single)
	merged, err := report.Merge(MustBuild(t, sc, shards[0]), MustBuild(t, sc, shards[1]))
	if err != nil {
		t.Fatal(err)
	}
	a, b := one.Summary, merged.Summary
	cases := []struct {
		name      string
		got, want int64
	}{
		{"bots", b.Bots.Total, a.Bots.Total},       // every arrival ran exactly once across the shards
		{"joined", b.Joined, a.Joined},             // each joined once
		{"orders", b.Orders, a.Orders},             // bots outnumber seats: every seat sold either way
		{"seats sold", b.Event.Sold, a.Event.Sold}, // the event's own count agrees
		{"inversions", b.FIFO.Inversions, 0},       // FIFO holds across shards
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: merged shards %d, single run %d", tc.name, tc.got, tc.want)
		}
	}
	MustCheckRun(t, sc, single, single.Bots)
}

// MustBuild summarises one run with the scenario's thresholds.
func MustBuild(tb testing.TB, sc *scenario.Scenario, raw report.Raw) *report.Report {
	tb.Helper()
	r, err := report.Build(raw, sc.Thresholds)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func countStep(reqs []report.Request, step string) (n int) {
	for _, q := range reqs {
		if q.Step == step {
			n++
		}
	}
	return n
}

// A run holds at most MaxStreams streams: the bots beyond
// wait their turn before joining and are counted as held back, and none
// fails to dial.
func TestGateHoldsBotsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole practice-small run takes ~20 s")
	}
	t.Parallel() // a whole run against its own server: mostly waiting
	target := simtest.MustServer(t)
	sc := MustScenario(t, "practice-small.yaml")
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator,
		AdminKey: simtest.Keys.Admin, MaxStreams: 16, KeepBots: true})
	if err != nil {
		t.Fatal(err)
	}
	MustCheckRun(t, sc, raw, raw.Bots)
	if raw.Generator.Streams != 16 || raw.Agg.HeldBack == 0 || raw.Generator.FDLimit < 64 {
		t.Errorf("generator %+v, %d held back; want 16 streams and some held back", raw.Generator, raw.Agg.HeldBack)
	}
	for step, st := range raw.Agg.Steps {
		if len(st.Errors) != 0 && step != "order" {
			t.Errorf("%s errors: %+v", step, st.Errors)
		}
	}
}

// A run that reaches its StartAt late starts at once, says by how much, and
// its arrivals, planned from StartAt, show the lag: the report flags the
// generator as saturated.
func TestLateStartReported(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bots against a server")
	}
	t.Parallel() // its own server; the lag it checks is the 2 s it starts late
	target := simtest.MustServer(t)
	sc, err := scenario.Load("../testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	startAt := time.Now().Add(-2 * time.Second)
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator,
		AdminKey: simtest.Keys.Admin, StartAt: startAt, Shard: 1, Shards: 2, EventID: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if raw.Generator.StartLate < 2*time.Second || !raw.OpensAt.Equal(startAt) {
		t.Fatalf("start late %v, opens %v; want ≥ 2s late, opening at %v", raw.Generator.StartLate, raw.OpensAt, startAt)
	}
	r := MustBuild(t, sc, raw)
	g := r.Summary.Generator
	if len(g.LateStarts) != 1 || g.LateStarts[0].Shard != "1/2" || !g.Saturated || g.Lag.Min < time.Second {
		t.Errorf("generator %+v; want shard 1/2 late and saturated", g)
	}
}
