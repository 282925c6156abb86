package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/rushline/rushline/server/queue"
)

// insertBatch is the rows per INSERT: 1,000 rows of at most 9 columns stay
// well under both SQLite's (32,766) and PostgreSQL's (65,535) bind limits.
const insertBatch = 1000

// statusOf maps a stream record kind to the token state it leads to.
func statusOf(k queue.RecordKind) (queue.Status, bool) {
	switch k {
	case queue.RecordJoined:
		return queue.StatusWaiting, true
	case queue.RecordAdmitted:
		return queue.StatusActive, true
	case queue.RecordExpired:
		return queue.StatusExpired, true
	case queue.RecordLeft:
		return queue.StatusLeft, true
	case queue.RecordDone:
		return queue.StatusDone, true
	}
	return "", false
}

// stage is a status's place in a token's life cycle, which only moves
// forward: WAITING, then ACTIVE, then one finished state.
func stage(s queue.Status) int {
	switch s {
	case queue.StatusWaiting:
		return 0
	case queue.StatusActive:
		return 1
	}
	return 2
}

// supersedes reports whether status s set at time at replaces cur. A later
// stage always wins, whatever the clocks say; within a stage (two finished
// states) the later record wins, and a tie keeps what is stored, so
// redelivery changes nothing. This is the Go twin of entryWins.
func supersedes(s queue.Status, at time.Time, cur queue.Status, curAt time.Time) bool {
	if a, b := stage(s), stage(cur); a != b {
		return a > b
	}
	return at.After(curAt)
}

const stageSQL = "(CASE %s.status WHEN 'WAITING' THEN 0 WHEN 'ACTIVE' THEN 1 ELSE 2 END)"

// entryWins is true in an entries upsert when the incoming row (excluded)
// supersedes the stored one. Both dialects compare the timestamps correctly:
// PostgreSQL natively, SQLite as text that is always UTC in one layout.
var entryWins = fmt.Sprintf("(%[1]s > %[2]s OR (%[1]s = %[2]s AND excluded.status_at > entries.status_at))",
	fmt.Sprintf(stageSQL, "excluded"), fmt.Sprintf(stageSQL, "entries"))

// entryUpsert folds an incoming entry row into the stored one. All SET
// expressions read the row as it was before the update, in both dialects.
var entryUpsert = clause.OnConflict{
	Columns: []clause.Column{{Name: "event_id"}, {Name: "seq"}},
	DoUpdates: clause.Set{
		{Column: clause.Column{Name: "status"}, Value: pick("status")},
		{Column: clause.Column{Name: "status_at"}, Value: pick("status_at")},
		{Column: clause.Column{Name: "finished_at"}, Value: pick("finished_at")},
		{Column: clause.Column{Name: "joined_at"}, Value: gorm.Expr("COALESCE(entries.joined_at, excluded.joined_at)")},
		{Column: clause.Column{Name: "admitted_at"}, Value: gorm.Expr("COALESCE(entries.admitted_at, excluded.admitted_at)")},
	},
}

func pick(col string) clause.Expr {
	return gorm.Expr(fmt.Sprintf("CASE WHEN %s THEN excluded.%s ELSE entries.%s END", entryWins, col, col))
}

type entryKey struct {
	eventID string
	seq     int64
}

