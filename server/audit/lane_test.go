package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/audit"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store/storetest"
)

// TestLaneAndRedeemedCodeReachSQL: the audit trail keeps each attempt's lane,
// and a code redeemed in Redis is marked redeemed in SQL, where recovery
// reads grants from.
func TestLaneAndRedeemedCodeReachSQL(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			eng := queue.New(redistest.MustClient(t, redistest.MustStart(t).Addr()), []byte("k"))
			db := storetest.MustOpen(t, dialect)
			ev := queue.Event{ID: "lanes", Seats: 5, Capacity: 1, AdmitBatch: 1, AdmitIntervalMS: 100, ActiveTTLS: 60,
				Policy: queue.PolicyBatch, PriorityShare: 0.5}
			if err := eng.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			if _, _, err := queue.NewPriority(db, eng).Grant(ctx, ev.ID, nil, []string{"VIP-1"}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := eng.Join(ctx, ev.ID, "u_n"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := eng.JoinWith(ctx, ev.ID, "u_p", queue.JoinOptions{PriorityCode: "VIP-1"}); err != nil {
				t.Fatal(err)
			}
			if res, err := eng.Tick(ctx, ev.ID, "r1", time.Minute); err != nil || res.Promoted != 1 {
				t.Fatalf("tick %+v %v", res, err)
			}
			w := audit.New(eng, db, "replica-a", nil)
			for range 3 {
				if _, err := w.Round(ctx); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := db.Entries(ctx, ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, fmt.Sprintf("%s %s %q", e.UserID, e.Status, e.Lane))
			}
			// The priority attempt went first; the normal one still waits.
			if want := `[u_n WAITING "" u_p ACTIVE "priority"]`; fmt.Sprint(got) != want {
				t.Fatalf("entries %v, want %s", got, want)
			}
			grants, err := db.Grants(ctx, ev.ID)
			if err != nil || len(grants) != 1 || grants[0].RedeemedBy != "u_p" {
				t.Fatalf("grants %+v %v", grants, err)
			}
		})
	}
}
