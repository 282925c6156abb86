package engine_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

var keys = auth.Keys{Admin: "admin-key", Simulator: "sim-key", Service: "service-key", JWTSecret: "jwt-secret"}

// MustServer starts a rushline server on a private real Redis.
func MustServer(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.Start(ctx, app.Config{Addr: "127.0.0.1:0", RedisURL: "redis://" + redistest.MustStart(tb).Addr(),
		DataDir: tb.TempDir(), Keys: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cancel(); _ = srv.Wait() })
	return "http://" + srv.Addr
}

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
var finals = map[string]bool{report.OutcomeBought: true, report.OutcomeSoldOut: true,
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
	target := MustServer(t)
	sc := MustScenario(t, "practice-small.yaml")
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: keys.Simulator, AdminKey: keys.Admin})
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

func TestShardsMakeOneRun(t *testing.T) {
	target := MustServer(t)
	sc := MustScenario(t, "practice-small.yaml")
	var (
		wg   sync.WaitGroup
		raws [2]report.Raw
		errs [2]error
	)
	for i := range 2 {
		wg.Go(func() {
			raws[i], errs[i] = engine.Run(context.Background(), sc, engine.Config{Target: target,
				SimulatorKey: keys.Simulator, AdminKey: keys.Admin, Shard: i + 1, Shards: 2, EventID: "sharded"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i+1, err)
		}
	}
	if raws[0].Shard != "1/2" || len(raws[0].Bots) != 150 || len(raws[1].Bots) != 150 {
		t.Fatalf("shards ran %d and %d bots (%q)", len(raws[0].Bots), len(raws[1].Bots), raws[0].Shard)
	}
	final := raws[0].Final
	if raws[1].Final.Sold > final.Sold {
		final = raws[1].Final
	}
	raws[0].Final = final
	MustCheckRun(t, sc, raws[0], append(raws[0].Bots, raws[1].Bots...))
}
