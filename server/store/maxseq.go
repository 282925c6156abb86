package store

import (
	"context"
	"database/sql"
)

// MaxSeq returns the highest seq the audit trail holds for eventID, 0 when
// it holds none: where a re-mirrored event's seq counter must resume.
func (s *Store) MaxSeq(ctx context.Context, eventID string) (int64, error) {
	var n sql.NullInt64
	if err := s.db.WithContext(ctx).Model(&Entry{}).Where("event_id = ?", eventID).
		Select("MAX(seq)").Scan(&n).Error; err != nil {
		return 0, unavailable("max seq of "+eventID, err)
	}
	return n.Int64, nil
}
