// Package engine runs a scenario against a rushline server: arrivals paced by
// the scenario's phases, one goroutine per bot walking join → wait → seats →
// order (or abandon) through the public API, every request recorded. The
// rushline-sim command, the server's practice mode and the bench use it.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rushline/rushline/internal/ctxsleep"
	"github.com/rushline/rushline/simulator/pace"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// Defaults for a run.
const (
	// DefaultGrace is how long a run waits for bots still in flight after the
	// last phase ends, before it stops them.
	DefaultGrace = 5 * time.Minute
	// DefaultSampleEvery is how often the event's stats are sampled.
	DefaultSampleEvery = time.Second
	// streamRetries is how often a bot reconnects a broken stream.
	streamRetries = 5
)

// Config says where and how to run.
type Config struct {
	// Target is the server's base URL, e.g. http://127.0.0.1:8080.
	Target       string
	SimulatorKey string
	AdminKey     string
	// Client, when set, sends every request; else the run makes one with a
	// pool sized to the process's descriptor limit.
	Client *http.Client
	// MaxStreams, when set, lowers the streams a run holds: the run dials
	// each stream itself and holds at most what the descriptor limit (and
	// MaxStreams) allows; a bot that waits by stream waits for a slot
	// before it joins, and is counted as held back.
	MaxStreams int
	// KeepBots and KeepRequests keep the raw record of every bot and every
	// request beside the aggregates.
	KeepBots, KeepRequests bool
	// StartAt, when set, starts the scenario clock at that instant (every
	// shard given the same one starts together); the run waits until then,
	// counting down on Progress. A run that gets there late says by how much.
	StartAt time.Time
	// LagTolerance is how late (p99) arrivals may start before the report
	// flags the generator as saturated; 0 is report.DefaultLagTolerance.
	LagTolerance time.Duration
	// Shard (1-based) of Shards takes every Shards-th arrival; all shards
	// together make exactly the arrivals of one unsharded run.
	Shard, Shards int
	// EventID overrides the scenario's event id (needed to shard a run that
	// creates its event: every shard must name the same one).
	EventID string
	// Grace bounds the wait for bots in flight after the last phase.
	Grace time.Duration
	// Progress, when set, gets a status line: redrawn in place each second
	// (for a terminal) or, when ProgressEvery is set, a line of its own that
	// often (for a pipe or a log file), and a last one at the end.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Run plays sc against cfg.Target until every bot has finished, the grace time
// after the last phase runs out or ctx ends. A cancelled run still returns
// what it recorded.
func Run(ctx context.Context, sc *scenario.Scenario, cfg Config) (report.Raw, error) {
	if cfg.Shards == 0 {
		cfg.Shard, cfg.Shards = 1, 1
	}
	if cfg.Shard < 1 || cfg.Shard > cfg.Shards {
		return report.Raw{}, fmt.Errorf("engine: shard %d/%d", cfg.Shard, cfg.Shards)
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.LagTolerance == 0 {
		cfg.LagTolerance = report.DefaultLagTolerance
	}
	gen := report.Generator{FDLimit: raiseFDLimit(), LagTolerance: cfg.LagTolerance, StartAt: cfg.StartAt}
	pool, streams := budget(gen.FDLimit, cfg.MaxStreams)
	client := cfg.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{MaxConnsPerHost: pool, MaxIdleConnsPerHost: pool,
			IdleConnTimeout: 30 * time.Second}}
		gen.Pool = pool
	}
	r := &run{sc: sc, cfg: cfg, tag: randomTag(), gate: newGate(streams)}
	gen.Streams = streams
	r.api = &api{base: cfg.Target, client: client, simKey: cfg.SimulatorKey, adminKy: cfg.AdminKey}
	if cfg.Client == nil {
		r.api.inflight = make(chan struct{}, pool)
	}
	ev, err := setUp(ctx, r.api, sc, cfg)
	if err != nil {
		return report.Raw{}, err
	}
	started := time.Now()
	if !cfg.StartAt.IsZero() {
		if !r.countdown(ctx) {
			return report.Raw{}, ctx.Err()
		}
		started = time.Now()
		if late := started.Sub(cfg.StartAt); late > startSlack {
			gen.StartLate = late
		}
		started = cfg.StartAt
	}
	opensAt := started
	if ev.OpensAt != nil && ev.OpensAt.After(opensAt) {
		opensAt = *ev.OpensAt
	}
	r.event, r.opensAt = ev, opensAt
	r.rec = report.NewRecorder(opensAt, cfg.KeepBots, cfg.KeepRequests)
	r.api.rec = r.rec
	r.raw = report.Raw{Scenario: sc.Name, Seed: sc.Seed, Target: cfg.Target, EventID: ev.ID, Seats: ev.Seats,
		Started: started, OpensAt: opensAt, Generator: gen}
	if cfg.Shards > 1 {
		r.raw.Shard = report.FormatShard(cfg.Shard, cfg.Shards)
	}
	return r.play(ctx)
}

