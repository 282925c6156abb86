package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
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
			ev := MustEvent(t, eng, "restored", func(e *queue.Event) { e.Policy = queue.PolicyBatch; e.Capacity = 1_000_000 })
			var old queue.Entry
			if tt.live {
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

// TestSyncThenRestore: Redis loses its data and a server starts (Sync)
// before `recover` runs. The re-mirrored event resumes its seq counter from
// the audit trail, so new joins never reuse an audited seq, and the restore
// that follows merges the audited line in front of them without force.
func TestSyncThenRestore(t *testing.T) {
	ctx := t.Context()
	eng, _, rdb := MustEngine(t)
	ev := MustEvent(t, eng, "lost", func(e *queue.Event) { e.Paused = true })
	var old []queue.Entry
	for _, u := range []string{"u_1", "u_2", "u_3"} {
		old = append(old, MustJoin(t, eng, ev.ID, u))
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cat := queue.NewCatalog(&memStore{events: map[string]queue.Event{ev.ID: ev}, maxSeq: map[string]int64{ev.ID: 3}}, eng)
	if n, err := cat.Sync(ctx); err != nil || n != 1 {
		t.Fatalf("Sync = %d, %v; want 1 event mirrored", n, err)
	}
	fresh := MustJoin(t, eng, ev.ID, "u_new")
	again := MustJoin(t, eng, ev.ID, "u_2") // u_2 joined again before the restore
	if fresh.Seq != 4 || again.Seq != 5 {
		t.Fatalf("joins after Sync got seqs %d, %d; want 4, 5", fresh.Seq, again.Seq)
	}
	snap := queue.Snapshot{Event: ev, Attempts: waitingLine(3), MaxSeq: 3}
	if err := eng.Restore(ctx, snap, false); err != nil {
		t.Fatalf("restore after Sync without force: %v", err)
	}
	want := []struct {
		name   string
		token  string
		status queue.Status
		pos    int64
	}{
		{"old u_1 keeps its place", old[0].Token, queue.StatusWaiting, 1},
		{"old u_2 gave way to its newer attempt", old[1].Token, queue.StatusLeft, 0},
		{"old u_3 keeps its place", old[2].Token, queue.StatusWaiting, 2},
		{"the join after Sync waits behind", fresh.Token, queue.StatusWaiting, 3},
		{"u_2's newer attempt waits behind", again.Token, queue.StatusWaiting, 4},
	}
	for _, w := range want {
		st := MustStatus(t, eng, ev.ID, w.token)
		if st.Status != w.status || st.Position != w.pos {
			t.Errorf("%s: %s at %d, want %s at %d", w.name, st.Status, st.Position, w.status, w.pos)
		}
	}
	// The merge cleared the mark: the event is live like any other now.
	MustCode(t, eng.Restore(ctx, snap, false), queue.CodeEventExists, "")
	if next := MustJoin(t, eng, ev.ID, "u_last"); next.Seq != 6 {
		t.Fatalf("next join seq %d, want 6", next.Seq)
	}
}

// TestSyncWithoutAudit: an event with nothing audited is mirrored as new:
// no seeded counter, no recovery mark, so a live line is not merged into.
func TestSyncWithoutAudit(t *testing.T) {
	ctx := t.Context()
	eng, _, rdb := MustEngine(t)
	ev := MustEvent(t, eng, "fresh", nil)
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cat := queue.NewCatalog(&memStore{events: map[string]queue.Event{ev.ID: ev}}, eng)
	if n, err := cat.Sync(ctx); err != nil || n != 1 {
		t.Fatalf("Sync = %d, %v; want 1", n, err)
	}
	if en := MustJoin(t, eng, ev.ID, "u_1"); en.Seq != 1 {
		t.Fatalf("first join seq %d, want 1", en.Seq)
	}
	MustCode(t, eng.Restore(ctx, queue.Snapshot{Event: ev, Attempts: waitingLine(1)}, false), queue.CodeEventExists, "")
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
