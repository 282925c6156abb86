// Package record holds a finished practice race as it is kept: a leaf
// package, so the SQL store can keep races without importing the practice
// service (and the simulator it runs).
package record

import "time"

// Outcomes of the person's attempt (API "practice result").
const (
	OutcomeBought            = "bought"
	OutcomeSoldOut           = "sold_out"
	OutcomeExpired           = "expired"
	OutcomeLeft              = "left"
	OutcomeNotJoined         = "not_joined"
	OutcomeWaitingWhenClosed = "waiting_when_closed"
)

// You is the person's part of a result. Figures that do not apply (no
// join, no admission) are nil.
type You struct {
	Joined             bool    `json:"joined"`
	ReactionMS         *int64  `json:"reaction_ms"`
	JoinRank           *int64  `json:"join_rank"`
	PositionAtJoin     *int64  `json:"position_at_join"`
	BotsAhead          *int64  `json:"bots_ahead"`
	PeopleAhead        *int64  `json:"people_ahead"`
	Admitted           bool    `json:"admitted"`
	WaitMS             *int64  `json:"wait_ms"`
	Seat               *string `json:"seat"`
	Outcome            string  `json:"outcome"`
	ReactionPercentile *int    `json:"reaction_percentile"`
}

// Record is one finished race as it is kept in the database: the person's
// figures, without the bots' distribution.
type Record struct {
	EventID    string
	Scenario   string
	UserID     string
	Nickname   string
	OpensAt    time.Time
	FinishedAt time.Time
	Bots       int
	Seats      int
	Sold       int64
	You        You
}