func randomTag() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// setUp creates the scenario's event (or finds an existing one) and returns it.
func setUp(ctx context.Context, a *api, sc *scenario.Scenario, cfg Config) (event, error) {
	id := cfg.EventID
	if sc.Event.Use != "" && id == "" {
		id = sc.Event.Use
	}
	if c := sc.Event.Create; c != nil && sc.Event.Use == "" {
		if id == "" {
			id = c.ID
		}
		if id == "" {
			if cfg.Shards > 1 {
				return event{}, errors.New("engine: a sharded run that creates its event needs an event id (event.create.id or --event)")
			}
			id = sc.Name + "-" + randomTag()
		}
		body := map[string]any{"id": id, "name": c.Name, "seats": c.Seats, "capacity": c.Capacity,
			"admit_batch": c.AdmitBatch, "admit_interval_ms": c.AdmitIntervalMS, "active_ttl_s": c.ActiveTTLS,
			"policy": c.Policy, "max_tps": c.MaxTPS}
		now := time.Now().UTC()
		if !cfg.StartAt.IsZero() {
			now = cfg.StartAt.UTC() // every shard computes the same opening
		}
		if c.OpensIn > 0 {
			body["opens_at"] = now.Add(time.Duration(c.OpensIn)).Truncate(time.Millisecond)
		}
		if c.ClosesIn > 0 {
			body["closes_at"] = now.Add(time.Duration(c.ClosesIn)).Truncate(time.Millisecond)
		}
		err := a.do(ctx, stepSetup, "POST", "/api/v1/admin/events", a.admin(), body, nil)
		var ae *apiError
		if err != nil && !(errors.As(err, &ae) && ae.Code == "EVENT_EXISTS" && cfg.Shards > 1) {
			return event{}, fmt.Errorf("engine: create event %s: %w", id, err)
		}
	}
	// Another shard may have won the create and not yet mirrored the event
	// to Redis (404, or 503 while the server sees it in SQL alone): look
	// again for a moment.
	var ev event
	var err error
	for try := 0; try < 20; try++ {
		if err = a.do(ctx, stepSetup, "GET", "/api/v1/events/"+id, nil, nil, &ev); err == nil {
			return ev, nil
		}
		var ae *apiError
		if !errors.As(err, &ae) || (ae.Code != "EVENT_NOT_FOUND" && ae.Code != "UNAVAILABLE") ||
			!ctxsleep.Until(ctx, time.Now().Add(100*time.Millisecond)) {
			break
		}
	}
	return event{}, fmt.Errorf("engine: event %s: %w", id, err)
}

// arrival is one scheduled bot.
type arrival struct {
	index int           // across all phases, before sharding
	at    time.Duration // after the opening
	phase *scenario.Phase
}

