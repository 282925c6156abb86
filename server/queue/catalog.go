package queue

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// EventStore keeps event definitions durably (SQL in production).
type EventStore interface {
	CreateEvent(ctx context.Context, ev Event) error
	// ChangeEvent reads, changes and writes one event atomically: concurrent
	// changes are serialized, and an error from change rolls back.
	ChangeEvent(ctx context.Context, id string, change func(*Event) error) (Event, error)
	DeleteEvent(ctx context.Context, id string) error
	Event(ctx context.Context, id string) (Event, error)
	Events(ctx context.Context) ([]Event, error)
	// Reserve raises the event's stored caps to inc's (never lowering them)
	// and, when inc has a mark, sets it.
	Reserve(ctx context.Context, id string, inc Incarnation) error
}

// How far ahead of its counters SQL reserves numbers for an event (see
// Incarnation). A block bounds both the jump the counters make after a Redis
// loss and how long the queue runs while SQL is away: a top-up is due when
// less than half a block is left, so an outage pauses joins only after at
// least SeqBlock/2 joins (by then the audit buffer, the stream's 1,000,000
// records, is full as well) and admission after at least AdmitBlock/2
// admissions. Seqs are never shown; admission numbers are, so their block is
// smaller.
const (
	SeqBlock   = 1_000_000
	AdmitBlock = 10_000
)

// NewMark returns a fresh incarnation mark.
func NewMark() string { return rand.Text() }

// Low reports whether h is less than half a block from either cap: time to
// reserve more. An incarnation without caps (made before caps existed) is low.
func (h Held) Low() bool {
	return h.SeqCap-h.Seq < SeqBlock/2 || h.AdmitCap-h.Admitted < AdmitBlock/2
}

// Catalog keeps event definitions in a durable store and mirrors them into
// Redis, where every replica's engine and ticker read them. A change that
// cannot reach both is undone, so the two never disagree. Safe for concurrent use.
type Catalog struct {
	store EventStore
	eng   *Engine
}

// NewCatalog returns a catalog over store and eng.
func NewCatalog(store EventStore, eng *Engine) *Catalog {
	return &Catalog{store: store, eng: eng}
}

// Create validates and stores a new event with its first incarnation, then
// mirrors it. It holds the event's restore lease meanwhile, so no replica
// takes the stored event whose mirror is still on its way for one whose Redis
// state was lost.
func (c *Catalog) Create(ctx context.Context, ev Event) (Event, error) {
	ev.CreatedAt = c.eng.Now().UTC().Truncate(1e6)
	ev.normalize()
	if err := ev.Validate(c.eng.Now()); err != nil {
		return Event{}, err
	}
	ev.ensureSeed()
	l, err := c.eng.LeaseRestore(ctx, ev.ID, "create-"+NewMark(), DefaultRestoreLease)
	if err != nil {
		return Event{}, fmt.Errorf("queue: create event %s: %w", ev.ID, err)
	}
	defer func() { _ = l.Release(ctx) }()
	if err := c.store.CreateEvent(ctx, ev); err != nil {
		return Event{}, fmt.Errorf("queue: create event %s: %w", ev.ID, err)
	}
	inc := Incarnation{Mark: NewMark(), SeqCap: SeqBlock, AdmitCap: AdmitBlock}
	err = c.store.Reserve(ctx, ev.ID, inc)
	if err == nil {
		err = c.eng.CreateMarked(ctx, ev, inc)
	}
	if err != nil {
		// Undo the SQL row unless Redis held an event of that id already
		// (a stale mirror after an SQL loss): then the id is taken either way.
		if ErrorCode(err) != CodeEventExists {
			if derr := c.store.DeleteEvent(context.WithoutCancel(ctx), ev.ID); derr != nil {
				err = errors.Join(err, derr)
			}
		}
		return Event{}, err
	}
	return ev, nil
}

// Update applies change to an event, validates, stores and mirrors it, with
// concurrent updates serialized by the store: the Redis mirror is written
// while the stored row is locked, so mirrors land in commit order. The
// admission ticker of every replica applies the change at its next tick.
func (c *Catalog) Update(ctx context.Context, id string, change func(*Event)) (Event, error) {
	var old Event
	mirrored := false
	ev, err := c.store.ChangeEvent(ctx, id, func(ev *Event) error {
		old = *ev
		change(ev)
		ev.normalize()
		// "closes_at in the future" binds a new closes_at only: an event past
		// its close can still be paused, resumed or drained.
		now := c.eng.Now()
		if sameTime(ev.ClosesAt, old.ClosesAt) {
			now = time.Time{}
		}
		if err := ev.Validate(now); err != nil {
			return err
		}
		if old.QueueMode == ModeRandomStart && ev.QueueMode != ModeRandomStart {
			// Its pre-queue would wait for a draw that never comes.
			pending, err := c.eng.drawPending(ctx, id)
			if err != nil {
				return err
			}
			if pending {
				return Errorf(CodeBadRequest, "queue_mode cannot leave random_start while its pre-queue waits for the draw at opens_at")
			}
		}
		ev.ensureSeed() // events made before draws existed
		if err := c.eng.PutEvent(ctx, *ev); err != nil {
			return err
		}
		mirrored = true
		return nil
	})
	if err != nil && mirrored {
		// The commit failed after the mirror: put the stored definition back.
		if rerr := c.eng.PutEvent(context.WithoutCancel(ctx), old); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return Event{}, fmt.Errorf("queue: update event %s: %w", id, err)
	}
	return ev, nil
}

func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}

// TopUp reserves numbers a block ahead of the counters of an event Redis
// holds as h: in SQL first, then in Redis, so Redis never hands out a number
// SQL has not reserved. Replicas may top up at once: caps only rise.
func (c *Catalog) TopUp(ctx context.Context, eventID string, h Held) error {
	inc := Incarnation{SeqCap: h.Seq + SeqBlock, AdmitCap: h.Admitted + AdmitBlock}
	if err := c.store.Reserve(ctx, eventID, inc); err != nil {
		return fmt.Errorf("queue: reserve numbers of %s: %w", eventID, err)
	}
	return c.eng.Reserve(ctx, eventID, inc)
}
