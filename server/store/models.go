package store

import (
	"time"

	"github.com/rushline/rushline/server/queue"
)

// Times in every table are stored in UTC at microsecond precision.

// EventRow is a row of the events table: a queue.Event plus bookkeeping.
type EventRow struct {
	ID              string       `gorm:"column:id;primaryKey"`
	Name            string       `gorm:"column:name;not null"`
	Seats           int          `gorm:"column:seats;not null"`
	Capacity        int          `gorm:"column:capacity;not null"`
	AdmitBatch      int          `gorm:"column:admit_batch;not null"`
	AdmitIntervalMS int          `gorm:"column:admit_interval_ms;not null"`
	ActiveTTLS      int          `gorm:"column:active_ttl_s;not null"`
	Policy          queue.Policy `gorm:"column:policy;not null"`
	MaxTPS          int          `gorm:"column:max_tps;not null"`
	PriorityShare   float64      `gorm:"column:priority_share;not null;default:0.5"`
	OpensAt         *time.Time   `gorm:"column:opens_at"`
	ClosesAt        *time.Time   `gorm:"column:closes_at"`
	Paused          bool         `gorm:"column:paused;not null"`
	Practice        bool         `gorm:"column:practice;not null;default:false"`
	CreatedAt       time.Time    `gorm:"column:created_at;not null;index:idx_events_created,priority:1"`
	UpdatedAt       time.Time    `gorm:"column:updated_at;not null"`
}

// TableName implements gorm's schema.Tabler.
func (EventRow) TableName() string { return "events" }

func eventRow(ev queue.Event) EventRow {
	return EventRow{
		ID:              ev.ID,
		Name:            ev.Name,
		Seats:           ev.Seats,
		Capacity:        ev.Capacity,
		AdmitBatch:      ev.AdmitBatch,
		AdmitIntervalMS: ev.AdmitIntervalMS,
		ActiveTTLS:      ev.ActiveTTLS,
		Policy:          ev.Policy,
		MaxTPS:          ev.MaxTPS,
		PriorityShare:   ev.PriorityShare,
		OpensAt:         utcPtr(ev.OpensAt),
		ClosesAt:        utcPtr(ev.ClosesAt),
		Paused:          ev.Paused,
		Practice:        ev.Practice,
		CreatedAt:       utc(ev.CreatedAt),
	}
}

// Event returns the row as a queue.Event, times in UTC.
func (r EventRow) Event() queue.Event {
	return queue.Event{
		ID:              r.ID,
		Name:            r.Name,
		Seats:           r.Seats,
		Capacity:        r.Capacity,
		AdmitBatch:      r.AdmitBatch,
		AdmitIntervalMS: r.AdmitIntervalMS,
		ActiveTTLS:      r.ActiveTTLS,
		Policy:          r.Policy,
		MaxTPS:          r.MaxTPS,
		PriorityShare:   r.PriorityShare,
		OpensAt:         utcPtr(r.OpensAt),
		ClosesAt:        utcPtr(r.ClosesAt),
		Paused:          r.Paused,
		Practice:        r.Practice,
		CreatedAt:       r.CreatedAt.UTC(),
	}
}

// Entry is a row of the entries table: the latest known state of one queue
// token, folded from its stream records.
type Entry struct {
	EventID  string         `gorm:"column:event_id;primaryKey;index:idx_entries_event_user,priority:1"`
	Seq      int64          `gorm:"column:seq;primaryKey;autoIncrement:false"`
	UserID   string         `gorm:"column:user_id;not null;index:idx_entries_event_user,priority:2"`
	UserType queue.UserType `gorm:"column:user_type;not null"`
	Status   queue.Status   `gorm:"column:status;not null"`
	// StatusAt is the time of the record that set Status.
	StatusAt time.Time `gorm:"column:status_at;not null"`
	// JoinedAt is nil until the joined record has been written (records
	// may arrive out of order).
	JoinedAt   *time.Time `gorm:"column:joined_at"`
	AdmittedAt *time.Time `gorm:"column:admitted_at"`
	FinishedAt *time.Time `gorm:"column:finished_at"`
	// Lane is queue.LanePriority for a FAST TRACK attempt.
	Lane queue.Lane `gorm:"column:lane;not null;default:''"`
}

// TableName implements gorm's schema.Tabler.
func (Entry) TableName() string { return "entries" }

func (e *Entry) toUTC() {
	e.StatusAt = e.StatusAt.UTC()
	e.JoinedAt = utcPtr(e.JoinedAt)
	e.AdmittedAt = utcPtr(e.AdmittedAt)
	e.FinishedAt = utcPtr(e.FinishedAt)
}

// Transition is a row of the entry_transitions table, the audit trail: one
// row per stream record. StreamID is the record's queue.Record.Key.
type Transition struct {
	ID       int64        `gorm:"column:id;primaryKey;autoIncrement"`
	StreamID string       `gorm:"column:stream_id;not null;uniqueIndex:ux_entry_transitions_event_stream,priority:2"`
	EventID  string       `gorm:"column:event_id;not null;uniqueIndex:ux_entry_transitions_event_stream,priority:1;index:idx_entry_transitions_event_seq,priority:1"`
	Seq      int64        `gorm:"column:seq;not null;index:idx_entry_transitions_event_seq,priority:2"`
	UserID   string       `gorm:"column:user_id;not null"`
	Status   queue.Status `gorm:"column:status;not null"`
	At       time.Time    `gorm:"column:at;not null"`
	Lane     queue.Lane   `gorm:"column:lane;not null;default:''"`
}

// TableName implements gorm's schema.Tabler.
func (Transition) TableName() string { return "entry_transitions" }

// Order is a row of the orders table: one seat sold, from a done record.
type Order struct {
	OrderID   string    `gorm:"column:order_id;primaryKey"`
	EventID   string    `gorm:"column:event_id;not null;uniqueIndex:ux_orders_event_seat,priority:1"`
	Seat      string    `gorm:"column:seat;not null;uniqueIndex:ux_orders_event_seat,priority:2"`
	UserID    string    `gorm:"column:user_id;not null"`
	Seq       int64     `gorm:"column:seq;not null"`
	CreatedAt time.Time `gorm:"column:created_at;not null"`
}

// TableName implements gorm's schema.Tabler.
func (Order) TableName() string { return "orders" }
