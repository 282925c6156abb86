package engine_test

import (
	"context"
	"sort"
	"sync"
	"testing"

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
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator, AdminKey: simtest.Keys.Admin})
	if err != nil {
		t.Fatal(err)
	}
	MustCheckRun(t, sc, raw, raw.Bots)
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
	cfg := engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator, AdminKey: simtest.Keys.Admin}
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
