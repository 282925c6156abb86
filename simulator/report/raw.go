// Package report turns what a simulator run recorded into its reports: a text
// summary, JSON with a stable schema, and a self-contained HTML page with
// charts. Runs (or shards of one run) merge by concatenating what they
// recorded and summarising again.
package report

import "time"

// Raw is everything one run (or shard) recorded; the engine fills it.
type Raw struct {
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	// Shard is "i/n" when the run was one shard of n, else empty.
	Shard    string    `json:"shard,omitempty"`
	Target   string    `json:"target"`
	EventID  string    `json:"event_id"`
	Seats    int       `json:"seats"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// OpensAt is when the event opened; arrivals and times count from it.
	OpensAt time.Time `json:"opens_at"`
	// Generator is what the load generator could hold and how it kept to
	// its schedule.
	Generator Generator `json:"generator"`
	// Agg are the run's aggregates; a run recorded before them (or built by
	// hand) has none, and Build makes them from Bots and Requests.
	Agg *Aggregates `json:"agg,omitempty"`
	// Bots and Requests are the raw records, kept only on request.
	Bots     []Bot     `json:"bots"`
	Requests []Request `json:"requests"`
	// Samples are the event's stats polled during the run, in time order.
	Samples []Sample `json:"samples"`
	// Final is the event's stats when the run ended.
	Final EventStats `json:"final"`
}

// Generator describes the load generator of one run or shard.
type Generator struct {
	// FDLimit is the process's descriptor limit once raised; Pool the
	// connections its requests share; Streams the SSE streams it may hold.
	FDLimit int `json:"fd_limit,omitempty"`
	Pool    int `json:"pool,omitempty"`
	Streams int `json:"streams,omitempty"`
	// LagTolerance is how late an arrival may start before the run is
	// flagged "load generator saturated" (on the arrivals' p99).
	LagTolerance time.Duration `json:"lag_tolerance_ns,omitempty"`
	// StartAt is the synchronised start asked for; StartLate how much
	// later this shard's clock actually started.
	StartAt   time.Time     `json:"start_at,omitzero"`
	StartLate time.Duration `json:"start_late_ns,omitempty"`
}

// Bot outcomes.
const (
	OutcomeBought    = "bought"    // got a seat
	OutcomeSoldOut   = "sold_out"  // admitted, but every seat was gone
	OutcomeOutbid    = "outbid"    // admitted, but lost more seat races (SEAT_TAKEN) than it retries
	OutcomeExpired   = "expired"   // admitted, but the window ran out before an order
	OutcomeAbandoned = "abandoned" // left the line when patience ran out
	OutcomeFailed    = "failed"    // an unexpected error ended the bot
	OutcomeCancelled = "cancelled" // the run was stopped while the bot was in flight
)

// Bot is one simulated user's journey.
type Bot struct {
	ID       string `json:"id"`
	Behavior string `json:"behavior"`
	Phase    string `json:"phase"`
	Wait     string `json:"wait"` // sse | poll
	// ArrivedAt is when the bot arrived; JoinedAt when its join was answered.
	ArrivedAt time.Time `json:"arrived_at"`
	JoinedAt  time.Time `json:"joined_at,omitzero"`
	// Reaction is the delay between arrival and pressing join.
	Reaction time.Duration `json:"reaction_ns"`
	// Scheduled is set for an open-model arrival; Lag is then how much
	// later than planned it arrived, HeldBack whether it waited for a
	// connection slot first.
	Scheduled bool          `json:"scheduled,omitempty"`
	Lag       time.Duration `json:"lag_ns,omitempty"`
	HeldBack  bool          `json:"held_back,omitempty"`
	// Seq is the server's arrival number; PositionAtJoin the place the join answered.
	Seq            int64 `json:"seq,omitempty"`
	PositionAtJoin int64 `json:"position_at_join,omitempty"`
	// AdmittedAt is the server's admission decision, AdmittedSeen when the bot learned of it.
	AdmittedAt   time.Time `json:"admitted_at,omitzero"`
	AdmittedSeen time.Time `json:"admitted_seen,omitzero"`
	// AdmissionNo is the server's admission order.
	AdmissionNo int64     `json:"admission_no,omitempty"`
	FinishedAt  time.Time `json:"finished_at"`
	Outcome     string    `json:"outcome"`
	Seat        string    `json:"seat,omitempty"`
	// SeatTaken counts SEAT_TAKEN answers before the outcome.
	SeatTaken int `json:"seat_taken,omitempty"`
	// LeftActive is set when the bot left (patience ran out) and the server
	// said it had been admitted just before: the two crossed.
	LeftActive bool   `json:"left_active,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Request is one HTTP call a bot made. Step names: join, status, stream,
// seats, order, leave.
type Request struct {
	Step string    `json:"step"`
	At   time.Time `json:"at"`
	// Wait runs from At (the bot decides to send) to the request written
	// to the connection; Latency from then to the answer read.
	Wait    time.Duration `json:"wait_ns,omitempty"`
	Latency time.Duration `json:"latency_ns"`
	Code    int           `json:"code"`
	// ErrCode is the API error code of a non-2xx answer, Error a transport error.
	ErrCode string `json:"err_code,omitempty"`
	// ErrStatus is error.status of a NOT_ACTIVE answer (WAITING, EXPIRED,
	// DONE or LEFT): NOT_ACTIVE is an expected answer only once the token
	// has EXPIRED, so the error rate needs it.
	ErrStatus string `json:"err_status,omitempty"`
	Error     string `json:"error,omitempty"`
	BytesIn   int64  `json:"bytes_in,omitempty"`
	BytesOut  int64  `json:"bytes_out,omitempty"`
}

// EventStats are the event's counters (GET /api/v1/events/{id} stats).
type EventStats struct {
	Waiting       int64 `json:"waiting"`
	Active        int64 `json:"active"`
	AdmittedTotal int64 `json:"admitted_total"`
	Sold          int64 `json:"sold"`
	SeatsLeft     int64 `json:"seats_left"`
}

// Sample is the event's stats at one moment.
type Sample struct {
	At time.Time `json:"at"`
	EventStats
}
