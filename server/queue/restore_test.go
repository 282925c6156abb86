package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// waitingLine is n waiting attempts u_1..u_n at seqs 1..n.
func waitingLine(n int) []queue.RestoredAttempt {
	as := make([]queue.RestoredAttempt, n)
	for i := range as {
		as[i] = queue.RestoredAttempt{UserID: fmt.Sprintf("u_%d", i+1), Seq: int64(i + 1), Status: queue.StatusWaiting}
	}
	return as
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		attempts []queue.RestoredAttempt
		// live makes the event live before the restore.
		live  bool
		force bool
		// wantCode is the refusal, "" for success.
		wantCode queue.Code
	}{
		{
			// More attempts than one script call writes, so the chunks must add up.
			name:     "a long line in chunks",
			attempts: waitingLine(2500),
		},
		{
			// An unknown status is refused before anything changes.
			name:     "unknown status",
			attempts: []queue.RestoredAttempt{{UserID: "u_1", Seq: 1, Status: "LIMBO"}},
			live:     true,
			wantCode: queue.CodeBadRequest,
		},
		{
			// A live event is not overwritten without force.
			name:     "live event",
			attempts: []queue.RestoredAttempt{{UserID: "u_9", Seq: 9, Status: queue.StatusWaiting}},
			live:     true,
			wantCode: queue.CodeEventExists,
		},
		{
			// With force it is.
			name:     "live event forced",
			attempts: []queue.RestoredAttempt{{UserID: "u_9", Seq: 9, Status: queue.StatusWaiting}},
			live:     true,
			force:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, _, _ := MustEngine(t)
			ev := queue.Event{ID: "restored", Name: "restored", Seats: 100, Capacity: 1_000_000, AdmitBatch: 10,
				AdmitIntervalMS: 100, ActiveTTLS: 60, Policy: queue.PolicyBatch, CreatedAt: eng.Now()}
			var old queue.Entry
			if tt.live {
				if err := eng.CreateEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
				old = MustJoin(t, eng, ev.ID, "u_live")
			}
			attempts := tt.attempts
			err := eng.Restore(ctx, queue.Snapshot{Event: ev, Attempts: attempts}, tt.force)
			if tt.wantCode != "" {
				MustCode(t, err, tt.wantCode, "")
				// Nothing changed: the live attempt still waits first.
				if st := MustStatus(t, eng, ev.ID, old.Token); st.Status != queue.StatusWaiting || st.Position != 1 {
					t.Fatalf("the live attempt after a refused restore: %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			last := attempts[len(attempts)-1]
			// Tokens are minted the same way as at the join, so the restored
			// attempt answers to a token of its seq.
			en, created, err := eng.Join(ctx, ev.ID, last.UserID)
			if err != nil || created || en.Seq != last.Seq || en.Position != int64(len(attempts)) {
				t.Fatalf("joining as the last restored user: %+v, created %v, %v", en, created, err)
			}
			if tt.live {
				if _, err := eng.Status(ctx, ev.ID, old.Token); queue.ErrorCode(err) != queue.CodeTokenNotFound {
					t.Fatalf("the overwritten attempt: %v, want %s", err, queue.CodeTokenNotFound)
				}
			}
			next, _, err := eng.Join(ctx, ev.ID, "u_next")
			if err != nil || next.Seq != last.Seq+1 {
				t.Fatalf("the next join: %+v, %v; want seq %d", next, err, last.Seq+1)
			}
		})
	}
}

// TestLostEventNeverServedEmpty: after Redis lost an event, an engine whose
// WithLost knows the event answers UNAVAILABLE on every path (never
// EVENT_NOT_FOUND, never a fresh empty line), an unknown event still answers
// EVENT_NOT_FOUND, and a definition change does not bring the event back
// empty.
func TestLostEventNeverServedEmpty(t *testing.T) {
	ctx := t.Context()
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	var asked []string
	var mu sync.Mutex
	eng := queue.New(rdb, []byte("k"), queue.WithLost(func(_ context.Context, id string) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, id)
		return id == "lost"
	}))
	ev := MustEvent(t, eng, "lost", func(e *queue.Event) { e.Capacity = 5 })
	tok := MustJoin(t, eng, ev.ID, "u_1").Token
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	seat := queue.SeatID(ev.Seats, 0)
	me := queue.Actor{UserID: "u_1"}
	calls := []struct {
		name string
		call func(id string) error
	}{
		{"event", func(id string) error { _, err := eng.Event(ctx, id); return err }},
		{"join", func(id string) error { _, _, err := eng.Join(ctx, id, "u_2"); return err }},
		{"status", func(id string) error { _, err := eng.Status(ctx, id, tok); return err }},
		{"leave", func(id string) error { _, err := eng.Leave(ctx, id, tok, me); return err }},
		{"order", func(id string) error { e := ev; e.ID = id; _, err := eng.Order(ctx, e, tok, seat, me); return err }},
		{"seats", func(id string) error {
			e := ev
			e.ID = id
			_, err := queue.NewSeatMaps(eng, 0).Get(ctx, e, tok)
			return err
		}},
		{"definition change", func(id string) error { e := ev; e.ID = id; return eng.PutEvent(ctx, e) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			MustCode(t, c.call("lost"), queue.CodeUnavailable, "")
			MustCode(t, c.call("nope"), queue.CodeEventNotFound, "")
		})
	}
	if n := rdb.Exists(ctx, queue.Keys(ev.ID)...).Val(); n != 0 {
		t.Fatalf("calls on the lost event left %d of its keys in Redis", n)
	}
	if !slices.Contains(asked, "lost") || !slices.Contains(asked, "nope") {
		t.Fatalf("WithLost was asked about %v", asked)
	}
}

