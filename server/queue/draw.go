package queue

import (
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/internal/fair"
)

//go:embed lua/draw.lua
var luaDraw string

var scriptDraw = script(luaDraw)

// DrawResult is the outcome of one Draw call.
type DrawResult struct {
	// Drawn is how many the draw puts in line; Placed how many this call
	// placed (fewer when another call had placed some).
	Drawn, Placed int
	// Calls counts the place calls and Longest is the longest round trip
	// of one (an upper bound on the script's run time).
	Calls   int
	Longest time.Duration
}

// Draw runs or finishes the draw of a random_start event past its opening:
// it freezes the pre-queue, orders it by fair.DrawOrder, and places it in line in
// calls of at most the engine's chunk (WithChunk) users, then marks the draw
// done. It is safe to
// run again or on two replicas at once (a placed user is never placed
// twice, and every run computes the same order); the admission ticker runs
// it under the admission lease. An event not yet open is CodeEventNotOpen.
func (e *Engine) Draw(ctx context.Context, eventID string) (DrawResult, error) {
	r, err := e.run(ctx, scriptDraw, eventID, "begin")
	if err != nil {
		return DrawResult{}, fmt.Errorf("queue: draw %s: %w", eventID, err)
	}
	switch r[0].(string) {
	case "GONE":
		return DrawResult{}, e.lookupErr(ctx, string(CodeEventNotFound), eventID)
	case "EARLY":
		return DrawResult{}, Errorf(CodeEventNotOpen, "event %q is not open yet", eventID)
	case "done":
		return DrawResult{Drawn: int(toInt(r[2]))}, nil
	}
	res := DrawResult{Drawn: int(toInt(r[2]))}
	seed, err := hex.DecodeString(r[3].(string))
	if err != nil || len(seed) == 0 {
		return res, fmt.Errorf("queue: draw %s: event has no draw seed", eventID)
	}
	users, err := e.prequeue(ctx, eventID, res.Drawn)
	if err != nil {
		return res, err
	}
	order := fair.DrawOrder(seed, users)
	args := make([]any, 0, e.chunk+2)
	for at := 0; at < len(order); at += e.chunk {
		args = append(args[:0], "place", at)
		for _, u := range order[at:min(at+e.chunk, len(order))] {
			args = append(args, u)
		}
		start := time.Now()
		r, err := e.run(ctx, scriptDraw, eventID, args...)
		res.Longest = max(res.Longest, time.Since(start))
		res.Calls++
		if err != nil {
			return res, fmt.Errorf("queue: draw %s: %w", eventID, err)
		}
		res.Placed += int(toInt(r[1]))
	}
	if _, err := e.run(ctx, scriptDraw, eventID, "finish"); err != nil {
		return res, fmt.Errorf("queue: draw %s: %w", eventID, err)
	}
	return res, nil
}

// prequeue reads the frozen pre-queue of eventID, n users, in pages.
func (e *Engine) prequeue(ctx context.Context, eventID string, n int) ([]string, error) {
	users := make([]string, 0, n)
	for at := int64(0); ; at += MaxChunk {
		page, err := e.rdb.ZRange(ctx, key(eventID, keyPrequeue), at, at+MaxChunk-1).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: draw %s: %w", eventID, storeErr(ctx, err))
		}
		users = append(users, page...)
		if len(page) < MaxChunk {
			return users, nil
		}
	}
}

// DrawInfo is what is public of an event's draw.
type DrawInfo struct {
	// Seed is revealed from the opening on; Commitment is its hex SHA-256.
	Seed       string `json:"seed"`
	Commitment string `json:"commitment"`
	// Drawn is how many pre-queued users the draw puts in line.
	Drawn int64 `json:"drawn"`
	// Done is false while the draw is still placing them.
	Done bool `json:"done"`
	// Base is the seq counter when the draw began: the drawn user of rank r
	// (1-based) waits at seq Base + r.
	Base int64 `json:"-"`
}

// DrawInfo reveals the draw of ev: CodeEventNotOpen before its opening.
// Before the draw has begun (nobody has joined or ticked since the
// opening) Drawn counts the pre-queue.
func (e *Engine) DrawInfo(ctx context.Context, ev Event) (DrawInfo, error) {
	if !ev.Opened(e.now()) {
		return DrawInfo{}, Errorf(CodeEventNotOpen, "event %q is not open yet: its draw seed is revealed at %s",
			ev.ID, ev.OpensAt.UTC().Format(time.RFC3339))
	}
	seed, err := e.rdb.HGet(ctx, key(ev.ID, keyCfg), "seed").Result()
	if errors.Is(err, redis.Nil) {
		return DrawInfo{}, e.lookupErr(ctx, string(CodeEventNotFound), ev.ID)
	}
	if err != nil {
		return DrawInfo{}, storeErr(ctx, err)
	}
	d, err := e.rdb.HMGet(ctx, key(ev.ID, keyCounters), "draw", "draw_n", "draw_base").Result()
	if err != nil {
		return DrawInfo{}, storeErr(ctx, err)
	}
	info := DrawInfo{Seed: seed, Commitment: fair.DrawCommitment(seed), Done: d[0] == "done", Drawn: toInt(d[1]),
		Base: toInt(d[2])}
	if d[0] == nil {
		n, err := e.rdb.ZCard(ctx, key(ev.ID, keyPrequeue)).Result()
		if err != nil {
			return DrawInfo{}, storeErr(ctx, err)
		}
		info.Drawn = n
	}
	return info, nil
}

// drawPending reports whether eventID has pre-queued users its draw has not
// yet put in line.
func (e *Engine) drawPending(ctx context.Context, eventID string) (bool, error) {
	d, err := e.rdb.HMGet(ctx, key(eventID, keyCounters), "prequeued", "draw").Result()
	if err != nil {
		return false, storeErr(ctx, err)
	}
	return toInt(d[0]) > 0 && d[1] != "done", nil
}
