// Package drop runs practice drops: public practice events that any number
// of people race at the same moment, against one crowd of VIRTUAL users the
// server plays itself (API-next.md, "Practice drops"). A drop's queue is an
// ordinary event; its crowd joins the same sorted set as the people through
// the queue engine's crowd join, and its admitted users buy through the same
// order script. Drops and results live in SQL, crowd progress in Redis; one
// replica at a time plays a drop's crowd, under a lease.
//
// The package knows nothing of HTTP or SQL: adapters call Service, which
// stores through the Store interface.
package drop

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// Limits of a drop (API-next.md).
const (
	MaxCrowd = 1_000_000
	MinSeats = 1
	MaxSeats = 100_000
	// MinLead is the least time between an admin's create and the opening.
	MinLead = 10 * time.Second
	// MaxLead is the furthest ahead a drop may open.
	MaxLead = 30 * 24 * time.Hour
	// Countdown is the last stretch before the opening, phase countdown.
	Countdown = 60 * time.Second
)

// Phase is where a drop is in its life.
type Phase string

// The phases (API-next.md).
const (
	PhaseScheduled Phase = "scheduled"
	PhaseCountdown Phase = "countdown"
	PhaseRunning   Phase = "running"
	PhaseFinished  Phase = "finished"
)

// EventPrefix starts every drop's event id; IDPrefix every drop id.
const (
	EventPrefix = "drop-"
	IDPrefix    = "d-"
)

// Drop is one practice drop.
type Drop struct {
	ID string `json:"id"`
	// Event is the id of the drop's queue event.
	Event    string    `json:"event"`
	Scenario string    `json:"scenario"`
	Level    Level     `json:"level"`
	Crowd    int       `json:"crowd"`
	Seats    int       `json:"seats"`
	OpensAt  time.Time `json:"opens_at"`
	// ClosesAt ends the event's joins; the crowd has joined well before.
	ClosesAt time.Time `json:"closes_at"`
	// Schedule names the configured schedule that made the drop; empty for
	// an admin's.
	Schedule  string    `json:"schedule,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Owner is the one person who may race a private drop (a solo practice
	// race); empty for a public drop. Client is the address it was started
	// from.
	Owner  string `json:"-"`
	Client string `json:"-"`
	// Final is set once the drop is finished.
	Final *Final `json:"-"`
	// Held is true while the drop's event is kept (its line in Redis, its
	// audit trail in SQL); false once a finished drop's event is forgotten.
	Held bool `json:"-"`
	// Prefix starts the user id of each of the drop's virtual users; the
	// index follows (see VirtualPrefix).
	Prefix string `json:"-"`
}

// Final is what a finished drop keeps: the figures that are live in Redis
// while it runs.
type Final struct {
	FinishedAt   time.Time
	SoldOut      bool
	Sold         int64
	PeopleJoined int64
	// Joined counts every join of the drop, people's and the crowd's.
	Joined      int64
	CrowdJoined int64
	CrowdSold   int64
	CrowdP50    time.Duration
	CrowdP90    time.Duration
	CrowdP99    time.Duration
	// CrowdSteps is the crowd's time per order step and in total (see
	// Service.CrowdSteps); nil for a scenario without steps.
	CrowdSteps []StepQuantiles
}

// Private reports whether the drop is a solo race, one person's alone.
func (d Drop) Private() bool { return d.Owner != "" }

// Phase is the drop's phase at now.
func (d Drop) Phase(now time.Time) Phase {
	switch {
	case d.Final != nil:
		return PhaseFinished
	case !now.Before(d.OpensAt):
		return PhaseRunning
	case !now.Before(d.OpensAt.Add(-Countdown)):
		return PhaseCountdown
	}
	return PhaseScheduled
}

// EventID is the event of the drop id.
func EventID(id string) string { return EventPrefix + strings.TrimPrefix(id, IDPrefix) }

// IDOfEvent is the drop of an event id; ok is false when the event is no drop's.
func IDOfEvent(eventID string) (string, bool) {
	rest, ok := strings.CutPrefix(eventID, EventPrefix)
	return IDPrefix + rest, ok && rest != ""
}

// idTime formats an opening in ids: "2026-11-25t2000", seconds only when
// not whole minutes.
func idTime(t time.Time) string {
	t = t.UTC()
	if t.Second() != 0 || t.Nanosecond() != 0 {
		return strings.ToLower(t.Format("2006-01-02t150405"))
	}
	return strings.ToLower(t.Format("2006-01-02t1504"))
}

// ScheduledID is the id of a schedule's drop opening at opensAt: the same on
// every replica, so replicas creating it at once make one drop.
func ScheduledID(schedule string, opensAt time.Time) string {
	return IDPrefix + idTime(opensAt) + "-" + schedule
}

// CrowdPrefix starts the user id of every virtual user of a drop's crowd:
// "VIRTUAL:~" and the index. The line is the drop's own event, so the id
// needs to tell a crowd's users apart only from the simulator's bots of
// that event, and no bot's id holds '~' (a bot_id is of [A-Za-z0-9_.-]). It is
// short because the crowd's ids are most of a drop's Redis work and
// memory: a million members of the line, each hashed, copied and compared
// (with the drop's id in it, as before, a crowd join cost Redis ~10% more
// instructions).
const CrowdPrefix = queue.VirtualPrefix + "~"

// VirtualPrefix starts the user id of every virtual user of d; the index
// follows. A drop stored before drops kept their prefix had its id in it.
func (d Drop) VirtualPrefix() string {
	if d.Prefix != "" {
		return d.Prefix
	}
	return queue.VirtualPrefix + d.ID + "-"
}

// seed fixes a drop's crowd draws: its scenario seed mixed with its id.
func seed(scenarioSeed int64, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return splitmix64(uint64(scenarioSeed) ^ h.Sum64())
}

// badField is the 400 for an invalid field, naming it.
func badField(field, format string, args ...any) error {
	return queue.Errorf(queue.CodeBadRequest, "%s %s", field, fmt.Sprintf(format, args...))
}

// Request is what an admin asks for (POST /api/v1/admin/drops). Nil
// fields are not given: the scenario's count and seats, level normal.
type Request struct {
	Scenario string
	Level    Level
	Crowd    *int
	Seats    *int
	OpensAt  time.Time
	// Opening sets the event's queue mode and challenge (default fifo, none).
	Opening queue.Opening
}

// Validate checks the request's fields at now, scenario names aside.
func (r Request) Validate(now time.Time) error {
	switch {
	case r.Scenario == "":
		return badField("scenario", "is required")
	case !r.Level.Valid():
		return badField("level", "must be easy, normal or hard, got %q", r.Level)
	case r.Crowd != nil && (*r.Crowd < 0 || *r.Crowd > MaxCrowd):
		return badField("crowd", "must be between 0 and %d, got %d", MaxCrowd, *r.Crowd)
	case r.Seats != nil && (*r.Seats < MinSeats || *r.Seats > MaxSeats):
		return badField("seats", "must be between %d and %d, got %d", MinSeats, MaxSeats, *r.Seats)
	case r.OpensAt.IsZero():
		return badField("opens_at", "is required")
	case r.OpensAt.Before(now.Add(MinLead)):
		return badField("opens_at", "must be at least %s ahead (server time %s)", MinLead, now.UTC().Format(time.RFC3339))
	case r.OpensAt.After(now.Add(MaxLead)):
		return badField("opens_at", "must be at most %d days ahead", int(MaxLead/(24*time.Hour)))
	}
	return r.Opening.Validate(&r.OpensAt)
}
