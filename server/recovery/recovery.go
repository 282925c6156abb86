// Package recovery rebuilds an event's queue in Redis from the SQL audit
// trail after Redis lost its data (FLUSHALL, a restart without persistence,
// a failover to an empty replica, a new instance): by itself, through a
// Keeper on every replica, or by hand (`rushline-server recover`).
//
// What comes back is what the audit worker had written: the event
// definition, every attempt with its seq (so queue tokens, which are
// HMAC(seq, user), keep working), its lane and its latest status, active windows with
// their expiry (admission time + the event's active TTL), finished attempts,
// sold seats, the counters and the priority grants. The seq and admission
// counters resume at the caps SQL had reserved (see queue.Incarnation), past
// every number the lost state can have handed out. Records still in the
// Redis stream and not yet written to SQL when Redis lost them are gone: a
// join not yet written is forgotten, an admission not yet written is
// restored as WAITING at its old place, an order not yet written frees its
// seat (and is kept in order_conflicts should it reach SQL after the rebuild
// began). The window is the audit worker's lag (docs/faults.md).
package recovery

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
)

// Report counts what a recovery restored.
type Report struct {
	EventID string `json:"event_id"`
	Waiting int    `json:"waiting"`
	Active  int    `json:"active"`
	Done    int    `json:"done"`
	Expired int    `json:"expired"`
	Left    int    `json:"left"`
	// Admitted and MaxSeq are where the admission and seq counters resume:
	// the next admission and join get higher numbers.
	Admitted int64 `json:"admitted"`
	Seats    int   `json:"seats"`
	Grants   int   `json:"grants"`
	MaxSeq   int64 `json:"max_seq"`
}

// String summarises r on one line.
func (r Report) String() string {
	return fmt.Sprintf("event %s: %d waiting, %d active, %d done, %d expired, %d left; admission numbers resume after %d; %d seats sold, %d priority grants; next seq after %d",
		r.EventID, r.Waiting, r.Active, r.Done, r.Expired, r.Left, r.Admitted, r.Seats, r.Grants, r.MaxSeq)
}

// Snapshot reads eventID's state from src.
//
// Admission numbers come from the admitted records (entries.admission_no).
// Rows written before that column existed have none; then every admitted
// attempt is numbered again in order of admission time, then lane (priority
// first), then seq: the order the admission script numbers them in, as one
// tick admits the head of the priority lane and then of the normal lane, each
// in seq order, at one instant.
func Snapshot(ctx context.Context, src *store.Store, eventID string) (queue.Snapshot, error) {
	ev, err := src.Event(ctx, eventID)
	if err != nil {
		return queue.Snapshot{}, fmt.Errorf("recovery: %w", err)
	}
	entries, err := src.Entries(ctx, eventID)
	if err != nil {
		return queue.Snapshot{}, fmt.Errorf("recovery: %w", err)
	}
	orders, err := src.Orders(ctx, eventID)
	if err != nil {
		return queue.Snapshot{}, fmt.Errorf("recovery: %w", err)
	}
	grants, err := src.Grants(ctx, eventID)
	if err != nil {
		return queue.Snapshot{}, fmt.Errorf("recovery: %w", err)
	}
	chunks, err := src.CrowdChunks(ctx, eventID)
	if err != nil {
		return queue.Snapshot{}, fmt.Errorf("recovery: %w", err)
	}
	snap := queue.Snapshot{Event: ev, Attempts: make([]queue.RestoredAttempt, len(entries)), Grants: grants}
	ttl := time.Duration(ev.ActiveTTLS) * time.Second
	var admitted []int
	numbered := true
	for i, en := range entries {
		a := queue.RestoredAttempt{UserID: en.UserID, Seq: en.Seq, Status: en.Status, Lane: en.Lane, AdmissionNo: en.AdmissionNo}
		if en.AdmittedAt != nil {
			admitted = append(admitted, i)
			numbered = numbered && en.AdmissionNo > 0
			if en.Status == queue.StatusActive {
				a.AdmittedAt = *en.AdmittedAt
				a.ExpiresAt = en.AdmittedAt.Add(ttl)
			}
		}
		snap.Attempts[i] = a
		snap.MaxSeq = max(snap.MaxSeq, en.Seq)
	}
	if !numbered {
		slices.SortStableFunc(admitted, func(a, b int) int {
			ea, eb := entries[a], entries[b]
			return cmp.Or(ea.AdmittedAt.Compare(*eb.AdmittedAt), cmp.Compare(laneOrder(ea.Lane), laneOrder(eb.Lane)),
				cmp.Compare(ea.Seq, eb.Seq))
		})
		for no, i := range admitted {
			snap.Attempts[i].AdmissionNo = int64(no + 1)
		}
	}
	snap.Attempts = append(snap.Attempts, crowdWaiting(chunks, entries)...)
	for _, a := range snap.Attempts {
		snap.MaxSeq = max(snap.MaxSeq, a.Seq)
	}
	for _, o := range orders {
		snap.Seats = append(snap.Seats, queue.RestoredSeat{Seat: o.Seat, UserID: o.UserID, Seq: o.Seq, OrderID: o.OrderID})
	}
	return snap, nil
}

