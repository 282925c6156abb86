// Package queue is rushline's waiting-room engine: per-event queues held in
// Redis sorted sets, whose attempts change only inside Lua scripts. It knows nothing of HTTP or
// SQL; adapters live in sibling packages.
package queue

import (
	"strconv"
	"time"
)

// Policy decides how many waiting tokens one admission tick may promote.
type Policy string

// Admission policies (API.md, "Events").
const (
	// PolicyCapacity fills the active set up to Capacity, at most AdmitBatch per tick.
	PolicyCapacity Policy = "capacity"
	// PolicyBatch promotes a fixed AdmitBatch per tick and ignores Capacity.
	PolicyBatch Policy = "batch"
	// PolicyAdaptive scales the batch with downstream load (needs MaxTPS ≥ 1).
	PolicyAdaptive Policy = "adaptive"
)

// Valid reports whether p is a known policy.
func (p Policy) Valid() bool {
	return p == PolicyCapacity || p == PolicyBatch || p == PolicyAdaptive
}

// Status is the life-cycle state of a queue token.
type Status string

// Token states (API.md, "The queue").
const (
	StatusWaiting Status = "WAITING"
	StatusActive  Status = "ACTIVE"
	StatusExpired Status = "EXPIRED"
	StatusDone    Status = "DONE"
	StatusLeft    Status = "LEFT"
)

// Finished reports whether the token can no longer change state; its user may join again.
func (s Status) Finished() bool {
	return s == StatusExpired || s == StatusDone || s == StatusLeft
}

// UserType tells people from simulator bots.
type UserType string

// User types (API.md, "Identities and credentials").
const (
	UserActual  UserType = "ACTUAL"
	UserVirtual UserType = "VIRTUAL"
)

// VirtualPrefix starts every VIRTUAL user id; no ACTUAL user can hold one.
const VirtualPrefix = "VIRTUAL:"

// TypeOf derives a user's type from its id.
func TypeOf(userID string) UserType {
	if len(userID) >= len(VirtualPrefix) && userID[:len(VirtualPrefix)] == VirtualPrefix {
		return UserVirtual
	}
	return UserActual
}

// Event is one drop: a seat map guarded by one queue.
type Event struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	Seats           int    `json:"seats"`
	Capacity        int    `json:"capacity"`
	AdmitBatch      int    `json:"admit_batch"`
	AdmitIntervalMS int    `json:"admit_interval_ms"`
	ActiveTTLS      int    `json:"active_ttl_s"`
	Policy          Policy `json:"policy"`
	MaxTPS          int    `json:"max_tps"`
	// PriorityShare (0..1) is the share of each tick's room served from the
	// priority (FAST TRACK) lane; DefaultPriorityShare when not given.
	PriorityShare float64    `json:"priority_share"`
	OpensAt       *time.Time `json:"opens_at,omitempty"`
	ClosesAt      *time.Time `json:"closes_at,omitempty"`
	Paused        bool       `json:"paused"`
	CreatedAt     time.Time  `json:"created_at"`
	// Practice marks a private practice race (server/practice): only its
	// creator may join it as ACTUAL.
	Practice bool `json:"practice,omitempty"`
	// QueueMode (ModeFIFO when not given) and, for ModeRandomStart,
	// PrequeueOpensAt: from then until OpensAt joins are pre-queued.
	QueueMode       QueueMode  `json:"queue_mode"`
	PrequeueOpensAt *time.Time `json:"prequeue_opens_at,omitempty"`
	// DrawCommitment is the hex SHA-256 of DrawSeed, published from
	// creation; the seed itself is secret until OpensAt (Engine.Draw).
	DrawCommitment string `json:"draw_commitment,omitempty"`
	DrawSeed       string `json:"-"`
	// Challenge (ChallengeNone when not given) and, for ChallengePow, the
	// leading zero bits a solution must give.
	Challenge Challenge `json:"challenge"`
	PowBits   int       `json:"pow_bits,omitempty"`
}

// Incarnation ties one incarnation of an event's Redis state to SQL, which
// holds it first. Mark names the incarnation: a create or a rebuild makes a
// new one. SeqCap and AdmitCap are the highest seq and admission number SQL
// has reserved for it: Redis hands out none above them (a join answers
// UNAVAILABLE, a tick admits nobody), so after a Redis loss the counters
// resume at SQL's caps and no number is handed out twice. Zero caps (an event
// the engine made alone, without SQL) bound nothing.
type Incarnation struct {
	Mark     string
	SeqCap   int64
	AdmitCap int64
}

// Stats are an event's live counters.
type Stats struct {
	Waiting       int64 `json:"waiting"`
	Active        int64 `json:"active"`
	AdmittedTotal int64 `json:"admitted_total"`
	Sold          int64 `json:"sold"`
	SeatsLeft     int64 `json:"seats_left"`
	// Joined counts every join that took a place in line; Expired every
	// admitted attempt whose window ran out unused (a no-show).
	Joined  int64 `json:"joined"`
	Expired int64 `json:"expired"`
}

// RecordKind names an entry in an event's stream.
type RecordKind string

// Stream record kinds. Each is one state change of one token.
const (
	RecordJoined   RecordKind = "joined"
	RecordAdmitted RecordKind = "admitted"
	RecordExpired  RecordKind = "expired"
	RecordLeft     RecordKind = "left"
	RecordDone     RecordKind = "done"
)

// Record is one entry of an event's append-only stream: the source of the
// SQL audit trail, orders and push notifications.
type Record struct {
	// ID is the Redis stream id, valid on every replica. The records of one
	// batch entry (many attempts changed by one call) share it.
	ID string
	// Part numbers the records of a batch entry from 1; 0 for an entry of
	// one record. Key tells records apart.
	Part    int
	Kind    RecordKind
	EventID string
	// Seq is the token's place in the arrival sequence of its event.
	Seq    int64
	UserID string
	// At is when the change was decided.
	At time.Time
	// ExpiresAt and AdmissionNo (the 1-based order of admissions) are set on admitted records.
	ExpiresAt   time.Time
	AdmissionNo int64
	// Seat and OrderID are set on done records.
	Seat    string
	OrderID string
	// WasWaiting is set on left records that gave up a place in line.
	WasWaiting bool
	// Lane is LanePriority for a priority-lane attempt's records (l=p).
	Lane Lane
	// PriorityCode is set on the joined record that redeemed it.
	PriorityCode string
}

// ConflictReason says why the audit trail could not record an order as sold.
type ConflictReason string

// Conflict reasons.
const (
	// ConflictSeatTaken: SQL holds the seat for another order (the seat was
	// sold twice).
	ConflictSeatTaken ConflictReason = "seat_taken"
	// ConflictLate: the order reached SQL only after a rebuild of its event
	// from SQL had begun, so the rebuilt line does not have it and the seat
	// may be sold again (a record of the Redis loss window).
	ConflictLate ConflictReason = "late"
)

// Conflict is an order the audit trail kept aside instead of among the sold
// seats: the buyer was told 201, so an operator must settle it.
type Conflict struct {
	Reason ConflictReason
	// Record is the done record of the order.
	Record Record
	// Holder is the order SQL holds the seat for, with its seq; zero when
	// none.
	Holder    Order
	HolderSeq int64
}

// Key is the record's unique key in its event's stream: its ID, and
// "/part" for a record of a batch entry.
func (r Record) Key() string {
	if r.Part == 0 {
		return r.ID
	}
	return r.ID + "/" + strconv.Itoa(r.Part)
}
