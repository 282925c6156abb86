package plan_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/internal/simtest"
	"github.com/rushline/rushline/simulator/plan"
	"github.com/rushline/rushline/simulator/scenario"
)

// MustParse parses a scenario document.
func MustParse(tb testing.TB, doc string) *scenario.Scenario {
	tb.Helper()
	sc, err := scenario.Parse([]byte(doc))
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

// validationCrowd: 4,000 fans in a 2 s spike; scaled to 1/10 for the run.
const validationCrowd = `
name: validation
seed: 7
event:
  create: {seats: 10000, admit_batch: 400, capacity: 2000}
phases:
  - {name: rush, arrival: spike, users: 4000, over: 2s}
bots:
  - {name: fan, weight: 3, wait: sse, think: {dist: uniform, min: 3200ms, max: 4800ms}, seat: random, retry_on_taken: 20}
  - {name: poller, weight: 1, wait: poll, poll_interval: 1s, think: 4s, seat: random, retry_on_taken: 20}
`

// TestValidate runs a setting live on 400 bots and checks the model agrees
// within the stated tolerances (plan.Tol*): waits within 20% or one interval
// + 250 ms, peak line within 15% or one batch, admitted and sold within 2% or 2.
func TestValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	target := simtest.MustServer(t)
	sc := MustParse(t, validationCrowd)
	for _, tc := range []struct {
		name  string
		s     plan.Setting
		seats int
	}{
		// tick-bound: 20 every 250 ms = 80/s; 300 seats sell out.
		{"batch", plan.Setting{Policy: plan.PolicyBatch, Batch: 200, Capacity: 400, Interval: 250 * time.Millisecond}, 3000},
		// adaptive: 20 per 200 ms at no load, down to 1 as orders near 80/s.
		{"adaptive", plan.Setting{Policy: plan.PolicyAdaptive, Batch: 200, Capacity: 3000, Interval: 200 * time.Millisecond,
			MaxTPS: 800}, 5000},
		// capacity-bound: 150 live at most, each ~4 s: ~38 admissions/s. Think
		// times are long next to request and push latency, which the model
		// does not count and which a loaded machine stretches.
		{"capacity", plan.Setting{Policy: plan.PolicyCapacity, Batch: 400, Capacity: 1500, Interval: 250 * time.Millisecond}, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			v, err := plan.Validate(ctx, sc, tc.s, plan.Event{Seats: tc.seats, Window: 30 * time.Second},
				plan.ValidateConfig{Target: target, SimulatorKey: simtest.Keys.Simulator, AdminKey: simtest.Keys.Admin, Scale: 0.1})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := v.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + out.String())
			if v.Bots != 400 || v.Setting.Batch != tc.s.Batch/10 || v.Event.Seats != tc.seats/10 {
				t.Errorf("scaled run: %d bots, batch %d, %d seats; want 400, %d, %d", v.Bots, v.Setting.Batch,
					v.Event.Seats, tc.s.Batch/10, tc.seats/10)
			}
			if v.Timed != v.Bots {
				t.Errorf("%d of %d bots matched to the crowd for the live-timed model", v.Timed, v.Bots)
			}
			if !v.OK() {
				t.Errorf("prediction and measurement disagree:\n%s", out.String())
			}
			// When the machine kept up, the plan's bare prediction must hold too.
			if quick := plan.TolWaitAbs; v.Service[1] < quick && v.JoinLag[1] < quick && !v.PredictionAgrees() {
				t.Errorf("requests were quick (slot overtime p99 %s, join lag p99 %s), yet the bare prediction "+
					"disagrees:\n%s", v.Service[1], v.JoinLag[1], out.String())
			}
			// The reports carry the comparison.
			p := MustGoldenPlan(t)
			p.Validation = v
			var md bytes.Buffer
			if err := p.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(md.Bytes(), []byte("## Validation")) || !bytes.Contains(md.Bytes(), []byte("| wait p95 | ")) {
				t.Errorf("Markdown lacks the validation:\n%s", md.String())
			}
		})
	}
}
