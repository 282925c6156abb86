package store

import (
	"strings"
	"time"

	"github.com/rushline/rushline/internal/fair"
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
	// Mark, SeqCap and AdmitCap are the event's current queue.Incarnation.
	Mark     string `gorm:"column:mark;not null;default:''"`
	SeqCap   int64  `gorm:"column:seq_cap;not null;default:0"`
	AdmitCap int64  `gorm:"column:admit_cap;not null;default:0"`
	// FenceMS is the Redis time (ms) the latest rebuild began at: a record
	// stamped before it that reaches SQL after it came from the lost state
	// and missed the rebuild (see WriteRecords).
	FenceMS int64 `gorm:"column:fence_ms;not null;default:0"`
	// The opening order and bot defence (queue.Event's fields of the same
	// names); DrawSeed is the secret the draw at opens_at reveals.
	QueueMode       queue.QueueMode `gorm:"column:queue_mode;not null;default:'fifo'"`
	PrequeueOpensAt *time.Time      `gorm:"column:prequeue_opens_at"`
	DrawSeed        string          `gorm:"column:draw_seed;not null;default:''"`
	Challenge       queue.Challenge `gorm:"column:challenge;not null;default:'none'"`
	PowBits         int             `gorm:"column:pow_bits;not null;default:0"`
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
		QueueMode:       ev.QueueMode,
		PrequeueOpensAt: utcPtr(ev.PrequeueOpensAt),
		DrawSeed:        ev.DrawSeed,
		Challenge:       ev.Challenge,
		PowBits:         ev.PowBits,
	}
}

// Event returns the row as a queue.Event, times in UTC.
func (r EventRow) Event() queue.Event {
	ev := queue.Event{
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
		QueueMode:       r.QueueMode,
		PrequeueOpensAt: utcPtr(r.PrequeueOpensAt),
		DrawSeed:        r.DrawSeed,
		Challenge:       r.Challenge,
		PowBits:         r.PowBits,
	}
	if r.DrawSeed != "" {
		ev.DrawCommitment = fair.DrawCommitment(r.DrawSeed)
	}
	return ev
}

// Entry is a row of the entries table: the latest known state of one queue
// token, folded from its stream records.
type Entry struct {
	EventID  string         `gorm:"column:event_id;primaryKey"`
	Seq      int64          `gorm:"column:seq;primaryKey;autoIncrement:false"`
	UserID   string         `gorm:"column:user_id;not null"`
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
	// AdmissionNo is the number the admitted record gave the attempt; 0
	// until it is written (and in rows written before the column existed).
	AdmissionNo int64 `gorm:"column:admission_no;not null;default:0"`
	// JoinedID is the stream key (queue.Record.Key) of the joined record,
	// "" until it is written. The joined record's transition lives in the
	// token's JoinRun, not in entry_transitions, and the run also stands
	// for a token that has only joined. Entries folds the runs in, so its
	// rows carry JoinedAt, JoinedID and Lane from them. Rows written before
	// join_runs existed hold their joined record here, and rows written
	// before this column existed keep it in entry_transitions.
	JoinedID string `gorm:"column:joined_id;not null;default:''"`
}

// TableName implements gorm's schema.Tabler.
func (Entry) TableName() string { return "entries" }

