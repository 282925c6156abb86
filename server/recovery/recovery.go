// Package recovery rebuilds an event's queue in Redis from the SQL audit
// trail after Redis lost its data (a restart without persistence, a wiped
// or replaced instance).
//
// What comes back is what the audit worker had written: the event
// definition, every attempt with its seq (so queue tokens, which are
// HMAC(seq, user), keep working), its lane and its latest status, active windows with
// their expiry (admission time + the event's active TTL), finished attempts,
// sold seats, the counters and the priority grants; the seq counter resumes after the highest seq
// seen. Records still in the Redis stream and not yet written to SQL when
// Redis lost them are gone: a join not yet written is forgotten, an
// admission not yet written is restored as WAITING at its old place. The
// window is the audit worker's lag, normally well under a second.
package recovery

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
)

// Report counts what a recovery restored.
type Report struct {
	EventID  string `json:"event_id"`
	Waiting  int    `json:"waiting"`
	Active   int    `json:"active"`
	Done     int    `json:"done"`
	Expired  int    `json:"expired"`
	Left     int    `json:"left"`
	Admitted int64  `json:"admitted"`
	Seats    int    `json:"seats"`
	Grants   int    `json:"grants"`
	MaxSeq   int64  `json:"max_seq"`
}

// String summarises r on one line.
func (r Report) String() string {
	return fmt.Sprintf("event %s: %d waiting, %d active, %d done, %d expired, %d left; %d admitted so far, %d seats sold, %d priority grants; next seq after %d",
		r.EventID, r.Waiting, r.Active, r.Done, r.Expired, r.Left, r.Admitted, r.Seats, r.Grants, r.MaxSeq)
}

// Snapshot reads eventID's state from src.
//
// Admission numbers are not in the entries table; they are given again in
// order of admission time, then lane (priority first), then seq: the order the
// admission script numbers them in, as one tick admits the head of the
// priority lane and then of the normal lane, each in seq order, at one instant.
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
	snap := queue.Snapshot{Event: ev, Attempts: make([]queue.RestoredAttempt, len(entries)), Grants: grants}
	ttl := time.Duration(ev.ActiveTTLS) * time.Second
	var admitted []int
	for i, en := range entries {
		a := queue.RestoredAttempt{UserID: en.UserID, Seq: en.Seq, Status: en.Status, Lane: en.Lane}
		if en.AdmittedAt != nil {
			admitted = append(admitted, i)
			if en.Status == queue.StatusActive {
				a.AdmittedAt = *en.AdmittedAt
				a.ExpiresAt = en.AdmittedAt.Add(ttl)
			}
		}
		snap.Attempts[i] = a
		snap.MaxSeq = max(snap.MaxSeq, en.Seq)
	}
	slices.SortStableFunc(admitted, func(a, b int) int {
		ea, eb := entries[a], entries[b]
		return cmp.Or(ea.AdmittedAt.Compare(*eb.AdmittedAt), cmp.Compare(laneOrder(ea.Lane), laneOrder(eb.Lane)),
			cmp.Compare(ea.Seq, eb.Seq))
	})
	for no, i := range admitted {
		snap.Attempts[i].AdmissionNo = int64(no + 1)
	}
	for _, o := range orders {
		snap.Seats = append(snap.Seats, queue.RestoredSeat{Seat: o.Seat, UserID: o.UserID, Seq: o.Seq, OrderID: o.OrderID})
	}
	return snap, nil
}

// laneOrder is the order one tick admits the lanes in.
func laneOrder(l queue.Lane) int {
	if l == queue.LanePriority {
		return 0
	}
	return 1
}

// Recover rebuilds eventID in Redis from src. It refuses (queue.CodeEventExists)
// to overwrite an event that has live queue state unless force. An event a
// starting server re-mirrored after the loss (its seq counter resumed from
// the audit trail and marked as awaiting recovery) is merged into without
// force: the audited line goes back in front of the joins made since.
func Recover(ctx context.Context, src *store.Store, dst *queue.Engine, eventID string, force bool) (Report, error) {
	snap, err := Snapshot(ctx, src, eventID)
	if err != nil {
		return Report{}, err
	}
	if err := dst.Restore(ctx, snap, force); err != nil {
		return Report{}, fmt.Errorf("recovery: %w", err)
	}
	r := Report{EventID: eventID, Seats: len(snap.Seats), Grants: len(snap.Grants), MaxSeq: snap.MaxSeq}
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
