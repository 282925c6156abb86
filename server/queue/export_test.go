package queue

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TickStep runs one call of a tick (one chunk) and returns what the tick
// has left to promote, for tests that cut a tick short.
func (e *Engine) TickStep(ctx context.Context, eventID, replica string, lease time.Duration) (TickResult, int, error) {
	return e.tickStep(ctx, eventID, replica, lease)
}

// MintToken signs the queue token of attempt (user, seq) of eventID, as a
// join that made it would have.
func MintToken(e *Engine, eventID string, seq int64, user string) string {
	return e.tokens.Mint(eventID, seq, user)
}

// MustFillLine puts n users straight into eventID's line, prefix followed
// by 1..n at seqs 1..n, and sets its seq counter past them.
func MustFillLine(tb testing.TB, rdb *redis.Client, eventID, prefix string, n int) {
	tb.Helper()
	mustFillLine(tb, rdb, eventID, prefix, n)
}
