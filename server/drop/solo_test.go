package drop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
	"github.com/rushline/rushline/simulator/scenario"
)

// slow is a solo scenario whose crowd of 2,000 arrives over 20 s, for 50
// seats: long enough to stop a player mid-crowd.
func slow() *scenario.Scenario {
	return &scenario.Scenario{Name: "slow", Seed: 9,
		Event: scenario.Event{Create: &scenario.EventCreate{Seats: 50, Capacity: 10, AdmitBatch: 10,
			AdmitIntervalMS: 50, ActiveTTLS: 30, Policy: "capacity"}},
		Phases: []scenario.Phase{{Name: "ramp", Arrival: scenario.ArrivalSpike, Users: 2000,
			Over: scenario.Duration(20 * time.Second), Duration: scenario.Duration(20 * time.Second)}}}
}

// mustDrop reads drop id from the database.
func (w *world) mustDrop(tb testing.TB, id string) drop.Drop {
	tb.Helper()
	d, err := w.store.Drop(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// TestSoloStartsHammered: many people start solo races at once on two
// replicas sharing the database. Whatever the interleaving, the races that
// stand never exceed a limit (per person, per address, per server, crowd),
// every one has its event, a refused start leaves nothing behind and
// answers 429 or 503 with a Retry-After.
func TestSoloStartsHammered(t *testing.T) {
	tests := []struct {
		name   string
		limits drop.SoloLimits
		// want is how many races stand: the limit is filled, never passed
		// (0: it depends on the interleaving).
		want int
	}{
		// Each person starts from 3 addresses: 5 always fit.
		{"races", drop.SoloLimits{Races: 5, PerClient: 3}, 5},
		{"crowd", drop.SoloLimits{Crowd: 4 * 300, PerClient: 3}, 4},
		{"per address", drop.SoloLimits{Races: 40, PerClient: 1}, 0},
	}
	for _, dialect := range storetest.Dialects {
		for _, tc := range tests {
			t.Run(dialect+"/"+tc.name, func(t *testing.T) {
				if n := hammerSolo(t, dialect, tc.limits); tc.want > 0 && n != tc.want {
					t.Errorf("%d races stand, want the limit's %d", n, tc.want)
				}
			})
		}
	}
}

// hammerSolo starts 48 solo races at once, from 16 people on 6 addresses,
// on two replicas, checks what stands against limits l and returns how
// many races do.
func hammerSolo(t *testing.T, dialect string, l drop.SoloLimits) int {
	ctx := context.Background()
	w := MustWorld(t, dialect)
	svcs := []*drop.Service{w.MustService(t, drop.WithSoloLimits(l)),
		w.MustService(t, drop.WithSoloLimits(l))}
	const starts, people, addresses = 48, 16, 6
	var mu sync.Mutex
	accepted := map[string]drop.Drop{}
	refused := map[queue.Code]int{}
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() {
			who := drop.Racer{UserID: fmt.Sprintf("u%d", i%people), Client: fmt.Sprintf("10.0.0.%d", i%addresses)}
			d, ev, err := svcs[i%2].StartSolo(ctx, who, "tiny", 60*time.Second)
			mu.Lock()
			defer mu.Unlock()
			var qe *queue.Error
			switch {
			case err == nil:
				if ev.ID != d.Event || !ev.Practice {
					t.Errorf("event %+v of %s", ev, d.ID)
				}
				accepted[d.ID] = d
			case queue.ErrorCode(err) == queue.CodeRateLimited || queue.ErrorCode(err) == queue.CodeUnavailable:
				if !errors.As(err, &qe) || qe.RetryAfter < time.Second {
					t.Errorf("refusal without a Retry-After: %v", err)
				}
				refused[queue.ErrorCode(err)]++
			default:
				t.Errorf("start: %v", err)
			}
		})
	}
	wg.Wait()
	if len(accepted) == 0 {
		t.Fatal("every start was refused")
	}
	open, err := w.store.OpenDrops(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perOwner, perClient, crowd := map[string]int{}, map[string]int{}, 0
	for _, d := range open {
		if _, ok := accepted[d.ID]; !ok {
			t.Errorf("a refused start left drop %s behind", d.ID)
		}
		if _, err := w.eng.Event(ctx, d.Event); err != nil {
			t.Errorf("drop %s has no event: %v", d.ID, err)
		}
		perOwner[d.Owner]++
		perClient[d.Client]++
		crowd += d.Crowd
	}
	if len(open) != len(accepted) {
		t.Errorf("%d drops stored, %d starts accepted", len(open), len(accepted))
	}
	if l.Races > 0 && len(open) > l.Races {
		t.Errorf("%d races stand, limit %d", len(open), l.Races)
	}
	if l.Crowd > 0 && crowd > l.Crowd {
		t.Errorf("their crowds sum to %d, limit %d", crowd, l.Crowd)
	}
	for owner, n := range perOwner {
		if n > 1 {
			t.Errorf("%s has %d races", owner, n)
		}
	}
	for client, n := range perClient {
		if n > l.PerClient {
			t.Errorf("address %s has %d races, limit %d", client, n, l.PerClient)
		}
	}
	t.Logf("%d accepted, refused %v", len(accepted), refused)
	return len(open)
}

// TestSoloIsPrivate: a solo race is its person's alone: others may not
// join it, and the public drop calls do not show it.
func TestSoloIsPrivate(t *testing.T) {
	ctx := context.Background()
	w := MustWorld(t, store.DialectSQLite)
	svc := w.MustService(t)
	d, _, err := svc.StartSolo(ctx, drop.Racer{UserID: "u_ada"}, "tiny", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Joining(ctx, d.Event, "u_bob", "Bob"); queue.ErrorCode(err) != queue.CodeForbidden {
		t.Errorf("Bob joining Ada's race: %v, want FORBIDDEN", err)
	}
	if early, err := svc.Joining(ctx, d.Event, "u_ada", "Ada"); err != nil || !early {
		t.Errorf("Ada joining her race early: %v, %v", early, err)
	}
	if _, err := svc.Get(ctx, d.ID); queue.ErrorCode(err) != queue.CodeDropNotFound {
		t.Errorf("Get: %v, want DROP_NOT_FOUND", err)
	}
	if _, err := svc.Results(ctx, d.ID); queue.ErrorCode(err) != queue.CodeDropNotFound {
		t.Errorf("Results: %v, want DROP_NOT_FOUND", err)
	}
	list, err := svc.List(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v; want no drop", list, err)
	}
	if _, err := svc.Solo(ctx, d.Event, "u_bob"); queue.ErrorCode(err) != queue.CodeForbidden {
		t.Errorf("Solo for Bob: %v, want FORBIDDEN", err)
	}
	if _, err := svc.Solo(ctx, "drop-nope", "u_ada"); queue.ErrorCode(err) != queue.CodeEventNotFound {
		t.Errorf("Solo of an unknown race: %v, want EVENT_NOT_FOUND", err)
	}
}

// TestSoloResumesOnAnotherReplica: the replica playing a solo race's crowd
// dies mid-crowd holding the lease; another replica resumes it once the
// lease runs out. The crowd ends exactly complete, nobody joined twice, no
// seat sold twice, and the person's result is there.
func TestSoloResumesOnAnotherReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a 2,000-user solo race on two replicas (~5 s)")
	}
	ctx := context.Background()
	w := MustWorld(t, store.DialectSQLite)
	scs := drop.WithScenarios(tiny(), slow())
	svc := w.MustService(t, scs)
	d, _, err := svc.StartSolo(ctx, drop.Racer{UserID: "u_ada"}, "slow", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w.clk.Set(d.OpensAt.Add(-time.Second))
	clockCtx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	go w.clk.Run(clockCtx, 10*time.Millisecond, 2*time.Millisecond)

	r1 := w.MustReplica(t, "r1", scs)
	cursor := func() int64 {
		st, err := w.eng.CrowdState(ctx, d.Event)
		if err != nil {
			t.Fatal(err)
		}
		return st.Cursor
	}
	MustEventually(t, 30*time.Second, "the opening", func() bool { return cursor() > 0 })
	if _, err := svc.Joining(ctx, d.Event, "u_ada", "Ada"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.eng.Join(ctx, d.Event, "u_ada"); err != nil {
		t.Fatal(err)
	}
	MustEventually(t, 30*time.Second, "r1 joined a quarter of the crowd", func() bool { return cursor() >= int64(d.Crowd/4) })
	r1.stop()
	stopped := cursor()
	if stopped >= int64(d.Crowd) {
		t.Fatalf("r1 joined the whole crowd before it stopped (%d)", stopped)
	}
	// r1 died holding the lease: it keeps the crowd until it runs out.
	if err := w.rdb.Set(ctx, queue.CrowdKeys(d.Event)[1], "ghost", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	w.MustReplica(t, "r2", scs)
	MustEventually(t, 60*time.Second, "the race finished", func() bool { return w.mustDrop(t, d.ID).Final != nil })
	f := w.mustDrop(t, d.ID).Final
	if f.CrowdJoined != int64(d.Crowd) {
		t.Errorf("crowd joined = %d, want exactly %d", f.CrowdJoined, d.Crowd)
	}
	if inLine, sold := w.crowdAudit(t, d); inLine != d.Crowd || sold > d.Seats {
		t.Errorf("%d of the crowd in line or admitted, want %d; %d seats sold of %d", inLine, d.Crowd, sold, d.Seats)
	}
	r, ok, err := svc.SoloResult(ctx, d, "u_ada")
	if err != nil || !ok || r.Nickname != "Ada" || r.Seq < 1 || r.Outcome == drop.OutcomeWaiting || !r.Private {
		t.Errorf("Ada's result %+v, %v, %v", r, ok, err)
	}
	t.Logf("r1 stopped at %d of %d; r2 finished: %+v", stopped, d.Crowd, *f)
}

// TestSoloRaceAgain: a person may start the next solo race once their
// attempt in the last one has ended, while its bots still race, but holds
// at most drop.MaxOwnSolo races at once.
func TestSoloRaceAgain(t *testing.T) {
	ctx := context.Background()
	w := MustWorld(t, store.DialectSQLite)
	svc := w.MustService(t)
	ada := drop.Racer{UserID: "u_ada", Client: "10.0.0.1"}
	start := func() (drop.Drop, error) {
		d, _, err := svc.StartSolo(ctx, ada, "tiny", 60*time.Second)
		return d, err
	}
	mustRefused := func(what, says string) {
		t.Helper()
		_, err := start()
		var qe *queue.Error
		if queue.ErrorCode(err) != queue.CodeRateLimited || !errors.As(err, &qe) || qe.RetryAfter < time.Second ||
			!strings.Contains(qe.Message, says) {
			t.Fatalf("%s: %v, want 429 saying %q with a Retry-After", what, err, says)
		}
	}
	end := func(d drop.Drop, o drop.Outcome) {
		t.Helper()
		r := drop.Result{DropID: d.ID, UserID: ada.UserID, Seq: 1, Attempt: 1, Position: 1, Outcome: o,
			Scenario: d.Scenario, OpensAt: d.OpensAt, Crowd: d.Crowd, Private: true}
		if err := w.store.SaveResults(ctx, []drop.Result{r}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := start()
	if err != nil {
		t.Fatal(err)
	}
	mustRefused("not joined yet", "still running")
	end(first, drop.OutcomeWaiting)
	mustRefused("still in line", "still running")
	end(first, drop.OutcomeLeft)
	second, err := start()
	if err != nil {
		t.Fatalf("after leaving the first race: %v", err)
	}
	mustRefused("in the second race", "still running")
	end(second, drop.OutcomeSeat)
	mustRefused("two races' bots still racing", "bots of your last 2")
}
