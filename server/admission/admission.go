// Package admission runs the cluster-wide admission ticker: for every event,
// the replica holding the event's Redis lease expires active windows as they
// end and promotes the head of the line once per admit interval.
// Any number of replicas may run a Runner on the same Redis; the lease, checked
// inside each script, makes sure only one promotes.
package admission

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/server/queue"
)

// Defaults for a Runner.
const (
	// DefaultLease is how long a replica holds an event's admission lease
	// without renewing it; a dead holder is replaced within about this long.
	DefaultLease = 2 * time.Second
	// DefaultSweep is the longest the lease holder waits between sweeps: it
	// wakes sooner when the earliest active window ends or a tick is due,
	// which each sweep tells it, so a sweep is a Redis round trip only when
	// there is something to do. Followers retry the lease when it runs
	// out, and at least this often. A window lasts a second or more
	// (queue.Event.ActiveTTLS), longer than this, so one that begins while
	// the holder waits never ends before the holder looks again.
	DefaultSweep = 500 * time.Millisecond
	// DefaultDiscover is how often the runner looks for new events.
	DefaultDiscover = time.Second
)

// Observer learns what the ticker did, e.g. to export metrics.
type Observer interface {
	Ticked(eventID string, res queue.TickResult, took time.Duration)
	Expired(eventID string, n int)
}

// Runner drives admission for every event. Run it once per replica.
type Runner struct {
	eng      *queue.Engine
	replica  string
	lease    time.Duration
	sweep    time.Duration
	discover time.Duration
	obs      Observer
	log      *slog.Logger
}

// Option configures a Runner.
type Option func(*Runner)

// WithLease sets the lease length.
func WithLease(d time.Duration) Option { return func(r *Runner) { r.lease = d } }

// WithSweep sets the sweep period.
func WithSweep(d time.Duration) Option { return func(r *Runner) { r.sweep = d } }

// WithDiscover sets how often new events are looked for.
func WithDiscover(d time.Duration) Option { return func(r *Runner) { r.discover = d } }

// WithObserver reports ticks and expiries to o.
func WithObserver(o Observer) Option { return func(r *Runner) { r.obs = o } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// New returns a runner for replica, which must be unique among the replicas
// sharing the Redis.
func New(eng *queue.Engine, replica string, opts ...Option) *Runner {
	r := &Runner{eng: eng, replica: replica, lease: DefaultLease, sweep: DefaultSweep,
		discover: DefaultDiscover, log: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Run drives admission until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	running := map[string]bool{}
	var mu sync.Mutex
	for {
		ids, err := r.eng.EventIDs(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("admission: list events", "err", err)
		}
		for _, id := range ids {
			mu.Lock()
			start := !running[id]
			running[id] = true
			mu.Unlock()
			if start {
				wg.Go(func() {
					r.loop(ctx, id)
					mu.Lock()
					delete(running, id)
					mu.Unlock()
				})
			}
		}
		if !ctxsleep.Sleep(ctx, r.discover) {
			return
		}
	}
}

// loop runs one event until ctx ends or the event is gone.
func (r *Runner) loop(ctx context.Context, eventID string) {
	failing := false
	for {
		wait, gone, err := r.step(ctx, eventID)
		switch {
		case gone:
			return
		case err != nil && ctx.Err() == nil:
			if !failing {
				r.log.Warn("admission: step failed; retrying", "event", eventID, "err", err)
			}
			failing, wait = true, r.lease/4
		case err == nil && failing:
			r.log.Info("admission: recovered", "event", eventID)
			failing = false
		}
		if !ctxsleep.Sleep(ctx, wait) {
			return
		}
	}
}

// step sweeps, ticks when due, and says how long to wait before the next step.
func (r *Runner) step(ctx context.Context, eventID string) (time.Duration, bool, error) {
	sw, err := r.eng.Expire(ctx, eventID, r.replica, r.lease)
	if err != nil {
		return 0, false, err
	}
	if sw.Gone {
		return 0, true, nil
	}
	if !sw.Leader {
		return wait(sw.Wait, r.sweep), false, nil
	}
	if sw.Expired > 0 && r.obs != nil {
		r.obs.Expired(eventID, sw.Expired)
	}
	longest := r.sweep
	if sw.Ends != queue.NoWindow {
		longest = min(longest, sw.Ends)
	}
	if sw.Wait > 0 {
		return wait(sw.Wait, longest), false, nil
	}
	start := time.Now()
	res, err := r.eng.Tick(ctx, eventID, r.replica, r.lease)
	if err != nil {
		return 0, false, err
	}
	took := time.Since(start)
	if res.Ran && r.obs != nil {
		r.obs.Ticked(eventID, res, took)
	}
	// The windows this tick began end a second or more from now, after
	// the earliest one the sweep saw.
	return wait(res.Next, longest-took), res.Gone, nil
}

// wait is d, at most longest and at least a millisecond.
func wait(d, longest time.Duration) time.Duration {
	return max(min(d, longest), time.Millisecond)
}
