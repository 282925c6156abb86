package recovery_test

import (
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/recovery"
	"github.com/rushline/rushline/server/store/storetest"
)

// TestRecoverPrequeueAndDraw: a random_start event's pre-queue comes back
// from the audit trail after a Redis loss before the opening, is drawn in
// the order of the seed kept in SQL, and a second loss after the draw
// brings back the drawn line and the finished draw.
func TestRecoverPrequeueAndDraw(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) { mustRecoverPrequeueAndDraw(t, dialect) })
	}
}

func mustRecoverPrequeueAndDraw(t *testing.T, dialect string) {
	r := MustRig(t, dialect)
	opens := r.clk.Now().Add(time.Hour)
	ev, err := queue.NewCatalog(r.db, r.eng).Create(r.ctx, queue.Event{ID: "opening", Seats: 20, Capacity: 1000,
		AdmitBatch: 5, AdmitIntervalMS: 100, ActiveTTLS: 600, Policy: queue.PolicyBatch, Paused: true,
		QueueMode: queue.ModeRandomStart, OpensAt: &opens})
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for i := range 30 {
		u := fmt.Sprintf("u_%02d", i)
		if en, _, err := r.eng.Join(r.ctx, ev.ID, u); err != nil || en.Status != queue.StatusPrequeued {
			t.Fatalf("pre-queue %s: %+v %v", u, en, err)
		}
		users = append(users, u)
	}
	r.MustCatchUp(t)
	lose := func() {
		t.Helper()
		if err := r.rdb.FlushAll(r.ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := recovery.Recover(r.ctx, r.db, r.eng, ev.ID, false); err != nil {
			t.Fatalf("recover: %v", err)
		}
	}
	lose()
	if en, created, err := r.eng.Join(r.ctx, ev.ID, "u_07"); err != nil || created || en.Status != queue.StatusPrequeued {
		t.Fatalf("a restored pre-queued user: %+v created=%v %v", en, created, err)
	}

	r.clk.Advance(time.Hour)
	if _, err := r.eng.Draw(r.ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	stored, err := r.db.Event(r.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := hex.DecodeString(stored.DrawSeed)
	want := fair.DrawOrder(seed, users)
	line := func() []string {
		l, err := r.rdb.ZRange(r.ctx, queue.Keys(ev.ID)[2], 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if got := line(); !slices.Equal(got, want) {
		t.Fatalf("drawn line %v, want %v", got, want)
	}
	r.MustCatchUp(t)
	lose()
	if got := line(); !slices.Equal(got, want) {
		t.Fatalf("line after the second loss %v, want %v", got, want)
	}
	info, err := r.eng.DrawInfo(r.ctx, ev)
	if err != nil || !info.Done || info.Drawn != 30 || info.Seed != stored.DrawSeed {
		t.Fatalf("draw after recovery %+v, %v; want done, 30 drawn, the stored seed", info, err)
	}
}