// schedule lists the open-model arrivals of this shard, in time order.
func (r *run) schedule() ([]arrival, error) {
	var out []arrival
	var start time.Duration
	n := 0
	for i := range r.sc.Phases {
		ph := &r.sc.Phases[i]
		if ph.Arrival != scenario.ArrivalClosed {
			p, err := pace.For(*ph, r.sc.Seed+int64(i)*7919)
			if err != nil {
				return nil, err
			}
			for _, off := range pace.Schedule(p, time.Duration(ph.Duration)) {
				if n%r.cfg.Shards == r.cfg.Shard-1 {
					out = append(out, arrival{index: n, at: start + off, phase: ph})
				}
				n++
			}
		}
		start += time.Duration(ph.Duration)
	}
	r.closedBase = n
	offs := make([]time.Duration, len(out))
	for i, av := range out {
		offs[i] = av.at
	}
	r.rec.Plan(offs...)
	return out, nil
}

// run is one play of a scenario.
type run struct {
	sc         *scenario.Scenario
	cfg        Config
	api        *api
	event      event
	opensAt    time.Time
	tag        string
	closedBase int
	gate       *gate // bounds the streams held at once
	rec        *report.Recorder

	mu  sync.Mutex
	raw report.Raw // Samples under mu

	arrived, joined, waiting, active, done atomic.Int64
}

func (r *run) play(ctx context.Context) (report.Raw, error) {
	arrivals, err := r.schedule()
	if err != nil {
		return report.Raw{}, err
	}
	total := r.sc.TotalDuration()
	botCtx, stopBots := context.WithCancel(ctx)
	defer stopBots()
	var bots sync.WaitGroup
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	var side sync.WaitGroup
	side.Go(func() { r.sample(sampleCtx) })
	if r.cfg.Progress != nil {
		side.Go(func() { r.progress(sampleCtx) })
	}

	// Closed phases keep their share of the concurrency busy for their duration.
	var start time.Duration
	for i := range r.sc.Phases {
		ph := &r.sc.Phases[i]
		if ph.Arrival == scenario.ArrivalClosed {
			conc := ph.Concurrency / r.cfg.Shards
			if r.cfg.Shard-1 < ph.Concurrency%r.cfg.Shards {
				conc++
			}
			from, until := r.opensAt.Add(start), r.opensAt.Add(start+time.Duration(ph.Duration))
			for slot := range conc {
				bots.Go(func() { r.closedSlot(botCtx, ph, i, slot, from, until) })
			}
		}
		start += time.Duration(ph.Duration)
	}
	for _, av := range arrivals {
		planned := r.opensAt.Add(av.at)
		if !ctxsleep.Until(ctx, planned) {
			break
		}
		bots.Go(func() { r.bot(botCtx, av.index, av.phase, planned) })
	}

	// Wait for the bots, but no longer than the grace time after the last phase.
	done := make(chan struct{})
	go func() { bots.Wait(); close(done) }()
	grace := time.NewTimer(time.Until(r.opensAt.Add(total + r.cfg.Grace)))
	defer grace.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-grace.C:
	}
	stopBots()
	<-done
	stopSampling()
	side.Wait()

	final, cancel := detached(ctx)
	defer cancel()
	var ev event
	if err := r.api.do(final, stepSetup, "GET", "/api/v1/events/"+r.event.ID, nil, nil, &ev); err == nil && ev.Stats != nil {
		r.raw.Final = *ev.Stats
	}
	r.raw.Finished = time.Now()
	agg, botRecs, reqs := r.rec.Result()
	r.raw.Agg, r.raw.Bots, r.raw.Requests = &agg, botRecs, reqs
	return r.raw, ctx.Err()
}