// WriteRecords writes a batch of stream records in one transaction: one
// transition per record, each token's entry row folded to its latest state,
// and an order per done record that carries an OrderID.
//
// It is idempotent, so a batch redelivered after a crash, whole or in part,
// changes nothing: transitions (keyed by event and stream id) and orders
// (keyed by order id, and by event and seat) are inserted with ON CONFLICT DO
// NOTHING, and an entry's status only moves to a record that supersedes the
// stored one — a later stage of the life cycle, or the same stage at a later
// time — so records that arrive late never roll a status back.
//
// A record without ID or EventID, or of an unknown kind, fails the whole
// batch with CodeBadRequest.
func (s *Store) WriteRecords(ctx context.Context, recs []queue.Record) error {
	if len(recs) == 0 {
		return nil
	}
	transitions := make([]Transition, 0, len(recs))
	var orders []Order
	byKey := make(map[entryKey]*Entry, len(recs))
	for i, r := range recs {
		st, ok := statusOf(r.Kind)
		if !ok {
			return queue.Errorf(queue.CodeBadRequest, "record %d (%s): unknown kind %q", i, r.ID, r.Kind)
		}
		if r.ID == "" || r.EventID == "" {
			return queue.Errorf(queue.CodeBadRequest, "record %d: stream id and event id are required", i)
		}
		at := utc(r.At)
		transitions = append(transitions, Transition{
			StreamID: r.ID, EventID: r.EventID, Seq: r.Seq, UserID: r.UserID, Status: st, At: at,
		})
		if r.Kind == queue.RecordDone && r.OrderID != "" {
			orders = append(orders, Order{
				OrderID: r.OrderID, EventID: r.EventID, Seat: r.Seat, UserID: r.UserID, Seq: r.Seq, CreatedAt: at,
			})
		}

		k := entryKey{r.EventID, r.Seq}
		e := byKey[k]
		if e == nil {
			e = &Entry{
				EventID: r.EventID, Seq: r.Seq, UserID: r.UserID, UserType: queue.TypeOf(r.UserID),
				Status: st, StatusAt: at,
			}
			if st.Finished() {
				e.FinishedAt = &at
			}
			byKey[k] = e
		} else if supersedes(st, at, e.Status, e.StatusAt) {
			e.Status, e.StatusAt, e.FinishedAt = st, at, nil
			if st.Finished() {
				e.FinishedAt = &at
			}
		}
		switch r.Kind {
		case queue.RecordJoined:
			e.JoinedAt = earliest(e.JoinedAt, at)
		case queue.RecordAdmitted:
			e.AdmittedAt = earliest(e.AdmittedAt, at)
		}
	}

	// One row per token, as PostgreSQL refuses to upsert a row twice in one
	// statement; in key order, so concurrent writers lock rows in one order.
	entries := make([]Entry, 0, len(byKey))
	for _, e := range byKey {
		entries = append(entries, *e)
	}
	slices.SortFunc(entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.Seq, b.Seq))
	})

	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(entryUpsert).CreateInBatches(&entries, insertBatch).Error; err != nil {
			return fmt.Errorf("entries: %w", err)
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&transitions, insertBatch).Error; err != nil {
			return fmt.Errorf("transitions: %w", err)
		}
		if len(orders) > 0 {
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&orders, insertBatch).Error; err != nil {
				return fmt.Errorf("orders: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return unavailable(fmt.Sprintf("write %d records", len(recs)), err)
	}
	return nil
}

func earliest(cur *time.Time, at time.Time) *time.Time {
	if cur == nil || at.Before(*cur) {
		return &at
	}
	return cur
}

// Entries returns the event's entries in arrival order (by Seq).
func (s *Store) Entries(ctx context.Context, eventID string) ([]Entry, error) {
	var rows []Entry
	if err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("seq").Find(&rows).Error; err != nil {
		return nil, unavailable("entries of "+eventID, err)
	}
	for i := range rows {
		rows[i].toUTC()
	}
	return rows, nil
}

// Transitions returns the audit trail of one token, by time and then by
// insertion order.
func (s *Store) Transitions(ctx context.Context, eventID string, seq int64) ([]Transition, error) {
	var rows []Transition
	err := s.db.WithContext(ctx).Where("event_id = ? AND seq = ?", eventID, seq).Order("at, id").Find(&rows).Error
	if err != nil {
		return nil, unavailable(fmt.Sprintf("transitions of %s/%d", eventID, seq), err)
	}
	for i := range rows {
		rows[i].At = rows[i].At.UTC()
	}
	return rows, nil
}

// Orders returns the event's orders, oldest first (by created_at, then
// order id).
func (s *Store) Orders(ctx context.Context, eventID string) ([]Order, error) {
	var rows []Order
	if err := s.db.WithContext(ctx).Where("event_id = ?", eventID).Order("created_at, order_id").Find(&rows).Error; err != nil {
		return nil, unavailable("orders of "+eventID, err)
	}
	for i := range rows {
		rows[i].CreatedAt = rows[i].CreatedAt.UTC()
	}
	return rows, nil
}
