package practice

import (
	"fmt"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// Limits bound what practice races may take of one server. A start is
// checked against them before anything is made: a refused one creates no
// event and schedules no bot.
type Limits struct {
	// Races is the most races running at once, each counted from its start
	// (countdown included) to its end.
	Races int
	// Bots is the most planned bots of the running races together.
	Bots int
	// Held is the most races kept in memory, running or ended; finished
	// ones are let go, first ended first, to make room.
	Held int
	// PerClient is the most running races started from one client address
	// by users other than the caller (whose own race a new start replaces).
	PerClient int
	// Conns is the most loopback connections all bots share for calls.
	Conns int
	// Streams is the most SSE streams all bots hold at once.
	Streams int
}

func (l Limits) withDefaults() Limits {
	or := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	return Limits{Races: or(l.Races, DefaultMaxRaces), Bots: or(l.Bots, DefaultMaxRunningBots),
		Held: or(l.Held, DefaultMaxHeld), PerClient: or(l.PerClient, DefaultMaxPerClient),
		Conns: or(l.Conns, DefaultLoopbackConns), Streams: or(l.Streams, DefaultMaxStreams)}
}

// usage is what a server's races hold, as one caller's start sees it.
type usage struct {
	closed bool
	// running counts the races neither finished nor stopped, other than the
	// caller's; bots sums their planned bots; runningEnd is the soonest of
	// their hard ends.
	running, bots int
	runningEnd    time.Time
	// held counts every race kept; finished those that can be let go.
	held, finished int
	// client counts the running races started from the caller's address by
	// someone else; clientEnd is the soonest of their hard ends.
	client    int
	clientEnd time.Time
}

// check decides whether a start of planned bots fits beside u at now. A
// refusal says when to try again: by the soonest hard end among the races
// in the way, at most MaxRetryAfter.
func (l Limits) check(u usage, planned int, now time.Time) error {
	refuse := func(code queue.Code, until time.Time, format string, args ...any) error {
		after := min(max(until.Sub(now), time.Second), MaxRetryAfter)
		return &queue.Error{Code: code, Message: fmt.Sprintf(format, args...), RetryAfter: after.Round(time.Second)}
	}
	switch {
	case u.closed:
		return refuse(queue.CodeUnavailable, now, "the practice service is shutting down")
	case u.client >= l.PerClient:
		return refuse(queue.CodeRateLimited, u.clientEnd,
			"a practice race started from your address is still running (at most %d per address at once); try again when it has ended",
			l.PerClient)
	case u.running >= l.Races:
		return refuse(queue.CodeUnavailable, u.runningEnd,
			"%d practice races are running on this server, the most it runs at once; try again in a minute", u.running)
	case u.bots+planned > l.Bots:
		return refuse(queue.CodeUnavailable, u.runningEnd,
			"the running practice races have too many bots for this one (%d planned, at most %d); try again in a minute",
			u.bots+planned, l.Bots)
	case u.held-u.finished >= l.Held:
		return refuse(queue.CodeUnavailable, u.runningEnd,
			"this server holds %d practice races, the most it keeps; try again in a minute", u.held)
	}
	return nil
}
