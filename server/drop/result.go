package drop

import (
	"context"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// Outcome is how a person's race in a drop ended, or "waiting" while it
// has not.
type Outcome string

// The outcomes (API-next.md).
const (
	OutcomeSeat    Outcome = "seat"
	OutcomeSoldOut Outcome = "sold_out"
	OutcomeExpired Outcome = "expired"
	OutcomeLeft    Outcome = "left"
	OutcomeWaiting Outcome = "waiting"
)

// Result is one person's race in a drop, from the event's record stream.
type Result struct {
	DropID   string
	UserID   string
	Nickname string
	// Seq is the arrival number of the person's first join, counting every
	// join of the drop (people's and the crowd's); Attempt is their latest.
	Seq     int64
	Attempt int64
	// AttemptAt is when the latest attempt joined.
	AttemptAt time.Time
	// Position is their place in line when they first joined.
	Position int64
	JoinedAt time.Time
	// Reaction is JoinedAt − the opening.
	Reaction   time.Duration
	AdmittedAt *time.Time
	// Wait is the time in line of the admitted attempt.
	Wait    *time.Duration
	Outcome Outcome
	// Seat is the seat bought ("" for none), SeatRow its row (0 the front),
	// Bought the time from the opening to the purchase.
	Seat        string
	SeatRow     int
	Bought      *time.Duration
	FalseStarts int
	// Scenario, OpensAt, Crowd and Private are the drop's, for
	// leaderboards and a person's solo races.
	Scenario string
	OpensAt  time.Time
	Crowd    int
	Private  bool
}

// Ended reports whether the person's attempt has ended (a seat, sold out,
// expired or left), whatever the rest of the drop does.
func (r Result) Ended() bool { return r.Outcome != OutcomeWaiting }

// Store keeps drops and results durably (SQL in production). Drops are
// unique by id; a duplicate create fails with queue.CodeEventExists.
type Store interface {
	CreateDrop(ctx context.Context, d Drop) error
	// Drop fails with queue.CodeDropNotFound for an unknown id.
	Drop(ctx context.Context, id string) (Drop, error)
	// OpenDrops lists the drops not finished, soonest opening first.
	OpenDrops(ctx context.Context) ([]Drop, error)
	// FinishedDrops lists up to limit finished public drops, latest first.
	FinishedDrops(ctx context.Context, limit int) ([]Drop, error)
	// ClaimDrop stores d if fits accepts the unfinished drops, counting
	// and storing atomically across replicas; fits' error comes back as it
	// is. DeleteDrop deletes a drop that was never played.
	ClaimDrop(ctx context.Context, d Drop, fits func(open []Drop) error) error
	DeleteDrop(ctx context.Context, id string) error
	// FinishDrop records a drop's end; the first call wins.
	FinishDrop(ctx context.Context, id string, f Final) error
	// StaleDrops lists finished drops whose event is still held, finished
	// before t; ForgetDrop records that it is not.
	StaleDrops(ctx context.Context, t time.Time) ([]Drop, error)
	ForgetDrop(ctx context.Context, id string) error
	// DeleteEvent deletes an event definition (the drop's, once forgotten).
	DeleteEvent(ctx context.Context, id string) error
	// SaveCrowdChunks keeps crowd joins; CrowdFloor is how far SQL knows
	// a crowd (virtual users prefix+index) joined: past its chunks and
	// every virtual user of the audit trail.
	SaveCrowdChunks(ctx context.Context, cs []queue.CrowdChunk) error
	CrowdFloor(ctx context.Context, eventID, prefix string) (int64, error)
	// SaveResults creates or replaces people's results.
	SaveResults(ctx context.Context, rs []Result) error
	// Results lists a drop's results by place in line.
	Results(ctx context.Context, dropID string) ([]Result, error)
	// Result fails with queue.CodeResultNotFound when the person did not race.
	Result(ctx context.Context, dropID, userID string) (Result, error)
	// Leaderboard lists up to limit results of public drops opened from
	// since (of one scenario unless ""), at most one per person, best first:
	// a seat, then its row, then the time to purchase, then the reaction.
	Leaderboard(ctx context.Context, since time.Time, scenario string, limit int) ([]Result, error)
	// SoloHistory lists up to limit of a person's results in private drops,
	// latest opening first.
	SoloHistory(ctx context.Context, userID string, limit int) ([]Result, error)
	// SoloBoard lists up to limit results in private drops of a scenario,
	// fastest reaction first (earlier drops win ties).
	SoloBoard(ctx context.Context, scenario string, limit int) ([]Result, error)
}