// closedSlot runs one seat of closed phase number phase: a bot, then another
// as soon as it finishes, until the phase ends. Each slot of each phase and
// shard numbers its bots in a range of its own, so bot ids never repeat.
func (r *run) closedSlot(ctx context.Context, ph *scenario.Phase, phase, slot int, from, until time.Time) {
	if !ctxsleep.Until(ctx, from) {
		return
	}
	const perSlot = 1 << 24
	base := r.closedBase + ((phase*maxClosedSlots+slot)*r.cfg.Shards+r.cfg.Shard-1)*perSlot
	for i := 0; i < perSlot && time.Now().Before(until) && ctx.Err() == nil; i++ {
		began := time.Now()
		if r.bot(ctx, base+i, ph, time.Time{}) == report.OutcomeFailed && time.Since(began) < failPause {
			// A target refusing everyone must not turn the slot into a busy loop.
			ctxsleep.Until(ctx, began.Add(failPause))
		}
	}
}

const (
	// maxClosedSlots bounds one closed phase's concurrency (the parser's limit).
	maxClosedSlots = 1_000_000
	// failPause is the least time a closed-phase slot spends on a failed bot.
	failPause = 250 * time.Millisecond
	// cleanupTimeout bounds the calls a run makes after it was cancelled.
	cleanupTimeout = 5 * time.Second
	// startSlack is how late a run may reach its StartAt unremarked.
	startSlack = 20 * time.Millisecond
)

// countdown waits for cfg.StartAt, counting down on Progress; false when ctx
// ended first.
func (r *run) countdown(ctx context.Context) bool {
	at := r.cfg.StartAt
	if r.cfg.Progress != nil && time.Until(at) > 0 {
		fmt.Fprintf(r.cfg.Progress, "starting at %s (in %s)\n", at.UTC().Format(time.RFC3339Nano), time.Until(at).Round(time.Second))
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for time.Until(at) > time.Second {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if left := time.Until(at); r.cfg.Progress != nil && left > time.Second && (left < 10*time.Second || int(left.Seconds())%10 == 0) {
			fmt.Fprintf(r.cfg.Progress, "starting in %s\n", left.Round(time.Second))
		}
	}
	return ctxsleep.Until(ctx, at)
}

// detached is a context for clean-up calls that must outlive ctx's
// cancellation but not hang on a frozen target.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// sample polls the event's stats for the queue-length chart.
func (r *run) sample(ctx context.Context) {
	t := time.NewTicker(DefaultSampleEvery)
	defer t.Stop()
	for {
		var ev event
		if err := r.api.do(ctx, stepSetup, "GET", "/api/v1/events/"+r.event.ID, nil, nil, &ev); err == nil && ev.Stats != nil {
			r.mu.Lock()
			r.raw.Samples = append(r.raw.Samples, report.Sample{At: time.Now(), EventStats: *ev.Stats})
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// progress prints the status line until ctx ends.
func (r *run) progress(ctx context.Context) {
	every, live := r.cfg.ProgressEvery, r.cfg.ProgressEvery <= 0
	if live {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	last := start
	var lastJoined, lastDone int64
	status := func() string {
		j, d, now := r.joined.Load(), r.done.Load(), time.Now()
		secs := max(now.Sub(last).Seconds(), 1e-3)
		held := r.gate.waiting.Load()
		line := fmt.Sprintf("%6s  bots %d  held back %d  joined %d  waiting %d  active %d  done %d  |  %.0f joins/s  %.0f done/s",
			now.Sub(start).Truncate(time.Second), r.arrived.Load(), held, j, r.waiting.Load(), r.active.Load(), d,
			float64(j-lastJoined)/secs, float64(d-lastDone)/secs)
		lastJoined, lastDone, last = j, d, now
		return line
	}
	for {
		select {
		case <-ctx.Done():
			if live {
				fmt.Fprintln(r.cfg.Progress) // keep the last redrawn line
			} else {
				fmt.Fprintln(r.cfg.Progress, status())
			}
			return
		case <-t.C:
		}
		if live {
			fmt.Fprintf(r.cfg.Progress, "\r%s   ", status())
		} else {
			fmt.Fprintln(r.cfg.Progress, status())
		}
	}
}

// rng gives bot index its own reproducible random stream.
func (r *run) rng(index int) *mrand.Rand {
	return mrand.New(mrand.NewPCG(uint64(r.sc.Seed), uint64(index)))
}
