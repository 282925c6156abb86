package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm/clause"

	"github.com/rushline/rushline/server/queue"
)

// PriorityGrant is a row of the priority_grants table: a user, or a
// single-use code, given an event's priority (FAST TRACK) lane. Recovery
// restores them into Redis with who redeemed each code.
type PriorityGrant struct {
	EventID    string          `gorm:"column:event_id;primaryKey"`
	Kind       queue.GrantKind `gorm:"column:kind;primaryKey"`
	Value      string          `gorm:"column:value;primaryKey"`
	RedeemedBy string          `gorm:"column:redeemed_by;not null;default:''"`
	CreatedAt  time.Time       `gorm:"column:created_at;not null"`
}

// TableName implements gorm's schema.Tabler.
func (PriorityGrant) TableName() string { return "priority_grants" }

var _ queue.GrantStore = (*Store)(nil)

// PutGrants stores grants; one already stored stays as it is (a redeemed
// code stays redeemed).
func (s *Store) PutGrants(ctx context.Context, grants []queue.Grant) error {
	if len(grants) == 0 {
		return nil
	}
	rows := make([]PriorityGrant, len(grants))
	at := now()
	for i, g := range grants {
		rows[i] = PriorityGrant{EventID: g.EventID, Kind: g.Kind, Value: g.Value, RedeemedBy: g.RedeemedBy, CreatedAt: at}
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, insertBatch).Error
	if err != nil {
		return unavailable("put priority grants", err)
	}
	return nil
}

// DeleteGrant removes the grant of a user id or code of eventID, if any.
func (s *Store) DeleteGrant(ctx context.Context, eventID string, kind queue.GrantKind, value string) error {
	err := s.db.WithContext(ctx).Where("event_id = ? AND kind = ? AND value = ?", eventID, kind, value).Delete(&PriorityGrant{}).Error
	if err != nil {
		return unavailable("delete priority grant", err)
	}
	return nil
}

// Grants returns eventID's stored grants, users then codes, each by value.
func (s *Store) Grants(ctx context.Context, eventID string) ([]queue.Grant, error) {
	var rows []PriorityGrant
	err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("kind DESC, value").Find(&rows).Error
	if err != nil {
		return nil, unavailable("priority grants of "+eventID, err)
	}
	out := make([]queue.Grant, len(rows))
	for i, r := range rows {
		out[i] = queue.Grant{EventID: r.EventID, Kind: r.Kind, Value: r.Value, RedeemedBy: r.RedeemedBy}
	}
	return out, nil
}

// redeem marks the codes the joined records redeemed, first redeemer wins.
func (s *Store) redeem(ctx context.Context, tx *sql.Tx, recs []queue.Record) error {
	q := "UPDATE priority_grants SET redeemed_by = ? WHERE event_id = ? AND kind = ? AND value = ? AND redeemed_by = ''"
	if s.dialect == DialectPostgres {
		q = "UPDATE priority_grants SET redeemed_by = $1 WHERE event_id = $2 AND kind = $3 AND value = $4 AND redeemed_by = ''"
	}
	for _, r := range recs {
		if _, err := tx.ExecContext(ctx, q, r.UserID, r.EventID, string(queue.GrantCode), r.PriorityCode); err != nil {
			return fmt.Errorf("redeem: %w", err)
		}
	}
	return nil
}
