package queue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// BenchmarkDraw measures the draw at a random_start opening: the pre-queue
// (filled straight into Redis, as pre-queue joins leave it) is ordered and
// put in line in chunked calls. It reports the whole draw's time, then runs
// the draw of a second pre-queue as large under the stall check (slower:
// it reads the SLOWLOG around every command) and reports the longest time
// one command held a CPU in Redis, and how many held it over 2 ms (each is
// logged: at a million, the line's hash table doubling inside a ZADD can
// take longer, as it does for joins growing a line that long; the draw's
// own work per call is a chunk of the engine's size). Run the million with
//
//	go test -run '^$' -bench 'Draw/1M' -benchtime 1x ./server/queue/
func BenchmarkDraw(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			p := redistest.MustStart(b)
			rdb := redistest.MustClient(b, p.Addr())
			checked := redistest.MustClient(b, p.Addr())
			check := mustStallCheck(b, p, p.Addr(), checked)
			check.lenient = true
			clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
			eng := queue.New(rdb, []byte("bench"), queue.WithClock(clk.Now))
			var total time.Duration
			for i := range b.N {
				b.StopTimer()
				start := clk.t
				ev, opens := MustRandomStart(b, eng, fmt.Sprintf("draw-%d", i))
				mustPrequeue(b, rdb, ev.ID, size.n)
				clk.t = opens
				b.StartTimer()
				t0 := time.Now()
				mustDraw(b, eng, ev.ID, size.n)
				total += time.Since(t0)
				b.StopTimer()
				mustFlush(b, rdb)

				clk.t = start
				ev, opens = MustRandomStart(b, eng, fmt.Sprintf("draw-checked-%d", i))
				mustPrequeue(b, rdb, ev.ID, size.n)
				clk.t = opens
				mustDraw(b, queue.New(checked, []byte("bench"), queue.WithClock(clk.Now)), ev.ID, size.n)
				mustFlush(b, rdb)
				clk.t = start
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "draw-ms")
			b.ReportMetric(float64(check.longest.Microseconds()), "longest-cpu-µs")
			b.ReportMetric(float64(check.over), "calls-over-2ms")
		})
	}
}

// TestDrawDoesNotStallRedis draws a pre-queue of 50,000 with every command
// checked: none holds Redis for more than 2 ms, and the line is the HMAC
// order.
func TestDrawDoesNotStallRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("checks every command of a 50,000 draw")
	}
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	plain := redistest.MustClient(t, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now))
	ev, opens := MustRandomStart(t, eng, "draw-stall")
	users := mustPrequeue(t, plain, ev.ID, 50_000)
	check := mustStallCheck(t, p, p.Addr(), rdb)
	clk.t = opens
	mustDraw(t, eng, ev.ID, len(users))
	line := MustLine(t, plain, ev.ID)
	if want := fair.DrawOrder(MustSeed(t, eng, ev), users); !slices.Equal(line, want) {
		t.Fatal("the line is not the HMAC order")
	}
	t.Logf("%d commands checked; the longest held a CPU in Redis for %v", check.calls, check.longest)
}

// mustDraw runs eventID's draw of n.
func mustDraw(tb testing.TB, eng *queue.Engine, eventID string, n int) {
	tb.Helper()
	res, err := eng.Draw(context.Background(), eventID)
	if err != nil || res.Placed != n {
		tb.Fatalf("draw = %+v, %v; want %d placed", res, err, n)
	}
}

func mustFlush(tb testing.TB, rdb *redis.Client) {
	tb.Helper()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		tb.Fatal(err)
	}
}

// mustPrequeue fills eventID's pre-queue with n users, as n pre-queue joins
// would.
func mustPrequeue(tb testing.TB, rdb *redis.Client, eventID string, n int) []string {
	tb.Helper()
	users := make([]string, 0, n)
	ctx := context.Background()
	pq := queue.EventKey(eventID, "pq")
	for at := 0; at < n; at += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for i := at; i < min(at+10_000, n); i++ {
			users = append(users, fmt.Sprintf("u_%07d", i))
			zs = append(zs, redis.Z{Score: float64(i + 1), Member: users[i]})
		}
		if err := rdb.ZAdd(ctx, pq, zs...).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, queue.Keys(eventID)[6], "prequeued", n).Err(); err != nil {
		tb.Fatal(err)
	}
	return users
}
