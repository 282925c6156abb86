package queue_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// benchCallers is how many goroutines the parallel variants run (with
// SetParallelism on GOMAXPROCS), the load of a busy replica.
const benchCallers = 64

// BenchmarkEngine measures the hot scripts through the engine, with and
// without batching, one caller and ~64 at once, on a line prefilled to
// 1k and 100k waiting (1M takes too long to fill in a benchmark; the bench
// harness measures it). Each join is a new user; status cycles 1,000 tokens.
func BenchmarkEngine(b *testing.B) {
	p := redistest.MustStart(b)
	rdb := redistest.MustClient(b, p.Addr())
	ctx := context.Background()
	setup := MustBatchedEngine(b, rdb, queue.Batching{})
	var users atomic.Int64
	for _, waiting := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"100k", 100_000}} {
		ev := MustEvent(b, setup, "bench-"+waiting.name, func(e *queue.Event) { e.Paused = true })
		queue.MustFillLine(b, rdb, ev.ID, "fill_", waiting.n-1_000)
		tokens := make([]string, 1_000)
		for i := range tokens {
			tokens[i] = MustJoin(b, setup, ev.ID, fmt.Sprintf("u_tok_%d", i)).Token
		}
		for _, op := range []struct {
			name string
			call func(eng *queue.Engine, i int64) error
		}{
			{"join", func(eng *queue.Engine, _ int64) error {
				_, _, err := eng.Join(ctx, ev.ID, "u_"+strconv.FormatInt(users.Add(1), 10))
				return err
			}},
			{"status", func(eng *queue.Engine, i int64) error {
				_, err := eng.Status(ctx, ev.ID, tokens[i%int64(len(tokens))])
				return err
			}},
		} {
			for _, batching := range []struct {
				name string
				cfg  queue.Batching
			}{{"on", queue.DefaultBatching}, {"off", queue.Batching{}}} {
				eng := MustBatchedEngine(b, rdb, batching.cfg)
				for _, callers := range []int{1, benchCallers} {
					name := fmt.Sprintf("op=%s/waiting=%s/batching=%s/callers=%d", op.name, waiting.name, batching.name, callers)
					b.Run(name, func(b *testing.B) {
						b.ReportAllocs()
						before := redistest.MustCPU(b, rdb)
						defer func() {
							b.ReportMetric(float64((redistest.MustCPU(b, rdb)-before).Nanoseconds())/float64(b.N), "redis-ns/op")
						}()
						var n atomic.Int64
						b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
						if callers == 1 {
							for b.Loop() {
								if err := op.call(eng, n.Add(1)); err != nil {
									b.Fatal(err)
								}
							}
							return
						}
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								if err := op.call(eng, n.Add(1)); err != nil {
									b.Error(err)
									return
								}
							}
						})
					})
				}
			}
		}
	}
}

// BenchmarkTick measures promotions per second, and the Redis CPU each
// takes: one tick promotes 1,000, in chunks.
func BenchmarkTick(b *testing.B) {
	eng, clk, rdb := MustEngine(b)
	ev := MustEvent(b, eng, "bench-tick", func(e *queue.Event) {
		e.Policy, e.AdmitBatch, e.Paused = queue.PolicyBatch, 1000, true
	})
	ctx := context.Background()
	b.StopTimer()
	for i := range b.N * 1000 {
		MustJoin(b, eng, ev.ID, fmt.Sprintf("u_%d", i))
	}
	ev.Paused = false
	if err := eng.PutEvent(ctx, ev); err != nil {
		b.Fatal(err)
	}
	before := redistest.MustCPU(b, rdb)
	b.StartTimer()
	for range b.N {
		res := MustTick(b, eng, ev.ID)
		if res.Promoted != 1000 {
			b.Fatalf("promoted %d", res.Promoted)
		}
		clk.Advance(100 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "promotions/s")
	b.ReportMetric(float64((redistest.MustCPU(b, rdb)-before).Nanoseconds())/float64(b.N*1000), "redis-ns/promotion")
}

// BenchmarkMemoryPerWaitingUser reports Redis memory per waiting user after
// 100,000 real joins (waiting set, counters and stream record included).
func BenchmarkMemoryPerWaitingUser(b *testing.B) {
	const users = 100_000
	for range b.N {
		b.StopTimer()
		eng, _, rdb := MustEngine(b)
		ev := MustEvent(b, eng, "bench-mem", func(e *queue.Event) { e.Paused = true })
		ctx := context.Background()
		before := usedMemory(b, rdb)
		b.StartTimer()
		sem := make(chan struct{}, 64)
		for i := range users {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				if _, _, err := eng.Join(ctx, ev.ID, fmt.Sprintf("VIRTUAL:%08d-0000-4000-8000-000000000000", i)); err != nil {
					b.Error(err)
				}
			}()
		}
		for range cap(sem) {
			sem <- struct{}{}
		}
		b.StopTimer()
		withStream := usedMemory(b, rdb)
		rdb.Del(ctx, queue.Keys(ev.ID)[8])
		queueOnly := usedMemory(b, rdb)
		b.ReportMetric(float64(withStream-before)/users, "B/user")
		b.ReportMetric(float64(queueOnly-before)/users, "B/user-without-stream")
	}
}

func usedMemory(tb testing.TB, rdb *redis.Client) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("no used_memory in INFO")
	return 0
}
