package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

const ms = time.Millisecond

func rec(id string, kind queue.RecordKind, seq int64, user string, at time.Time) queue.Record {
	r := queue.Record{ID: id, Kind: kind, EventID: "ev1", Seq: seq, UserID: user, At: at}
	if kind == queue.RecordAdmitted {
		r.ExpiresAt = at.Add(5 * time.Minute)
	}
	return r
}

func doneRec(id string, seq int64, user string, at time.Time, seat, orderID string) queue.Record {
	r := rec(id, queue.RecordDone, seq, user, at)
	r.Seat, r.OrderID = seat, orderID
	return r
}

// lifecycle is a stream in order: alice buys, bob waits, a bot is admitted
// and expires, carol leaves while waiting.
func lifecycle() []queue.Record {
	return []queue.Record{
		rec("1000-0", queue.RecordJoined, 1, "alice", t0),
		rec("1000-1", queue.RecordJoined, 2, "bob", t0.Add(1*ms)),
		rec("1000-2", queue.RecordJoined, 3, "VIRTUAL:bot-1", t0.Add(2*ms)),
		rec("1000-3", queue.RecordJoined, 4, "carol", t0.Add(3*ms)),
		rec("2000-0", queue.RecordAdmitted, 1, "alice", t0.Add(time.Second)),
		rec("2000-1", queue.RecordAdmitted, 3, "VIRTUAL:bot-1", t0.Add(time.Second)),
		rec("3000-0", queue.RecordLeft, 4, "carol", t0.Add(2*time.Second)),
		doneRec("4000-0", 1, "alice", t0.Add(3*time.Second), "A-1", "order-1"),
		rec("9000-0", queue.RecordExpired, 3, "VIRTUAL:bot-1", t0.Add(5*time.Minute)),
	}
}

func lifecycleEntries() []store.Entry {
	return []store.Entry{
		{EventID: "ev1", Seq: 1, UserID: "alice", UserType: queue.UserActual, Status: queue.StatusDone,
			StatusAt: t0.Add(3 * time.Second), JoinedAt: tp(t0), AdmittedAt: tp(t0.Add(time.Second)), FinishedAt: tp(t0.Add(3 * time.Second)),
			JoinedID: "1000-0"},
		{EventID: "ev1", Seq: 2, UserID: "bob", UserType: queue.UserActual, Status: queue.StatusWaiting,
			StatusAt: t0.Add(1 * ms), JoinedAt: tp(t0.Add(1 * ms)), JoinedID: "1000-1"},
		{EventID: "ev1", Seq: 3, UserID: "VIRTUAL:bot-1", UserType: queue.UserVirtual, Status: queue.StatusExpired,
			StatusAt: t0.Add(5 * time.Minute), JoinedAt: tp(t0.Add(2 * ms)), AdmittedAt: tp(t0.Add(time.Second)), FinishedAt: tp(t0.Add(5 * time.Minute)),
			JoinedID: "1000-2"},
		{EventID: "ev1", Seq: 4, UserID: "carol", UserType: queue.UserActual, Status: queue.StatusLeft,
			StatusAt: t0.Add(2 * time.Second), JoinedAt: tp(t0.Add(3 * ms)), FinishedAt: tp(t0.Add(2 * time.Second)), JoinedID: "1000-3"},
	}
}

func lifecycleOrders() []store.Order {
	return []store.Order{{OrderID: "order-1", EventID: "ev1", Seat: "A-1", UserID: "alice", Seq: 1, CreatedAt: t0.Add(3 * time.Second)}}
}

func mustWrite(t testing.TB, ctx context.Context, s *store.Store, recs []queue.Record) {
	t.Helper()
	if _, err := s.WriteRecords(ctx, recs); err != nil {
		t.Fatalf("WriteRecords(%d records): %v", len(recs), err)
	}
}

// snapshot is everything WriteRecords wrote for one event.
type snapshot struct {
	Entries     []store.Entry
	Transitions map[int64][]store.Transition
	Orders      []store.Order
}

func mustSnapshot(t *testing.T, ctx context.Context, s *store.Store, eventID string) snapshot {
	t.Helper()
	snap := snapshot{Transitions: map[int64][]store.Transition{}}
	var err error
	if snap.Entries, err = s.Entries(ctx, eventID); err != nil {
		t.Fatal(err)
	}
	for _, e := range snap.Entries {
		if snap.Transitions[e.Seq], err = s.Transitions(ctx, eventID, e.Seq); err != nil {
			t.Fatal(err)
		}
	}
	if snap.Orders, err = s.Orders(ctx, eventID); err != nil {
		t.Fatal(err)
	}
	return snap
}

func mustEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// transitionsOf is ts without their ids, checking that every one has an id
// but a joined one the entries row holds.
func transitionsOf(t *testing.T, ts []store.Transition) []store.Transition {
	t.Helper()
	out := make([]store.Transition, len(ts))
	for i, tr := range ts {
		if (tr.ID == 0) != (tr.Status == queue.StatusWaiting) {
			t.Fatalf("transition %d (%s) has id %d", i, tr.Status, tr.ID)
		}
		tr.ID = 0
		out[i] = tr
	}
	return out
}

func mustLifecycle(t *testing.T, ctx context.Context, s *store.Store) {
	t.Helper()
	snap := mustSnapshot(t, ctx, s, "ev1")
	mustEqual(t, "entries", snap.Entries, lifecycleEntries())
	mustEqual(t, "orders", snap.Orders, lifecycleOrders())
	mustEqual(t, "transitions of alice", transitionsOf(t, snap.Transitions[1]), []store.Transition{
		{StreamID: "1000-0", EventID: "ev1", Seq: 1, UserID: "alice", Status: queue.StatusWaiting, At: t0},
		{StreamID: "2000-0", EventID: "ev1", Seq: 1, UserID: "alice", Status: queue.StatusActive, At: t0.Add(time.Second)},
		{StreamID: "4000-0", EventID: "ev1", Seq: 1, UserID: "alice", Status: queue.StatusDone, At: t0.Add(3 * time.Second)},
	})
	mustEqual(t, "transitions of carol", transitionsOf(t, snap.Transitions[4]), []store.Transition{
		{StreamID: "1000-3", EventID: "ev1", Seq: 4, UserID: "carol", Status: queue.StatusWaiting, At: t0.Add(3 * ms)},
		{StreamID: "3000-0", EventID: "ev1", Seq: 4, UserID: "carol", Status: queue.StatusLeft, At: t0.Add(2 * time.Second)},
	})
	for seq, n := range map[int64]int{1: 3, 2: 1, 3: 3, 4: 2} {
		if got := len(snap.Transitions[seq]); got != n {
			t.Errorf("seq %d has %d transitions, want %d", seq, got, n)
		}
	}
}

func TestWriteRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, s *store.Store)
	}{
		// joined -> admitted -> done (with its order), left and expired, in one batch.
		{"lifecycle in one batch", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, lifecycle())
			mustLifecycle(t, ctx, s)
		}},
		// The same stream written one record per call ends in the same state.
		{"lifecycle one record per batch", func(t *testing.T, ctx context.Context, s *store.Store) {
			for _, r := range lifecycle() {
				mustWrite(t, ctx, s, []queue.Record{r})
			}
			mustLifecycle(t, ctx, s)
		}},
		// Redelivering the same batch twice changes nothing, ids included.
		{"redelivery", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, lifecycle())
			before := mustSnapshot(t, ctx, s, "ev1")
			mustWrite(t, ctx, s, lifecycle())
			mustWrite(t, ctx, s, lifecycle())
			mustEqual(t, "after redelivery", mustSnapshot(t, ctx, s, "ev1"), before)
			mustLifecycle(t, ctx, s)
		}},
		// After a crash the worker re-reads from an older offset: batches overlap.
		{"overlapping redelivery", func(t *testing.T, ctx context.Context, s *store.Store) {
			all := lifecycle()
			mustWrite(t, ctx, s, all[:6])
			mustWrite(t, ctx, s, all[2:8])
			mustWrite(t, ctx, s, all[5:])
			mustLifecycle(t, ctx, s)
		}},
		// Consumers racing on the same pending batch end as one write would.
		{"concurrent redelivery", func(t *testing.T, ctx context.Context, s *store.Store) {
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					if _, err := s.WriteRecords(ctx, lifecycle()); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			mustLifecycle(t, ctx, s)
		}},
		// A batch in reverse order ends in the latest state.
		{"reversed batch", func(t *testing.T, ctx context.Context, s *store.Store) {
			all := lifecycle()
			rev := make([]queue.Record, len(all))
			for i, r := range all {
				rev[len(all)-1-i] = r
			}
			mustWrite(t, ctx, s, rev)
			mustLifecycle(t, ctx, s)
		}},
		// Records older than the stored state never roll the status back;
		// they only fill in times still missing.
		{"out of order", func(t *testing.T, ctx context.Context, s *store.Store) {
			all := lifecycle()
			// alice's done and bob's join first, then the older records.
			mustWrite(t, ctx, s, []queue.Record{all[7], all[1]})
			mustWrite(t, ctx, s, []queue.Record{all[4], all[0]}) // admitted, joined: older than done
			mustWrite(t, ctx, s, all[2:4])
			// bot-1 expired before the admitted record arrives; carol left.
			mustWrite(t, ctx, s, []queue.Record{all[8], all[6]})
			mustWrite(t, ctx, s, []queue.Record{all[5]})
			mustLifecycle(t, ctx, s)

			// A finished state is not replaced by an older finished one.
			mustWrite(t, ctx, s, []queue.Record{rec("3500-0", queue.RecordLeft, 1, "alice", t0.Add(2*time.Second))})
			got, err := s.Entries(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "alice after an older left", got[0], lifecycleEntries()[0])
		}},
		// The life cycle only moves forward, even when a server's clock made
		// the later record look older.
		{"clock skew", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, []queue.Record{
				rec("1-0", queue.RecordJoined, 1, "dave", t0),
				rec("2-0", queue.RecordAdmitted, 1, "dave", t0.Add(10*time.Second)),
			})
			mustWrite(t, ctx, s, []queue.Record{rec("3-0", queue.RecordExpired, 1, "dave", t0.Add(9*time.Second))})
			got, err := s.Entries(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "dave", got, []store.Entry{{
				EventID: "ev1", Seq: 1, UserID: "dave", UserType: queue.UserActual, Status: queue.StatusExpired,
				StatusAt: t0.Add(9 * time.Second), JoinedAt: tp(t0), AdmittedAt: tp(t0.Add(10 * time.Second)), FinishedAt: tp(t0.Add(9 * time.Second)),
				JoinedID: "1-0",
			}})
		}},
		// 10,000 joined records in one batch: one WAITING entry each, in seq order.
		{"10000 joined", func(t *testing.T, ctx context.Context, s *store.Store) {
			const n = 10000
			recs := make([]queue.Record, n)
			for i := range n {
				user := fmt.Sprintf("user-%d", i)
				if i%2 == 1 {
					user = queue.VirtualPrefix + user
				}
				recs[i] = rec(fmt.Sprintf("%d-0", 1000+i), queue.RecordJoined, int64(i+1), user, t0.Add(time.Duration(i)*time.Microsecond))
			}
			mustWrite(t, ctx, s, recs)
			mustWrite(t, ctx, s, recs[n-1500:]) // and a redelivered tail
			got, err := s.Entries(ctx, "ev1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d entries, want %d", len(got), n)
			}
			for i, e := range got {
				at := t0.Add(time.Duration(i) * time.Microsecond)
				want := store.Entry{EventID: "ev1", Seq: int64(i + 1), UserID: recs[i].UserID, UserType: queue.TypeOf(recs[i].UserID),
					Status: queue.StatusWaiting, StatusAt: at, JoinedAt: tp(at), JoinedID: recs[i].Key()}
				if !reflect.DeepEqual(e, want) {
					t.Fatalf("entry %d:\n got  %+v\n want %+v", i, e, want)
				}
			}
			if got[1].UserType != queue.UserVirtual || got[0].UserType != queue.UserActual {
				t.Fatalf("user types %s, %s", got[0].UserType, got[1].UserType)
			}
			for _, seq := range []int64{1, n / 2, n} {
				trs, err := s.Transitions(ctx, "ev1", seq)
				if err != nil || len(trs) != 1 {
					t.Fatalf("transitions of %d = %+v, %v; want one", seq, trs, err)
				}
			}
		}},
		// The records of batch entries (runs of joins, Part from 1) go in
		// as runs: split where the user type, lane, stream entry or seq
		// breaks, or where the token has another record in the batch; a
		// join whose token SQL already holds fills in its joined fields.
		{"runs of joins", func(t *testing.T, ctx context.Context, s *store.Store) {
			part := func(id string, p int, seq int64, user string, lane queue.Lane, at time.Time) queue.Record {
				r := rec(id, queue.RecordJoined, seq, user, at)
				r.Part, r.Lane = p, lane
				return r
			}
			t1 := t0.Add(5 * ms)
			mustWrite(t, ctx, s, []queue.Record{rec("6000-0", queue.RecordAdmitted, 8, "h", t0.Add(time.Second))})
			batch := []queue.Record{
				part("5000-0", 1, 1, "a", "", t0),
				part("5000-0", 2, 2, "b", "", t0),
				part("5000-0", 3, 3, "c", "", t0),
				part("5000-0", 4, 4, queue.VirtualPrefix+"d", "", t0),
				part("5000-0", 5, 5, queue.VirtualPrefix+"e", queue.LanePriority, t0),
				part("5001-0", 1, 6, "g", "", t1),
				part("5001-0", 2, 7, "f", "", t1),
				part("5001-0", 3, 8, "h", "", t1),
				rec("5002-0", queue.RecordLeft, 2, "b", t1),
			}
			mustWrite(t, ctx, s, batch)
			before := mustSnapshot(t, ctx, s, "ev1")
			mustWrite(t, ctx, s, batch)
			mustEqual(t, "after redelivery", mustSnapshot(t, ctx, s, "ev1"), before)

			waiting := func(seq int64, user string, lane queue.Lane, at time.Time, key string) store.Entry {
				return store.Entry{EventID: "ev1", Seq: seq, UserID: user, UserType: queue.TypeOf(user), Status: queue.StatusWaiting,
					StatusAt: at, JoinedAt: tp(at), Lane: lane, JoinedID: key}
			}
			left := waiting(2, "b", "", t0, "5000-0/2")
			left.Status, left.StatusAt, left.FinishedAt = queue.StatusLeft, t1, tp(t1)
			active := waiting(8, "h", "", t1, "5001-0/3")
			active.Status, active.StatusAt, active.AdmittedAt = queue.StatusActive, t0.Add(time.Second), tp(t0.Add(time.Second))
			mustEqual(t, "entries", before.Entries, []store.Entry{
				waiting(1, "a", "", t0, "5000-0/1"), left, waiting(3, "c", "", t0, "5000-0/3"),
				waiting(4, queue.VirtualPrefix+"d", "", t0, "5000-0/4"),
				waiting(5, queue.VirtualPrefix+"e", queue.LanePriority, t0, "5000-0/5"),
				waiting(6, "g", "", t1, "5001-0/1"), waiting(7, "f", "", t1, "5001-0/2"), active,
			})
			mustEqual(t, "transitions of h", transitionsOf(t, before.Transitions[8]), []store.Transition{
				{StreamID: "5001-0/3", EventID: "ev1", Seq: 8, UserID: "h", Status: queue.StatusWaiting, At: t1},
				{StreamID: "6000-0", EventID: "ev1", Seq: 8, UserID: "h", Status: queue.StatusActive, At: t0.Add(time.Second)},
			})
			mustEqual(t, "transitions of e", transitionsOf(t, before.Transitions[5]), []store.Transition{
				{StreamID: "5000-0/5", EventID: "ev1", Seq: 5, UserID: queue.VirtualPrefix + "e", Status: queue.StatusWaiting,
					At: t0, Lane: queue.LanePriority},
			})
		}},
		// A joined record that comes after the token's later records, in
		// a run of its own batch, fills in the joined fields and keeps the
		// later status; Transitions lists each record once.
		{"runs joined late", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, []queue.Record{
				rec("2000-0", queue.RecordAdmitted, 1, "a", t0.Add(time.Second)),
				rec("3000-0", queue.RecordLeft, 2, "b", t0.Add(2*time.Second)),
				doneRec("4000-0", 3, "c", t0.Add(3*time.Second), "S1", "o1"),
			})
			var run []queue.Record
			for i, u := range []string{"a", "b", "c"} {
				r := rec("1000-0", queue.RecordJoined, int64(i+1), u, t0)
				r.Part = i + 1
				run = append(run, r)
			}
			mustWrite(t, ctx, s, run)
			snap := mustSnapshot(t, ctx, s, "ev1")
			for i, want := range []queue.Status{queue.StatusActive, queue.StatusLeft, queue.StatusDone} {
				e := snap.Entries[i]
				key := fmt.Sprintf("1000-0/%d", i+1)
				if e.Status != want || e.JoinedAt == nil || !e.JoinedAt.Equal(t0) || e.JoinedID != key {
					t.Errorf("entry %d: %+v, want %s joined at t0 by %s", i, e, want, key)
				}
				trs := snap.Transitions[e.Seq]
				if len(trs) != 2 || trs[0].StreamID != key || trs[0].Status != queue.StatusWaiting {
					t.Errorf("transitions of %d: %+v", e.Seq, trs)
				}
			}
		}},
		// A batch written again after a rebuild's fence passed it (a retry
		// of a commit the writer could not confirm): its joined records are
		// now fenced and get transition rows, and Transitions still lists
		// each joined record once.
		{"retry across a fence", func(t *testing.T, ctx context.Context, s *store.Store) {
			if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
				t.Fatal(err)
			}
			batch := []queue.Record{rec("1000-0", queue.RecordJoined, 1, "a", t0), rec("1000-1", queue.RecordJoined, 2, "b", t0)}
			mustWrite(t, ctx, s, batch)
			if _, _, err := s.Reincarnate(ctx, "ev1", "m2", time.UnixMilli(5000)); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, ctx, s, batch)
			for seq, key := range map[int64]string{1: "1000-0", 2: "1000-1"} {
				trs, err := s.Transitions(ctx, "ev1", seq)
				if err != nil || len(trs) != 1 || trs[0].StreamID != key {
					t.Errorf("transitions of %d = %+v, %v; want %s once", seq, trs, err, key)
				}
			}
		}},
		// Text goes through as it is: quotes, backslashes, control
		// characters, non-ASCII letters and spaces in user ids, seats and
		// order ids.
		{"any text", func(t *testing.T, ctx context.Context, s *store.Store) {
			odd := []string{`say "hi"`, `back\slash\`, "new\nline\ttab\r", "bell\x07 and \x1f", "Zoë 🎟 ✓", "</script>&<'", " spaced "}
			var recs []queue.Record
			for i, u := range odd {
				seq := int64(i + 1)
				recs = append(recs, rec(fmt.Sprintf("%d-0", seq), queue.RecordJoined, seq, u, t0),
					doneRec(fmt.Sprintf("%d-1", seq), seq, u, t0.Add(time.Second), "seat "+u, "order "+u))
			}
			mustWrite(t, ctx, s, recs)
			snap := mustSnapshot(t, ctx, s, "ev1")
			if len(snap.Entries) != len(odd) || len(snap.Orders) != len(odd) {
				t.Fatalf("%d entries and %d orders, want %d of each", len(snap.Entries), len(snap.Orders), len(odd))
			}
			for i, e := range snap.Entries {
				if e.UserID != odd[i] || e.Status != queue.StatusDone {
					t.Errorf("entry %d: user %q, status %s; want %q, DONE", i, e.UserID, e.Status, odd[i])
				}
				for _, tr := range snap.Transitions[e.Seq] {
					if tr.UserID != odd[i] {
						t.Errorf("transition %s: user %q, want %q", tr.StreamID, tr.UserID, odd[i])
					}
				}
			}
			for _, o := range snap.Orders {
				u := odd[o.Seq-1]
				if o.UserID != u || o.Seat != "seat "+u || o.OrderID != "order "+u {
					t.Errorf("order of seq %d: %+v, want user, seat and order id of %q", o.Seq, o, u)
				}
			}
		}},
		// The same through a run of joins, with virtual users among them
		// and a long id.
		{"any text in runs", func(t *testing.T, ctx context.Context, s *store.Store) {
			odd := []string{`say "hi"`, queue.VirtualPrefix + `back\slash\`, "new\nline\ttab\r", "bell\x07 and \x1f",
				queue.VirtualPrefix + "Zoë 🎟 ✓", "</script>&<'", " spaced ", "[1,2]", "null", strings.Repeat("long✓", 2000)}
			var recs []queue.Record
			for i, u := range odd {
				r := rec("1000-0", queue.RecordJoined, int64(i+1), u, t0)
				r.Part = i + 1
				recs = append(recs, r)
			}
			mustWrite(t, ctx, s, recs)
			snap := mustSnapshot(t, ctx, s, "ev1")
			if len(snap.Entries) != len(odd) {
				t.Fatalf("%d entries, want %d", len(snap.Entries), len(odd))
			}
			for i, e := range snap.Entries {
				if e.UserID != odd[i] || e.UserType != queue.TypeOf(odd[i]) || e.JoinedID != fmt.Sprintf("1000-0/%d", i+1) {
					t.Errorf("entry %d: user %q (%s), joined %s; want %q", i, e.UserID, e.UserType, e.JoinedID, odd[i])
				}
				if trs := snap.Transitions[e.Seq]; len(trs) != 1 || trs[0].UserID != odd[i] {
					t.Errorf("transitions of %d: %+v", e.Seq, trs)
				}
			}
		}},
		// Records of several events in one batch stay apart.
		{"two events", func(t *testing.T, ctx context.Context, s *store.Store) {
			other := rec("1000-0", queue.RecordJoined, 1, "zoe", t0) // same stream id and seq, other event
			other.EventID = "ev2"
			mustWrite(t, ctx, s, append(lifecycle(), other))
			mustLifecycle(t, ctx, s)
			got, err := s.Entries(ctx, "ev2")
			if err != nil || len(got) != 1 || got[0].UserID != "zoe" || got[0].Status != queue.StatusWaiting {
				t.Fatalf("ev2 entries = %+v, %v", got, err)
			}
		}},
		// Transitions at the same instant are listed in stream order.
		{"equal times", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, []queue.Record{
				rec("1-0", queue.RecordJoined, 7, "erin", t0),
				rec("1-1", queue.RecordAdmitted, 7, "erin", t0),
				doneRec("1-2", 7, "erin", t0, "B-2", "order-7"),
			})
			trs, err := s.Transitions(ctx, "ev1", 7)
			if err != nil {
				t.Fatal(err)
			}
			var got []queue.Status
			for _, tr := range trs {
				got = append(got, tr.Status)
			}
			mustEqual(t, "statuses", got, []queue.Status{queue.StatusWaiting, queue.StatusActive, queue.StatusDone})
			es, err := s.Entries(ctx, "ev1")
			if err != nil || len(es) != 1 || es[0].Status != queue.StatusDone {
				t.Fatalf("entries = %+v, %v; want one DONE", es, err)
			}
		}},
		// A done record without an order id ends the entry but makes no order.
		{"done without order", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, []queue.Record{rec("1-0", queue.RecordDone, 1, "frank", t0)})
			orders, err := s.Orders(ctx, "ev1")
			if err != nil || len(orders) != 0 {
				t.Fatalf("orders = %+v, %v; want none", orders, err)
			}
		}},
		// A malformed record fails the whole batch with BAD_REQUEST and writes nothing.
		{"invalid records", func(t *testing.T, ctx context.Context, s *store.Store) {
			for name, bad := range map[string]queue.Record{
				"unknown kind":  {ID: "9-0", Kind: "teleported", EventID: "ev1", Seq: 9, UserID: "x", At: t0},
				"no stream id":  {Kind: queue.RecordJoined, EventID: "ev1", Seq: 9, UserID: "x", At: t0},
				"no event id":   {ID: "9-0", Kind: queue.RecordJoined, Seq: 9, UserID: "x", At: t0},
				"empty records": {},
			} {
				_, err := s.WriteRecords(ctx, append(lifecycle(), bad))
				if queue.ErrorCode(err) != queue.CodeBadRequest {
					t.Fatalf("%s: error %v, want BAD_REQUEST", name, err)
				}
			}
			if es, err := s.Entries(ctx, "ev1"); err != nil || len(es) != 0 {
				t.Fatalf("entries = %+v, %v; want none", es, err)
			}
		}},
		// Nothing to write is not an error.
		{"empty batch", func(t *testing.T, ctx context.Context, s *store.Store) {
			mustWrite(t, ctx, s, nil)
		}},
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					tt.run(t, t.Context(), storetest.MustOpen(t, dialect))
				})
			}
		})
	}
}

// TestWriteRecordsSplitBatches has two writers redeliver overlapping
// batches: the same joins, interleaved from two stream entries, each with
// the admitted records of the other's tokens. No write fails, as writers
// locking rows in two orders would deadlock on PostgreSQL, and both end in
// the same state.
func TestWriteRecordsSplitBatches(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.MustOpen(t, dialect)
			const n = 200
			for round := range 5 {
				base := int64(round * 2 * n)
				var a, b []queue.Record
				for i := int64(1); i <= n; i++ {
					x := rec(fmt.Sprintf("%d-0", base), queue.RecordJoined, base+i, fmt.Sprintf("x%d", base+i), t0)
					y := rec(fmt.Sprintf("%d-1", base), queue.RecordJoined, base+n+i, fmt.Sprintf("y%d", base+i), t0)
					x.Part, y.Part = int(i), int(i)
					a, b = append(a, x, y), append(b, x, y)
				}
				for i := int64(1); i <= n; i++ {
					a = append(a, rec(fmt.Sprintf("%d-2", base), queue.RecordAdmitted, base+n+i, fmt.Sprintf("y%d", base+i), t0.Add(time.Second)))
					b = append(b, rec(fmt.Sprintf("%d-3", base), queue.RecordAdmitted, base+i, fmt.Sprintf("x%d", base+i), t0.Add(time.Second)))
				}
				var wg sync.WaitGroup
				for _, batch := range [][]queue.Record{a, b} {
					wg.Go(func() {
						if _, err := s.WriteRecords(ctx, batch); err != nil {
							t.Errorf("round %d: %v", round, err)
						}
					})
				}
				wg.Wait()
			}
			es, err := s.Entries(ctx, "ev1")
			if err != nil || len(es) != 5*2*n {
				t.Fatalf("%d entries, %v; want %d", len(es), err, 5*2*n)
			}
			for _, e := range es {
				if e.Status != queue.StatusActive || e.JoinedID == "" {
					t.Fatalf("entry %+v, want ACTIVE with its joined record", e)
				}
			}
		})
	}
}

// BenchmarkWriteRecords writes batches of 1,000 records to SQLite, as the
// write-behind worker would: each batch joins 400 tokens, admits 300 of
// them, and 200 buy and 100 expire.
func BenchmarkWriteRecords(b *testing.B) {
	s := storetest.MustOpen(b, store.DialectSQLite)
	ctx := b.Context()
	const tokens = 400
	var (
		seq     int64
		stream  int64
		batches int
	)
	next := func(kind queue.RecordKind, seq int64, at time.Time) queue.Record {
		stream++
		r := rec(fmt.Sprintf("%d-0", stream), kind, seq, fmt.Sprintf("VIRTUAL:bot-%d", seq), at)
		if kind == queue.RecordDone {
			r.Seat, r.OrderID = fmt.Sprintf("S-%d", seq), fmt.Sprintf("order-%d", seq)
		}
		return r
	}
	batch := make([]queue.Record, 0, 1000)
	for b.Loop() {
		b.StopTimer()
		batch = batch[:0]
		at := t0.Add(time.Duration(seq) * time.Millisecond)
		for i := range int64(tokens) {
			batch = append(batch, next(queue.RecordJoined, seq+i+1, at))
		}
		for i := range int64(300) {
			batch = append(batch, next(queue.RecordAdmitted, seq+i+1, at.Add(time.Second)))
		}
		for i := range int64(300) {
			kind := queue.RecordDone
			if i >= 200 {
				kind = queue.RecordExpired
			}
			batch = append(batch, next(kind, seq+i+1, at.Add(2*time.Second)))
		}
		seq += tokens
		b.StartTimer()
		if _, err := s.WriteRecords(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batches++
	}
	b.ReportMetric(float64(batches*len(batch))/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkWriteJoins writes what the audit writer reads under a burst of
// joins: batches of 2,000 joined records (queue audit.DefaultBatch), each a
// new token, from stream entries of 40 (a join script's run). ns/record is
// the SQL part of a join's server CPU.
func BenchmarkWriteJoins(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			s := storetest.MustOpen(b, dialect)
			ctx := b.Context()
			const size = 2000
			batch := make([]queue.Record, size)
			var (
				seq int64
				cpu time.Duration
			)
			for b.Loop() {
				b.StopTimer()
				at := t0.Add(time.Duration(seq) * time.Millisecond)
				for i := range batch {
					seq++
					batch[i] = rec(fmt.Sprintf("%d-0", (seq-1)/40), queue.RecordJoined, seq, fmt.Sprintf("VIRTUAL:j%d", seq), at)
					batch[i].Part = int((seq-1)%40) + 1
				}
				b.StartTimer()
				before := processCPU(b)
				if _, err := s.WriteRecords(ctx, batch); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU(b) - before
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/record")
			// The process's CPU, the SQLite library's included (it runs in
			// process); PostgreSQL's server is not counted.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*size), "cpu-ns/record")
		})
	}
}

// processCPU is the CPU time the test process has used so far.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
