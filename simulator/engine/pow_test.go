package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/internal/simtest"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// TestBotsSolveTheChallenge: on an event asking for proof of work, every bot
// fetches a challenge and solves it before joining, so a run shows what the
// challenge costs a bot farm.
func TestBotsSolveTheChallenge(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run: runs in make test")
	}
	t.Parallel() // its own server
	target := simtest.MustServer(t)
	b, _ := json.Marshal(map[string]any{"id": "pow-run", "seats": 10, "capacity": 10, "admit_batch": 10,
		"admit_interval_ms": 100, "active_ttl_s": 10, "policy": "capacity", "challenge": "pow", "pow_bits": 12})
	req, _ := http.NewRequest(http.MethodPost, target+"/api/v1/admin/events", bytes.NewReader(b))
	req.Header.Set("X-Admin-Key", simtest.Keys.Admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", res, err)
	}
	res.Body.Close()
	sc, err := scenario.Parse([]byte(`name: pow
description: 10 bots on a proof-of-work event.
seed: 1
event:
  use: pow-run
phases:
  - name: trickle
    arrival: constant
    rate: 20/s
    duration: 500ms
bots:
  - name: buyer
    wait: poll
    poll_interval: 100ms
    reaction: {dist: constant, value: 10ms}
    think: {dist: constant, value: 10ms}
    seat: random
    retry_on_taken: 10
`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator,
		KeepBots: true, KeepRequests: true})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	for _, r := range raw.Requests {
		steps[r.Step]++
	}
	if len(raw.Bots) == 0 || steps["challenge"] != len(raw.Bots) || steps["join"] != len(raw.Bots) {
		t.Fatalf("%d bots made %v requests: want a challenge per join", len(raw.Bots), steps)
	}
	for _, b := range raw.Bots {
		if b.Outcome != report.OutcomeBought && b.Outcome != report.OutcomeSoldOut {
			t.Errorf("bot %s ended %s (%s)", b.ID, b.Outcome, b.Error)
		}
	}
}