// crowdWaiting returns a practice drop's virtual users that joined in the
// chunks and of whom the audit trail has no attempt: those still waiting,
// back in line at their seqs. Crowd joins write no record per user; the
// chunks (queue.CrowdChunk) are their trace in SQL.
func crowdWaiting(chunks []queue.CrowdChunk, entries []store.Entry) []queue.RestoredAttempt {
	if len(chunks) == 0 {
		return nil
	}
	known := make(map[string]bool, len(entries))
	for _, en := range entries {
		known[en.UserID] = true
	}
	var out []queue.RestoredAttempt
	for _, c := range chunks {
		for i := range c.N {
			user := c.Prefix + strconv.FormatInt(c.Cursor+int64(i), 10)
			if !known[user] {
				out = append(out, queue.RestoredAttempt{UserID: user, Seq: c.FirstSeq + int64(i),
					Status: queue.StatusWaiting, Lane: queue.LaneNormal})
			}
		}
	}
	return out
}

// laneOrder is the order one tick admits the lanes in.
func laneOrder(l queue.Lane) int {
	if l == queue.LanePriority {
		return 0
	}
	return 1
}

// Recover rebuilds eventID in Redis from src under the event's restore
// lease: what `rushline-server recover` runs. It refuses
// (queue.CodeEventExists) to overwrite an event Redis holds unless force.
func Recover(ctx context.Context, src *store.Store, eng *queue.Engine, eventID string, force bool) (rep Report, err error) {
	l, err := eng.LeaseRestore(ctx, eventID, "recover-"+queue.NewMark(), queue.DefaultRestoreLease)
	if err != nil {
		return Report{}, fmt.Errorf("recovery: %w", err)
	}
	defer func() {
		if rerr := l.Release(ctx); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return rebuild(ctx, src, eng, l, eventID, force)
}

// rebuild rebuilds eventID under the held lease l. Unless force, it refuses
// an event Redis holds; one Redis lacks is overwritten whatever remains of
// it (a rebuild that died half-way): under the lease nothing serves it.
//
// It starts a new incarnation in SQL before it reads the snapshot: the
// counters resume at the old incarnation's caps, and the fence set with it
// sorts out records of the lost state still on their way to SQL (see
// store.WriteRecords), so the snapshot has every order SQL will ever hold as
// sold from before the rebuild.
func rebuild(ctx context.Context, src *store.Store, eng *queue.Engine, l *queue.RestoreLease, eventID string, force bool) (Report, error) {
	held, err := eng.Holds(ctx, []string{eventID})
	if err != nil {
		return Report{}, fmt.Errorf("recovery: %w", err)
	}
	if held[0].Present && !force {
		return Report{}, queue.Errorf(queue.CodeEventExists,
			"event %q has live queue state in Redis; recover refuses to overwrite it without force", eventID)
	}
	// Reading a long line from SQL may outlast the lease: keep it meanwhile
	// (the restore renews it before every step as well).
	hold, release := context.WithCancel(ctx)
	defer release()
	go func() {
		t := time.NewTicker(queue.DefaultRestoreLease / 3)
		defer t.Stop()
		for {
			select {
			case <-hold.Done():
				return
			case <-t.C:
				_ = l.Renew(hold)
			}
		}
	}()
	// The fence is the next millisecond of Redis's clock: every record of
	// the lost state is stamped before it, and the restore waits for it, so
	// every record of the new state is stamped at it or after.
	now, err := eng.RedisTime(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("recovery: %w", err)
	}
	fence := now.Truncate(time.Millisecond).Add(time.Millisecond)
	old, inc, err := src.Reincarnate(ctx, eventID, queue.NewMark(), fence)
	if err != nil {
		return Report{}, fmt.Errorf("recovery: %w", err)
	}
	snap, err := Snapshot(ctx, src, eventID)
	if err != nil {
		return Report{}, err
	}
	snap.MaxSeq = max(snap.MaxSeq, old.SeqCap)
	snap.Admitted = old.AdmitCap
	snap.Incarnation = inc
	for now.Before(fence) {
		time.Sleep(fence.Sub(now))
		if now, err = eng.RedisTime(ctx); err != nil {
			return Report{}, fmt.Errorf("recovery: %w", err)
		}
	}
	if err := eng.RestoreLeased(ctx, l, snap, true); err != nil {
		return Report{}, fmt.Errorf("recovery: %w", err)
	}
	r := Report{EventID: eventID, Seats: len(snap.Seats), Grants: len(snap.Grants), MaxSeq: snap.MaxSeq, Admitted: snap.Admitted}
	for _, a := range snap.Attempts {
		r.Admitted = max(r.Admitted, a.AdmissionNo)
		switch a.Status {
		case queue.StatusWaiting:
			r.Waiting++
		case queue.StatusActive:
			r.Active++
		case queue.StatusDone:
			r.Done++
		case queue.StatusExpired:
			r.Expired++
		case queue.StatusLeft:
			r.Left++
		}
	}
	return r, nil
}