// JoinRun is a row of the join_runs table: the joined records of one stream
// entry (a join script's run, a draw's batch) with consecutive seqs, tokens
// FirstSeq to FirstSeq+N-1 in order. A token's joined record lives here,
// not in its entries row, so a burst of joins costs a row per run instead
// of one per token; a token that has only joined has no entries row at
// all. Entries and Transitions fold the runs back in.
type JoinRun struct {
	EventID  string `gorm:"column:event_id;primaryKey"`
	FirstSeq int64  `gorm:"column:first_seq;primaryKey;autoIncrement:false"`
	N        int    `gorm:"column:n;not null"`
	// JoinedAt is the time of every record of the run.
	JoinedAt time.Time `gorm:"column:joined_at;not null"`
	// StreamID and FirstPart name the first token's joined record
	// (queue.Record.ID and Part); the next token's is part FirstPart+1,
	// unless FirstPart is 0 (a one-record entry). StreamID is in the key:
	// a Redis that lost its last second of writes (appendfsync everysec, a
	// failover) hands the same seqs out again, in a run that may start
	// where a lost one did and reach further.
	StreamID  string `gorm:"column:stream_id;primaryKey"`
	FirstPart int    `gorm:"column:first_part;not null"`
	// Lanes is "" when every token is in the normal lane, otherwise a
	// letter per token: 'p' for the priority lane, 'n' for the normal one.
	Lanes string `gorm:"column:lanes;not null;default:''"`
	// Users holds the tokens' user ids, one per line.
	Users string `gorm:"column:users;not null"`
}

// TableName implements gorm's schema.Tabler.
func (JoinRun) TableName() string { return "join_runs" }

// entries expands the run into the entries rows of tokens that have only
// joined.
func (r JoinRun) entries() []Entry {
	out := make([]Entry, 0, r.N)
	users := r.Users
	for i := range r.N {
		var user string
		user, users, _ = strings.Cut(users, "\n")
		at := r.JoinedAt.UTC()
		part := 0
		if r.FirstPart > 0 {
			part = r.FirstPart + i
		}
		lane := queue.LaneNormal
		if i < len(r.Lanes) && r.Lanes[i] == 'p' {
			lane = queue.LanePriority
		}
		out = append(out, Entry{EventID: r.EventID, Seq: r.FirstSeq + int64(i), UserID: user, UserType: queue.TypeOf(user),
			Status: queue.StatusWaiting, StatusAt: at, JoinedAt: &at, Lane: lane,
			JoinedID: queue.Record{ID: r.StreamID, Part: part}.Key()})
	}
	return out
}

// joined is e with what j, its token's entry from a join run, knows and e
// does not: the joined record and the lane.
func (e Entry) joined(j Entry) Entry {
	if e.JoinedAt == nil {
		e.JoinedAt, e.JoinedID = j.JoinedAt, j.JoinedID
	}
	if e.Lane == queue.LaneNormal {
		e.Lane = j.Lane
	}
	return e
}

func (e *Entry) toUTC() {
	e.StatusAt = e.StatusAt.UTC()
	e.JoinedAt = utcPtr(e.JoinedAt)
	e.AdmittedAt = utcPtr(e.AdmittedAt)
	e.FinishedAt = utcPtr(e.FinishedAt)
}

// Transition is a row of the entry_transitions table, the audit trail: one
// row per stream record but the joined ones, which join_runs holds
// (JoinRun). StreamID is the record's queue.Record.Key.
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

// OrderConflict is a row of the order_conflicts table: an order (a done
// record's) the audit trail kept aside instead of in orders, for an operator
// to settle: see queue.Conflict.
type OrderConflict struct {
	OrderID   string    `gorm:"column:order_id;primaryKey"`
	EventID   string    `gorm:"column:event_id;not null;index:idx_order_conflicts_event"`
	Seat      string    `gorm:"column:seat;not null"`
	UserID    string    `gorm:"column:user_id;not null"`
	Seq       int64     `gorm:"column:seq;not null"`
	StreamID  string    `gorm:"column:stream_id;not null"`
	OrderedAt time.Time `gorm:"column:ordered_at;not null"`
	Reason    string    `gorm:"column:reason;not null"`
	// HolderOrderID, HolderUserID and HolderSeq name the order SQL holds the
	// seat for; empty when none.
	HolderOrderID string    `gorm:"column:holder_order_id;not null;default:''"`
	HolderUserID  string    `gorm:"column:holder_user_id;not null;default:''"`
	HolderSeq     int64     `gorm:"column:holder_seq;not null;default:0"`
	FoundAt       time.Time `gorm:"column:found_at;not null"`
}

// TableName implements gorm's schema.Tabler.
func (OrderConflict) TableName() string { return "order_conflicts" }
