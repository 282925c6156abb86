package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/rushline/rushline/server/queue"
)

var _ queue.EventStore = (*Store)(nil)

// greatest is the dialect's two-argument maximum.
func (s *Store) greatest() string {
	if s.dialect == DialectPostgres {
		return "GREATEST"
	}
	return "MAX"
}

// Reserve raises event id's stored caps to inc's, never lowering them, and
// sets its mark when inc has one. An unknown id gives CodeEventNotFound.
func (s *Store) Reserve(ctx context.Context, id string, inc queue.Incarnation) error {
	upd := map[string]any{
		"seq_cap":   gorm.Expr(s.greatest()+"(seq_cap, ?)", inc.SeqCap),
		"admit_cap": gorm.Expr(s.greatest()+"(admit_cap, ?)", inc.AdmitCap),
	}
	if inc.Mark != "" {
		upd["mark"] = inc.Mark
	}
	res := s.db.WithContext(ctx).Model(&EventRow{}).Where("id = ?", id).Updates(upd)
	if res.Error != nil {
		return unavailable("reserve numbers of "+id, res.Error)
	}
	if res.RowsAffected == 0 {
		return eventNotFound(id)
	}
	return nil
}

// Incarnations returns the incarnation stored for every event, by id.
func (s *Store) Incarnations(ctx context.Context) (map[string]queue.Incarnation, error) {
	var rows []EventRow
	if err := s.db.WithContext(ctx).Select("id", "mark", "seq_cap", "admit_cap").Find(&rows).Error; err != nil {
		return nil, unavailable("list incarnations", err)
	}
	out := make(map[string]queue.Incarnation, len(rows))
	for _, r := range rows {
		out[r.ID] = queue.Incarnation{Mark: r.Mark, SeqCap: r.SeqCap, AdmitCap: r.AdmitCap}
	}
	return out, nil
}

// Reincarnate starts a new incarnation of event id for a rebuild of its
// Redis state, in one transaction holding the event's row: it returns the
// stored incarnation (its caps bound every number the lost state can have
// handed out) and the new one, marked mark, with caps a block above the old;
// and it sets the fence to at, the Redis time the rebuild began at, so that
// records of the lost state still on their way to SQL are kept aside instead
// of folded in behind the rebuild's back (see WriteRecords).
func (s *Store) Reincarnate(ctx context.Context, id, mark string, at time.Time) (old, inc queue.Incarnation, err error) {
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Where("id = ?", id).Limit(1)
		if s.dialect == DialectPostgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		var rows []EventRow
		if err := q.Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return eventNotFound(id)
		}
		r := rows[0]
		old = queue.Incarnation{Mark: r.Mark, SeqCap: r.SeqCap, AdmitCap: r.AdmitCap}
		inc = queue.Incarnation{Mark: mark, SeqCap: r.SeqCap + queue.SeqBlock, AdmitCap: r.AdmitCap + queue.AdmitBlock}
		return tx.Model(&EventRow{}).Where("id = ?", id).Updates(map[string]any{
			"mark": inc.Mark, "seq_cap": inc.SeqCap, "admit_cap": inc.AdmitCap, "fence_ms": at.UnixMilli(),
		}).Error
	})
	var qe *queue.Error
	if err != nil && !errors.As(err, &qe) {
		err = unavailable("reincarnate "+id, err)
	}
	return old, inc, err
}

// Conflicts returns the orders of eventID kept aside, oldest first.
func (s *Store) Conflicts(ctx context.Context, eventID string) ([]OrderConflict, error) {
	var rows []OrderConflict
	if err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("ordered_at, order_id").Find(&rows).Error; err != nil {
		return nil, unavailable("order conflicts of "+eventID, err)
	}
	for i := range rows {
		rows[i].OrderedAt, rows[i].FoundAt = rows[i].OrderedAt.UTC(), rows[i].FoundAt.UTC()
	}
	return rows, nil
}
