package store

import (
	"context"
	"errors"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/rushline/rushline/server/queue"
)

// CreateEvent stores a new event. A zero CreatedAt is set to now. An event
// with the same id already stored gives a *queue.Error with CodeEventExists;
// the database's unique key decides, so of concurrent creates exactly one
// wins.
func (s *Store) CreateEvent(ctx context.Context, ev queue.Event) error {
	if ev.ID == "" {
		return queue.Errorf(queue.CodeBadRequest, "event id is empty")
	}
	row := eventRow(ev)
	if row.CreatedAt.IsZero() {
		row.CreatedAt = now()
	}
	row.UpdatedAt = row.CreatedAt
	err := s.db.WithContext(ctx).Create(&row).Error
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return queue.Errorf(queue.CodeEventExists, "event %q already exists", ev.ID)
	case err != nil:
		return unavailable("create event "+ev.ID, err)
	}
	return nil
}

// UpdateEvent replaces every field of the stored event with ev's, Paused
// and the nil times included, except ID and CreatedAt. An unknown id gives
// CodeEventNotFound.
func (s *Store) UpdateEvent(ctx context.Context, ev queue.Event) error {
	return updateEvent(s.db.WithContext(ctx), ev)
}

// ChangeEvent reads event id, lets change modify it and writes it back, in
// one transaction holding the row's lock, so concurrent changes (a pause and
// a PATCH, on any replica) never lose one another. An error from change
// rolls everything back and is returned as it is.
func (s *Store) ChangeEvent(ctx context.Context, id string, change func(*queue.Event) error) (queue.Event, error) {
	var ev queue.Event
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Where("id = ?", id).Limit(1)
		if s.Dialect() == DialectPostgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"}) // SQLite's immediate transactions already serialize writers
		}
		var rows []EventRow
		if err := q.Find(&rows).Error; err != nil {
			return unavailable("get event "+id, err)
		}
		if len(rows) == 0 {
			return eventNotFound(id)
		}
		ev = rows[0].Event()
		if err := change(&ev); err != nil {
			return err
		}
		return updateEvent(tx, ev)
	})
	if err != nil {
		var qe *queue.Error
		if errors.As(err, &qe) {
			return queue.Event{}, err
		}
		return queue.Event{}, unavailable("change event "+id, err)
	}
	return ev, nil
}

func updateEvent(db *gorm.DB, ev queue.Event) error {
	row := eventRow(ev)
	res := db.Model(&EventRow{}).Where("id = ?", ev.ID).Updates(map[string]any{
		"name":              row.Name,
		"seats":             row.Seats,
		"capacity":          row.Capacity,
		"admit_batch":       row.AdmitBatch,
		"admit_interval_ms": row.AdmitIntervalMS,
		"active_ttl_s":      row.ActiveTTLS,
		"policy":            row.Policy,
		"max_tps":           row.MaxTPS,
		"priority_share":    row.PriorityShare,
		"opens_at":          row.OpensAt,
		"closes_at":         row.ClosesAt,
		"paused":            row.Paused,
		"queue_mode":        row.QueueMode,
		"prequeue_opens_at": row.PrequeueOpensAt,
		"draw_seed":         row.DrawSeed,
		"challenge":         row.Challenge,
		"pow_bits":          row.PowBits,
		"updated_at":        now(),
	})
	if res.Error != nil {
		return unavailable("update event "+ev.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return eventNotFound(ev.ID)
	}
	return nil
}

// DeleteEvent removes an event with everything kept of it: its entries,
// their transitions, its orders and its priority grants, in one
// transaction. Practice results stay: they are the people's history. It
// undoes a create whose Redis mirror failed and drops finished practice
// races. An unknown id gives CodeEventNotFound and deletes nothing.
func (s *Store) DeleteEvent(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, m := range []any{&Transition{}, &Order{}, &Entry{}, &JoinRun{}, &PriorityGrant{}, &CrowdChunkRow{}} {
			if err := tx.Where("event_id = ?", id).Delete(m).Error; err != nil {
				return err
			}
		}
		res := tx.Where("id = ?", id).Delete(&EventRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return eventNotFound(id)
		}
		return nil
	})
	var qe *queue.Error
	if err != nil && !errors.As(err, &qe) {
		return unavailable("delete event "+id, err)
	}
	return err
}

// Event returns the event with the given id, or CodeEventNotFound.
func (s *Store) Event(ctx context.Context, id string) (queue.Event, error) {
	var rows []EventRow
	// Find with Limit, not First: a missing event is an answer, not an error.
	if err := s.db.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return queue.Event{}, unavailable("get event "+id, err)
	}
	if len(rows) == 0 {
		return queue.Event{}, eventNotFound(id)
	}
	return rows[0].Event(), nil
}

// Events returns every event, oldest first (by created_at, then id).
func (s *Store) Events(ctx context.Context) ([]queue.Event, error) {
	var rows []EventRow
	if err := s.db.WithContext(ctx).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, unavailable("list events", err)
	}
	evs := make([]queue.Event, len(rows))
	for i, r := range rows {
		evs[i] = r.Event()
	}
	return evs, nil
}

func eventNotFound(id string) error {
	return queue.Errorf(queue.CodeEventNotFound, "event %q not found", id)
}