// TestReservedNumbers: an event hands out no seq and no admission number
// above the caps SQL reserved (join answers UNAVAILABLE, admission stops,
// nothing is half-done); Reserve raises the caps, never lowers them, and
// never brings a lost event back.
func TestReservedNumbers(t *testing.T) {
	ctx := t.Context()
	eng, clk, rdb := MustEngine(t)
	ev := queue.Event{ID: "capped", Name: "capped", Seats: 10, Capacity: 10, AdmitBatch: 10, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: eng.Now()}
	if err := eng.CreateMarked(ctx, ev, queue.Incarnation{Mark: "m1", SeqCap: 3, AdmitCap: 1}); err != nil {
		t.Fatal(err)
	}
	// u_1 is admitted on joining; u_2 would be too, but the one admission
	// number reserved is used up.
	if en := MustJoin(t, eng, ev.ID, "u_1"); en.Status != queue.StatusActive || en.AdmissionNo != 1 {
		t.Fatalf("u_1: %+v, want ACTIVE as admission 1", en)
	}
	if en := MustJoin(t, eng, ev.ID, "u_2"); en.Status != queue.StatusWaiting {
		t.Fatalf("u_2: %+v, want WAITING past the admission cap", en)
	}
	MustJoin(t, eng, ev.ID, "u_3")
	_, _, err := eng.Join(ctx, ev.ID, "u_4")
	MustCode(t, err, queue.CodeUnavailable, "")
	if seq := rdb.Get(ctx, queue.Keys(ev.ID)[1]).Val(); seq != "3" {
		t.Fatalf("seq counter %s after a refused join, want 3", seq)
	}
	clk.Advance(time.Second)
	if res, err := eng.Tick(ctx, ev.ID, "r1", time.Minute); err != nil || res.Promoted != 0 {
		t.Fatalf("tick at the admission cap: %+v, %v; want nobody promoted", res, err)
	}

	if err := eng.Reserve(ctx, ev.ID, queue.Incarnation{SeqCap: 10, AdmitCap: 2}); err != nil {
		t.Fatal(err)
	}
	if err := eng.Reserve(ctx, ev.ID, queue.Incarnation{SeqCap: 4, AdmitCap: 1}); err != nil {
		t.Fatal(err)
	}
	held, err := eng.Holds(ctx, []string{ev.ID, "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Held{Present: true, Incarnation: queue.Incarnation{Mark: "m1", SeqCap: 10, AdmitCap: 2}, Seq: 3, Admitted: 1}
	if held[0] != want || held[1].Present {
		t.Fatalf("holds %+v, want %+v and nothing for an unknown event", held, want)
	}
	if en := MustJoin(t, eng, ev.ID, "u_4"); en.Seq != 4 {
		t.Fatalf("u_4 after the reserve: %+v, want seq 4", en)
	}
	clk.Advance(time.Second)
	if res, err := eng.Tick(ctx, ev.ID, "r1", time.Minute); err != nil || res.Promoted != 1 {
		t.Fatalf("tick after the reserve: %+v, %v; want one promoted (admission 2)", res, err)
	}

	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	MustCode(t, eng.Reserve(ctx, ev.ID, queue.Incarnation{SeqCap: 20, AdmitCap: 20}), queue.CodeEventNotFound, "")
	if n := rdb.Exists(ctx, queue.Keys(ev.ID)...).Val(); n != 0 {
		t.Fatalf("a reserve on a lost event left %d keys", n)
	}
}

// TestRestoreResumesCounters: a restore resumes the counters at the
// snapshot's MaxSeq and Admitted (the old caps), not at the highest numbers
// the audit trail holds, and writes the new incarnation.
func TestRestoreResumesCounters(t *testing.T) {
	ctx := t.Context()
	eng, clk, _ := MustEngine(t)
	ev := queue.Event{ID: "resumed", Name: "resumed", Seats: 10, Capacity: 10, AdmitBatch: 1, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyBatch, CreatedAt: eng.Now()}
	inc := queue.Incarnation{Mark: "m2", SeqCap: 2000, AdmitCap: 1100}
	snap := queue.Snapshot{Event: ev, Attempts: waitingLine(3), MaxSeq: 1000, Admitted: 100, Incarnation: inc}
	if err := eng.Restore(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	if en := MustJoin(t, eng, ev.ID, "u_new"); en.Seq != 1001 || en.Position != 4 {
		t.Fatalf("join after the restore: %+v, want seq 1001 at place 4", en)
	}
	clk.Advance(time.Second)
	if res, err := eng.Tick(ctx, ev.ID, "r1", time.Minute); err != nil || res.Promoted != 1 {
		t.Fatalf("tick: %+v, %v", res, err)
	}
	st := MustStatus(t, eng, ev.ID, MustJoin(t, eng, ev.ID, "u_1").Token)
	if st.Status != queue.StatusActive || st.AdmissionNo != 101 {
		t.Fatalf("u_1 after the first tick: %+v, want ACTIVE as admission 101", st)
	}
	held, err := eng.Holds(ctx, []string{ev.ID})
	if err != nil || held[0].Incarnation != inc {
		t.Fatalf("held %+v (%v), want the incarnation %+v", held, err, inc)
	}
}

// TestRestoreLock: a restore refuses while another holds the event's lock,
// and releases its own.
func TestRestoreLock(t *testing.T) {
	ctx := t.Context()
	eng, _, rdb := MustEngine(t)
	ev := queue.Event{ID: "locked", Name: "locked", Seats: 10, Capacity: 2, AdmitBatch: 1, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: eng.Now()}
	snap := queue.Snapshot{Event: ev, Attempts: waitingLine(2)}
	if err := rdb.Set(ctx, queue.RestoreLockKey(ev.ID), "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err := eng.Restore(ctx, snap, true)
	MustCode(t, err, queue.CodeEventExists, "")
	if _, err := eng.Event(ctx, ev.ID); queue.ErrorCode(err) != queue.CodeEventNotFound {
		t.Fatalf("a refused restore wrote the event: %v", err)
	}
	if got := rdb.Get(ctx, queue.RestoreLockKey(ev.ID)).Val(); got != "other" {
		t.Fatalf("the other holder's lock is %q", got)
	}
	rdb.Del(ctx, queue.RestoreLockKey(ev.ID))
	if err := eng.Restore(ctx, snap, true); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, queue.RestoreLockKey(ev.ID)).Val(); n != 0 {
		t.Fatalf("lock left behind after the restore")
	}
}

// TestRestoreSupersedesEarlierLiveAttempts: a snapshot holding two live
// attempts of one user (SQL missed the end of the earlier) restores the
// later; the earlier ends LEFT in Redis with a left record, so the audit
// trail tells SQL the same.
func TestRestoreSupersedesEarlierLiveAttempts(t *testing.T) {
	ctx := t.Context()
	eng, clk, _ := MustEngine(t)
	ev := queue.Event{ID: "merged", Name: "merged", Seats: 10, Capacity: 10, AdmitBatch: 1, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyBatch, Paused: true, CreatedAt: eng.Now()}
	at := clk.Now()
	snap := queue.Snapshot{Event: ev, Attempts: []queue.RestoredAttempt{
		{UserID: "u_a", Seq: 1, Status: queue.StatusWaiting},
		{UserID: "u_b", Seq: 2, Status: queue.StatusActive, AdmissionNo: 1, AdmittedAt: at, ExpiresAt: at.Add(time.Minute)},
		{UserID: "u_c", Seq: 3, Status: queue.StatusWaiting},
		{UserID: "u_a", Seq: 4, Status: queue.StatusWaiting},
		{UserID: "u_b", Seq: 5, Status: queue.StatusWaiting, Lane: queue.LanePriority},
	}}
	if err := eng.Restore(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		user string
		seq  int64
		want queue.Status
	}{
		{"earlier waiting", "u_a", 1, queue.StatusLeft},
		{"earlier active", "u_b", 2, queue.StatusLeft},
		{"alone", "u_c", 3, queue.StatusWaiting},
		{"later waiting", "u_a", 4, queue.StatusWaiting},
		{"later priority", "u_b", 5, queue.StatusWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st := MustStatus(t, eng, ev.ID, queue.MintToken(eng, ev.ID, tc.seq, tc.user)); st.Status != tc.want {
				t.Errorf("%s seq %d: %s, want %s", tc.user, tc.seq, st.Status, tc.want)
			}
		})
	}
	var left []string
	for _, r := range MustRecords(t, eng, ev.ID) {
		left = append(left, fmt.Sprintf("%s %d %s waiting=%v", r.Kind, r.Seq, r.UserID, r.WasWaiting))
	}
	if want := []string{"left 1 u_a waiting=true", "left 2 u_b waiting=false"}; !slices.Equal(left, want) {
		t.Errorf("records %q, want %q", left, want)
	}
	if en := MustJoin(t, eng, ev.ID, "u_a"); en.Seq != 4 {
		t.Errorf("u_a joins again: seq %d, want the attempt it holds, 4", en.Seq)
	}
}
