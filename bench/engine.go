package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// EngineFigures are one operation's figures with the queue engine driven in
// process by Callers goroutines, no HTTP: Redis, not the HTTP stack sharing
// its cores, is then the bottleneck and gets one replica's batches under
// Callers callers, so Redis CPU per request gives an upper bound on one
// event. Waiting is the line length the load starts from.
type EngineFigures struct {
	Op       string  `json:"op"`
	Callers  int     `json:"callers"`
	Waiting  int     `json:"waiting"`
	Requests int     `json:"requests"`
	PerS     float64 `json:"per_s"`
	// RedisCPU is µs of Redis CPU per request.
	RedisCPU float64 `json:"redis_cpu_us"`
}

// engineEvent is the engine step's event: paused, so every entry stays
// WAITING and status reads rank the line.
const engineEvent = "bench-engine"

// engine drives queue.Engine.Status (a sample of the line's tokens), then
// Join (new users), as the HTTP loads go, with Connections goroutines for
// Duration each, on a line prefilled to the first size, and records Redis
// CPU per request.
func (r *runner) engine(ctx context.Context) error {
	eng := queue.New(r.rdb, []byte("bench-engine"))
	defer eng.Close()
	if err := eng.CreateEvent(ctx, queue.Event{ID: engineEvent, Name: "bench engine", Seats: 1, Capacity: 1_000_000,
		AdmitBatch: 1, AdmitIntervalMS: 3_600_000, ActiveTTLS: 3600, Policy: queue.PolicyBatch, Paused: true,
		CreatedAt: time.Now()}); err != nil {
		return err
	}
	waiting := max(r.cfg.Sizes[0], 1)
	tokens := make([]string, min(waiting, sampleTokens))
	stride := max(waiting/len(tokens), 1)
	if err := parallel(ctx, waiting, 2*r.cfg.Connections, nil, "prefilled", func(i int) error {
		en, _, err := eng.Join(ctx, engineEvent, "VIRTUAL:"+botID(i))
		if err == nil && i%stride == 0 && i/stride < len(tokens) {
			tokens[i/stride] = en.Token
		}
		return err
	}); err != nil {
		return err
	}
	var joined atomic.Int64
	for _, op := range []struct {
		name string
		call func(i int64) error
	}{
		{OpStatus, func(i int64) error {
			_, err := eng.Status(ctx, engineEvent, tokens[i%int64(len(tokens))])
			return err
		}},
		{OpJoin, func(int64) error {
			_, _, err := eng.Join(ctx, engineEvent, fmt.Sprintf("VIRTUAL:e%d", joined.Add(1)))
			return err
		}},
	} {
		f, err := r.saturate(ctx, op.call)
		if err != nil {
			return fmt.Errorf("engine %s: %w", op.name, err)
		}
		f.Op, f.Waiting = op.name, waiting
		r.res.Engine = append(r.res.Engine, f)
	}
	return r.rdb.FlushAll(ctx).Err()
}

// saturate runs call from Connections goroutines for Duration (the calls
// themselves run on the step's ctx, so the last ones finish) and measures
// the answered calls and Redis's CPU over them.
func (r *runner) saturate(ctx context.Context, call func(i int64) error) (EngineFigures, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	defer cancel()
	var n, ok atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	cpu0, start := procCPU(r.rp.Pid()), time.Now()
	for range r.cfg.Connections {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := call(n.Add(1)); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	cpu, elapsed := procCPU(r.rp.Pid())-cpu0, time.Since(start)
	done := int(ok.Load())
	if firstErr != nil {
		return EngineFigures{}, firstErr
	}
	if done <= 0 {
		return EngineFigures{}, errLoad
	}
	return EngineFigures{Callers: r.cfg.Connections, Requests: done, PerS: float64(done) / elapsed.Seconds(),
		RedisCPU: float64(cpu) / float64(time.Microsecond) / float64(done)}, nil
}
