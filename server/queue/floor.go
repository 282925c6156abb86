package queue

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/join_floor.lua
var luaJoinFloor string

var scriptJoinFloor = script(luaJoinFloor)

// A LineScript is a way a batch of new users goes into an event's line, run
// by Engine.RunLineBatch to measure what join.lua costs Redis against the
// least a line held in a sorted set can cost.
type LineScript int

const (
	// LineJoin is join.lua, given the batch as the batcher gives it a run of
	// plain joins.
	LineJoin LineScript = iota
	// LineFloor is lua/join_floor.lua: the same arguments, and only one
	// INCRBY for the seqs and one ZADD of the users, scored as join.lua
	// scores them: no config, counters, audit record or answers.
	LineFloor
)

// RunLineBatch runs s once for users, each a plain new join of eventID, in
// one script call straight to Redis (no batcher), so that a benchmark can
// read Redis's CPU around a number of them. The users must be new to the
// event and its line have no priority lane or admitted users, or the two
// scripts no longer do the same. At most MaxBatchSize users go in one
// call, the batcher's own bound, which keeps a script run within 2 ms.
func (e *Engine) RunLineBatch(ctx context.Context, s LineScript, eventID string, users []string) error {
	sc := scriptJoin
	if s == LineFloor {
		sc = scriptJoinFloor
	}
	if len(users) == 0 || len(users) > MaxBatchSize {
		return fmt.Errorf("queue: a line batch of %d users, want 1..%d", len(users), MaxBatchSize)
	}
	now := e.now().UnixMilli()
	calls := make([]*call, len(users))
	for i, u := range users {
		calls[i] = &call{args: append([]any{now, e.maxLen}, joinArgv(u, JoinOptions{})...)}
	}
	if err := sc.Run(ctx, e.rdb, sc.keysOf(eventID), concatArgs(now, calls)...).Err(); err != nil {
		return storeErr(ctx, err)
	}
	return nil
}

// FillLine puts n users straight into eventID's line, prefix followed by
// 1..n at seqs 1..n, with variadic ZADDs of 1,000, and sets its seq counter
// past them: a long line for a benchmark to measure joins against, built
// at a fraction of what joining them would cost. The event should be
// paused and its line empty.
func (e *Engine) FillLine(ctx context.Context, eventID, prefix string, n int) error {
	return fillLine(ctx, e.rdb, eventID, prefix, n)
}

// fillLine is FillLine on rdb.
func fillLine(ctx context.Context, rdb redis.UniversalClient, eventID, prefix string, n int) error {
	const chunk = 1_000
	pipe := rdb.Pipeline()
	for lo := 1; lo <= n; lo += chunk {
		zs := make([]redis.Z, 0, chunk)
		for i := lo; i < min(lo+chunk, n+1); i++ {
			zs = append(zs, redis.Z{Score: float64(i), Member: prefix + strconv.Itoa(i)})
		}
		pipe.ZAdd(ctx, key(eventID, keyWaiting), zs...)
	}
	pipe.Set(ctx, key(eventID, keySeq), n, 0)
	_, err := pipe.Exec(ctx)
	return err
}
