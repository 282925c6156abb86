package drop_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store/storetest"
	"github.com/rushline/rushline/simulator/scenario"
)

// tinySteps is tiny with the order steps after admission.
func tinySteps() *scenario.Scenario {
	sc := tiny()
	sc.Name, sc.Steps = "tiny-steps", slices.Clone(scenario.StepOrder)
	return sc
}

// TestCrowdTakesTheSteps: in a drop whose scenario has order steps, each
// virtual user buys no sooner than the sum of its steps after its
// admission, and the drop's results (live and once finished, from SQL)
// give the crowd's p50 / p90 per step and in total over the users that
// bought, within a histogram bucket of the exact figures.
func TestCrowdTakesTheSteps(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := MustWorld(t, dialect)
			scs := drop.WithScenarios(tiny(), tinySteps())
			svc := w.MustService(t, scs)
			const crowd, seats = 200, 40
			v, err := svc.Create(ctx, drop.Request{Scenario: "tiny-steps", Level: drop.LevelHard, Crowd: intp(crowd),
				Seats: intp(seats), OpensAt: w.clk.Now().Add(drop.MinLead)})
			if err != nil {
				t.Fatal(err)
			}
			d := v.Drop
			plan, err := svc.Plan(d)
			if err != nil || !slices.Equal(plan.Flow(), scenario.StepOrder) {
				t.Fatalf("plan flow %v, %v; want every step", plan.Flow(), err)
			}
			w.MustReplica(t, "r1", scs)
			w.clk.Set(d.OpensAt)
			clockCtx, stopClock := context.WithCancel(ctx)
			defer stopClock()
			go w.clk.Run(clockCtx, 100*time.Millisecond, 2*time.Millisecond)

			// Live: the crowd's figures fill in while it buys.
			MustEventually(t, 60*time.Second, "some of the crowd bought", func() bool {
				res, err := svc.Results(ctx, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				return len(res.Crowd.Steps) == len(scenario.StepOrder)+1 && res.Crowd.Steps[0].N > 0
			})
			v = MustFinished(t, svc, d.ID, 120*time.Second)
			stopClock()

			// Every virtual user bought after its admission plus its steps.
			recs, err := w.eng.Records(ctx, d.Event, "0", 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			prefix := d.VirtualPrefix()
			admitted := map[string]time.Time{}
			var bought []drop.User
			for _, r := range recs {
				k, err := strconv.Atoi(strings.TrimPrefix(r.UserID, prefix))
				if !strings.HasPrefix(r.UserID, prefix) || err != nil {
					continue
				}
				switch r.Kind {
				case queue.RecordAdmitted:
					admitted[r.UserID] = r.At
				case queue.RecordDone:
					u := plan.User(k)
					var sum time.Duration
					for _, s := range u.Steps {
						sum += s
					}
					if len(u.Steps) != len(scenario.StepOrder) || sum != u.Think {
						t.Fatalf("user %d: steps %v, think %v; want the think to be their sum", k, u.Steps, u.Think)
					}
					if took := r.At.Sub(admitted[r.UserID]); took < u.Think {
						t.Errorf("user %d bought %v after its admission, before its steps' %v", k, took, u.Think)
					}
					bought = append(bought, u)
				}
			}
			if len(bought) == 0 || int64(len(bought)) != v.Stats.Sold {
				t.Fatalf("%d of the crowd bought, %d seats sold; want all sold to the crowd", len(bought), v.Stats.Sold)
			}

			// The figures, from SQL now the drop is finished.
			res, err := svc.Results(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Crowd.Steps
			if len(got) != len(scenario.StepOrder)+1 || got[len(got)-1].Step != drop.StepTotal {
				t.Fatalf("crowd steps %+v, want one per step, then the total", got)
			}
			for i, q := range got {
				ms := make([]int64, len(bought))
				for j, u := range bought {
					if i < len(scenario.StepOrder) {
						ms[j] = u.Steps[i].Milliseconds()
					} else {
						ms[j] = u.Think.Milliseconds()
					}
				}
				slices.Sort(ms)
				nearest := func(p float64) int64 { return ms[int(math.Ceil(p*float64(len(ms))))-1] }
				near := func(got, want int64) bool { return math.Abs(float64(got-want)) <= 0.03*float64(want)+1 }
				if q.N != int64(len(bought)) || !near(q.P50, nearest(0.5)) || !near(q.P90, nearest(0.9)) {
					t.Errorf("%s: %+v; the %d buyers' p50 is %d ms, p90 %d ms", q.Step, q, len(bought), nearest(0.5), nearest(0.9))
				}
			}
			t.Logf("crowd steps %+v", got)
		})
	}
}
