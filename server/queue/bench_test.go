package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
)

// BenchmarkJoin measures the join script (new users) with 64 concurrent callers.
func BenchmarkJoin(b *testing.B) {
	eng, _, _ := MustEngine(b)
	ev := MustEvent(b, eng, "bench-join", func(e *queue.Event) { e.Paused = true; e.Capacity = 1 })
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := eng.Join(context.Background(), ev.ID, fmt.Sprintf("u_%d", n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkStatus measures a rank lookup at 100k waiting.
func BenchmarkStatus(b *testing.B) {
	eng, _, rdb := MustEngine(b)
	ev := MustEvent(b, eng, "bench-status", func(e *queue.Event) { e.Paused = true })
	const waiting = 100_000
	ctx := context.Background()
	// Fill the line directly with pipelined ZADDs: the join path is measured elsewhere.
	k := queue.Keys(ev.ID)
	for lo := 1; lo <= waiting; lo += 10_000 {
		pipe := rdb.Pipeline()
		for i := lo; i < lo+10_000; i++ {
			pipe.ZAdd(ctx, k[2], redisZ(i))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	rdb.Set(ctx, k[1], waiting, 0)
	tok := MustJoin(b, eng, ev.ID, "u_probe").Token
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := eng.Status(ctx, ev.ID, tok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTick measures promotions per second: one tick promotes 1,000.
func BenchmarkTick(b *testing.B) {
	eng, clk, _ := MustEngine(b)
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
	b.StartTimer()
	for range b.N {
		res := MustTick(b, eng, ev.ID)
		if res.Promoted != 1000 {
			b.Fatalf("promoted %d", res.Promoted)
		}
		clk.Advance(100 * time.Millisecond)
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "promotions/s")
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
