package queue_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// MustEngine starts a private Redis and returns an engine on it with a test clock.
func MustEngine(tb testing.TB) (*queue.Engine, *clock, *redis.Client) {
	tb.Helper()
	p := redistest.MustStart(tb)
	rdb := redistest.MustClient(tb, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	return queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now)), clk, rdb
}

// MustEvent creates an event with sensible defaults changed by mutate.
func MustEvent(tb testing.TB, eng *queue.Engine, id string, mutate func(*queue.Event)) queue.Event {
	tb.Helper()
	ev := queue.Event{ID: id, Name: id, Seats: 100, Capacity: 2, AdmitBatch: 10, AdmitIntervalMS: 100,
		ActiveTTLS: 60, Policy: queue.PolicyCapacity, CreatedAt: eng.Now()}
	if mutate != nil {
		mutate(&ev)
	}
	if err := eng.CreateEvent(context.Background(), ev); err != nil {
		tb.Fatalf("create event %s: %v", id, err)
	}
	return ev
}

// MustJoin joins and fails the test on error.
func MustJoin(tb testing.TB, eng *queue.Engine, eventID, user string) queue.Entry {
	tb.Helper()
	en, _, err := eng.Join(context.Background(), eventID, user)
	if err != nil {
		tb.Fatalf("join %s as %s: %v", eventID, user, err)
	}
	return en
}

// MustStatus returns a token's status and fails the test on error.
func MustStatus(tb testing.TB, eng *queue.Engine, eventID, token string) queue.Entry {
	tb.Helper()
	en, err := eng.Status(context.Background(), eventID, token)
	if err != nil {
		tb.Fatalf("status: %v", err)
	}
	return en
}

// MustTick runs one due tick as replica "r1".
func MustTick(tb testing.TB, eng *queue.Engine, eventID string) queue.TickResult {
	tb.Helper()
	res, err := eng.Tick(context.Background(), eventID, "r1", time.Minute)
	if err != nil {
		tb.Fatalf("tick: %v", err)
	}
	return res
}

// MustCode asserts err carries code (and status, when want is NOT_ACTIVE).
func MustCode(tb testing.TB, err error, code queue.Code, status queue.Status) {
	tb.Helper()
	var qe *queue.Error
	if !errors.As(err, &qe) || qe.Code != code {
		tb.Fatalf("error = %v, want code %s", err, code)
	}
	if status != "" && qe.Status != status {
		tb.Fatalf("error status = %s, want %s", qe.Status, status)
	}
}

// MustRecords returns every record of an event's stream.
func MustRecords(tb testing.TB, eng *queue.Engine, eventID string) []queue.Record {
	tb.Helper()
	recs, err := eng.Records(context.Background(), eventID, "0", 1<<30)
	if err != nil {
		tb.Fatalf("records: %v", err)
	}
	return recs
}

// OrderVirtual buys seat for a VIRTUAL user's attempt seq through
// OrderVirtuals, alone.
func OrderVirtual(ctx context.Context, eng *queue.Engine, ev queue.Event, user string, seq int64, seat string) error {
	return eng.OrderVirtuals(ctx, ev, []queue.VirtualOrder{{UserID: user, Seq: seq, Seat: seat}})[0]
}

// MustCommandCalls returns how many times the server has run command cmd
// (lower case), calls inside scripts included.
func MustCommandCalls(tb testing.TB, rdb *redis.Client, cmd string) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("info commandstats: %v", err)
	}
	m := regexp.MustCompile(`(?m)^cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
