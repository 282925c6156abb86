package store

import "context"

// MaxJoinRun is maxJoinRun, for the tests of long entries.
const MaxJoinRun = maxJoinRun

// RunRows returns the event's join_runs rows in key order, their times in
// UTC, for the tests that check how WriteRecords stores runs.
func (s *Store) RunRows(ctx context.Context, eventID string) ([]JoinRun, error) {
	var rows []JoinRun
	err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("first_seq, stream_id").Find(&rows).Error
	for i := range rows {
		rows[i].JoinedAt = rows[i].JoinedAt.UTC()
	}
	return rows, err
}
