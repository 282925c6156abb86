package queue_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// BenchmarkJoinCrowd measures the crowd join per virtual user, by chunk
// size, on a line that grows past a million: Redis CPU per user, and how
// many calls took longer than 1 ms (the SLOWLOG), against the 2 ms bound.
func BenchmarkJoinCrowd(b *testing.B) {
	p := redistest.MustStart(b)
	rdb := redistest.MustClient(b, p.Addr())
	ctx := context.Background()
	eng := MustBatchedEngine(b, rdb, queue.Batching{})
	for _, chunk := range []int{100, 250, queue.MaxCrowdChunk} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			id := fmt.Sprintf("crowd-%d", chunk)
			MustEvent(b, eng, id, func(e *queue.Event) { e.Paused = true })
			MustCrowdLease(b, eng, id, "r1")
			if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "1000").Err(); err != nil {
				b.Fatal(err)
			}
			if err := rdb.ConfigSet(ctx, "slowlog-max-len", "100000").Err(); err != nil {
				b.Fatal(err)
			}
			rdb.SlowLogReset(ctx)
			before := redistest.MustCPU(b, rdb)
			var cursor int64
			for b.Loop() {
				res, err := eng.JoinCrowd(ctx, id, "r1", "VIRTUAL:d-2026-11-25t2000-normal-", cursor, chunk)
				if err != nil || res.Moved || res.Follower {
					b.Fatal(res, err)
				}
				cursor = res.Cursor
			}
			b.ReportMetric(float64((redistest.MustCPU(b, rdb)-before).Nanoseconds())/float64(cursor), "redis-ns/user")
			slow, err := rdb.SlowLogGet(ctx, -1).Result()
			if err != nil {
				b.Fatal(err)
			}
			over2 := 0
			for _, s := range slow {
				if s.Duration.Microseconds() > 2000 {
					over2++
				}
			}
			b.ReportMetric(float64(len(slow)), "calls>1ms")
			b.ReportMetric(float64(over2), "calls>2ms")
			b.ReportMetric(float64(cursor), "users")
		})
	}
}
