package practice

import (
	"errors"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

func TestLimitsCheck(t *testing.T) {
	l := Limits{Races: 4, Bots: 1000, Held: 8, PerClient: 1}.withDefaults()
	now := t0
	soon, late := now.Add(30*time.Second), now.Add(10*time.Minute)
	for _, tc := range []struct {
		name    string
		u       usage
		planned int
		code    queue.Code
		retry   time.Duration // want, when refused
	}{
		// An idle server takes anything within the bot limit.
		{"idle", usage{}, 1000, "", 0},
		// Room left: three races, 600 bots running.
		{"room left", usage{running: 3, bots: 600, runningEnd: soon, held: 3}, 400, "", 0},
		// Shutting down wins over everything.
		{"closed", usage{closed: true, client: 1, running: 4}, 10, queue.CodeUnavailable, time.Second},
		// Someone else's race from this address runs: 429 until it ends.
		{"address busy", usage{client: 1, clientEnd: soon, running: 1, runningEnd: soon}, 10, queue.CodeRateLimited, 30 * time.Second},
		// The per-address refusal comes before the server's (API.md: 429 first).
		{"address busy on a full server", usage{client: 1, clientEnd: soon, running: 4, runningEnd: soon}, 10, queue.CodeRateLimited, 30 * time.Second},
		// Every race slot taken.
		{"races full", usage{running: 4, runningEnd: soon, held: 4}, 10, queue.CodeUnavailable, 30 * time.Second},
		// One bot over the budget.
		{"bots full", usage{running: 1, bots: 991, runningEnd: soon, held: 1}, 10, queue.CodeUnavailable, 30 * time.Second},
		// A scenario bigger than the whole budget never fits.
		{"too many bots alone", usage{}, 1001, queue.CodeUnavailable, time.Second},
		// Held full, but a finished race can be let go.
		{"held full, one finished", usage{running: 3, runningEnd: soon, held: 8, finished: 1}, 10, "", 0},
		// Held full of races that still run or stop: nothing to let go.
		{"held full, none finished", usage{running: 3, runningEnd: soon, held: 8}, 10, queue.CodeUnavailable, 30 * time.Second},
		// A far hard end is promised as at most MaxRetryAfter.
		{"retry capped", usage{running: 4, runningEnd: late, held: 4}, 10, queue.CodeUnavailable, MaxRetryAfter},
		// A hard end already past still asks for a second's wait.
		{"retry at least a second", usage{running: 4, runningEnd: now.Add(-time.Second), held: 4}, 10, queue.CodeUnavailable, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := l.check(tc.u, tc.planned, now)
			if got := queue.ErrorCode(err); got != tc.code {
				t.Fatalf("check = %v, want code %q", err, tc.code)
			}
			var qe *queue.Error
			if err != nil && (!errors.As(err, &qe) || qe.RetryAfter != tc.retry || qe.Message == "") {
				t.Errorf("check = %#v, want Retry-After %v and a message", err, tc.retry)
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{Races: 2, Streams: 7}.withDefaults()
	want := Limits{Races: 2, Bots: DefaultMaxRunningBots, Held: DefaultMaxHeld, PerClient: DefaultMaxPerClient,
		Conns: DefaultLoopbackConns, Streams: 7}
	if got != want {
		t.Fatalf("withDefaults = %+v, want %+v", got, want)
	}
}
