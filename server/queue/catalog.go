package queue

import (
	"context"
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
	// MaxSeq is the highest seq the audit trail holds for an event, 0 if none.
	MaxSeq(ctx context.Context, eventID string) (int64, error)
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

// Create validates and stores a new event, then mirrors it.
func (c *Catalog) Create(ctx context.Context, ev Event) (Event, error) {
	ev.CreatedAt = c.eng.Now().UTC().Truncate(1e6)
	ev.normalize()
	if err := ev.Validate(c.eng.Now()); err != nil {
		return Event{}, err
	}
	if err := c.store.CreateEvent(ctx, ev); err != nil {
		return Event{}, fmt.Errorf("queue: create event %s: %w", ev.ID, err)
	}
	if err := c.eng.CreateEvent(ctx, ev); err != nil {
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

// Sync mirrors into Redis every stored event Redis lacks, e.g. after Redis
// lost its data. Live definitions already in Redis are left alone. An event
// re-mirrored with audited attempts gets its seq counter back from the audit
// trail and is marked as awaiting recovery (see Engine.SyncEvent).
func (c *Catalog) Sync(ctx context.Context) (int, error) {
	events, err := c.store.Events(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue: sync events: %w", err)
	}
	n := 0
	for _, ev := range events {
		ev.normalize() // rows stored before the default was applied
		maxSeq, err := c.store.MaxSeq(ctx, ev.ID)
		if err != nil {
			return n, fmt.Errorf("queue: sync event %s: %w", ev.ID, err)
		}
		err = c.eng.SyncEvent(ctx, ev, maxSeq)
		switch ErrorCode(err) {
		case "":
			n++
		case CodeEventExists:
		default:
			return n, fmt.Errorf("queue: sync event %s: %w", ev.ID, err)
		}
	}
	return n, nil
}
