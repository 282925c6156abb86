package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

// floorBatch is how many new users each batch of BenchmarkJoinFloor
// carries: about what the bench's HTTP batches hold under 64 connections.
const floorBatch = 48

// floorTurn is how many batches each script runs in a row before the other
// takes its turn; Redis's CPU is read around each turn.
const floorTurn = 20

// BenchmarkJoinFloor measures what join.lua costs Redis per new user
// against the least a join into a sorted-set line can cost it (LineFloor:
// the same arguments, only the seqs taken and the users ZADDed). The two
// take turns on one Redis, each on an event of its own whose line starts at
// the length given, so both see the same machine, the same Redis and lines
// of the same length. Reported: Redis CPU per user for each
// (join-redis-ns/user, floor-redis-ns/user) and their ratio (join/floor),
// how much join.lua adds to the line itself (its config, counters, audit
// record and answers).
func BenchmarkJoinFloor(b *testing.B) {
	rdb := redistest.MustClient(b, redistest.MustStart(b).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("k"), WithBatching(Batching{}))
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"100k", 100_000}, {"1M", 1_000_000}} {
		b.Run("waiting="+size.name, func(b *testing.B) {
			// -count runs this again: each run starts from an empty Redis.
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			ids := mustFloorEvents(b, eng, rdb, size.name, size.n)
			var cpu [2]time.Duration
			users := 0
			for b.Loop() {
				for k, s := range []LineScript{LineJoin, LineFloor} {
					before := redistest.MustCPU(b, rdb)
					for t := range floorTurn {
						if err := eng.RunLineBatch(ctx, s, ids[k], floorUsers(fmt.Sprintf("%s-%d-%d-", ids[k], users, t))); err != nil {
							b.Fatalf("%s: %v", ids[k], err)
						}
					}
					cpu[k] += redistest.MustCPU(b, rdb) - before
				}
				users += floorTurn * floorBatch
			}
			for _, id := range ids {
				if got, err := rdb.ZCard(ctx, key(id, keyWaiting)).Result(); err != nil || got != int64(size.n+users) {
					b.Fatalf("%s: %d waiting (%v), want %d", id, got, err, size.n+users)
				}
			}
			join, fl := float64(cpu[0].Nanoseconds())/float64(users), float64(cpu[1].Nanoseconds())/float64(users)
			b.ReportMetric(join, "join-redis-ns/user")
			b.ReportMetric(fl, "floor-redis-ns/user")
			b.ReportMetric(join/fl, "join/floor")
		})
	}
}

// TestJoinFloorLinesUpAsJoin: the floor that join.lua is measured against
// must do join.lua's work for a batch of new users, no less: the same
// batches put the same users in line with the same scores and take the seq
// counter to the same value.
func TestJoinFloorLinesUpAsJoin(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("k"), WithBatching(Batching{}))
	ids := mustFloorEvents(t, eng, rdb, "t", 7)
	for k, s := range []LineScript{LineJoin, LineFloor} {
		for batch := range 3 {
			if err := eng.RunLineBatch(ctx, s, ids[k], floorUsers(fmt.Sprintf("b%d-", batch))); err != nil {
				t.Fatalf("%s: %v", ids[k], err)
			}
		}
	}
	var lines [2][]redis.Z
	var seqs [2]string
	for k, id := range ids {
		var err error
		if lines[k], err = rdb.ZRangeWithScores(ctx, key(id, keyWaiting), 0, -1).Result(); err != nil {
			t.Fatal(err)
		}
		if seqs[k], err = rdb.Get(ctx, key(id, keySeq)).Result(); err != nil {
			t.Fatal(err)
		}
	}
	if want := 7 + 3*floorBatch; len(lines[0]) != want {
		t.Fatalf("join.lua's line holds %d, want %d", len(lines[0]), want)
	}
	if !slices.Equal(lines[0], lines[1]) {
		t.Errorf("the floor's line differs from join.lua's:\n%v\n%v", lines[1], lines[0])
	}
	if seqs[0] != seqs[1] {
		t.Errorf("seq counter: floor %s, join.lua %s", seqs[1], seqs[0])
	}
	if err := eng.RunLineBatch(ctx, LineFloor, ids[1], nil); err == nil {
		t.Error("a line batch of no users ran")
	}
	if err := eng.RunLineBatch(ctx, LineFloor, ids[1], make([]string, MaxBatchSize+1)); err == nil {
		t.Errorf("a line batch of %d users ran: one script run past the batcher's bound", MaxBatchSize+1)
	}
}

// mustFloorEvents creates two paused events, for join.lua and the floor,
// each with n users in line, and returns their ids.
func mustFloorEvents(tb testing.TB, eng *Engine, rdb *redis.Client, name string, n int) []string {
	tb.Helper()
	ids := []string{"join-" + name, "floor-" + name}
	for _, id := range ids {
		if err := eng.CreateEvent(context.Background(), Event{ID: id, Name: id, Seats: 1, Capacity: 1, AdmitBatch: 1,
			AdmitIntervalMS: 250, ActiveTTLS: 60, Policy: PolicyBatch, Paused: true}); err != nil {
			tb.Fatal(err)
		}
		mustFillLine(tb, rdb, id, "fill-", n)
	}
	return ids
}

// floorUsers is a batch of floorBatch user ids: prefix followed by 0, 1, …
func floorUsers(prefix string) []string {
	users := make([]string, floorBatch)
	for i := range users {
		users[i] = prefix + strconv.Itoa(i)
	}
	return users
}

// mustFillLine is fillLine, failing tb on an error.
func mustFillLine(tb testing.TB, rdb *redis.Client, eventID, prefix string, n int) {
	tb.Helper()
	if err := fillLine(context.Background(), rdb, eventID, prefix, n); err != nil {
		tb.Fatal(err)
	}
}
