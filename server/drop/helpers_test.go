package drop_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/admission"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
	"github.com/rushline/rushline/simulator/scenario"
)

// clock is a settable clock shared by a fixture's engines, safe for
// concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// Run moves the clock on by step every real period until ctx ends: a
// simulated drop runs step/period times faster than real time.
func (c *clock) Run(ctx context.Context, step, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Advance(step)
		}
	}
}

// start is where every fixture's clock starts: 19:59 UTC, a minute before
// a schedule's 20:00 drop.
var start = time.Date(2026, 11, 25, 19, 59, 0, 0, time.UTC)

// tiny is a test scenario: 300 users in a 500 ms spike for 50 seats, with
// fast admission ticks of 10 and at most 10 shopping at once.
func tiny() *scenario.Scenario {
	return &scenario.Scenario{Name: "tiny", Seed: 3,
		Event: scenario.Event{Create: &scenario.EventCreate{Seats: 50, Capacity: 10, AdmitBatch: 10,
			AdmitIntervalMS: 50, ActiveTTLS: 30, Policy: "capacity"}},
		Phases: []scenario.Phase{{Name: "rush", Arrival: scenario.ArrivalSpike, Users: 300,
			Over: scenario.Duration(500 * time.Millisecond), Duration: scenario.Duration(500 * time.Millisecond)}}}
}

// world is Redis, a database and a clock that replicas share.
type world struct {
	clk   *clock
	addr  string
	rdb   *redis.Client
	store *store.Store
	// eng is an engine for the test's own calls.
	eng *queue.Engine
	cat *queue.Catalog
	// hook, when set, sees every call of the engines made after it is.
	hook redis.Hook
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// MustWorld starts a Redis and opens a database of the dialect.
func MustWorld(tb testing.TB, dialect string) *world {
	tb.Helper()
	p := redistest.MustStart(tb)
	w := &world{clk: &clock{t: start}, addr: p.Addr(), rdb: redistest.MustClient(tb, p.Addr()),
		store: storetest.MustOpen(tb, dialect)}
	w.eng = w.engine(tb)
	w.cat = queue.NewCatalog(w.store, w.eng)
	return w
}

func (w *world) engine(tb testing.TB) *queue.Engine {
	rdb := redistest.MustClient(tb, w.addr)
	if w.hook != nil {
		rdb.AddHook(w.hook)
	}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(w.clk.Now))
	tb.Cleanup(eng.Close)
	return eng
}

// replica is one server's drop service and admission ticker.
type replica struct {
	svc  *drop.Service
	stop func()
}

// MustReplica starts a replica named name: its own engine, a drop service
// with fast steps and the tiny scenario, and an admission ticker. It stops
// at the end of the test, or when stop is called.
func (w *world) MustReplica(tb testing.TB, name string, opts ...drop.Option) *replica {
	tb.Helper()
	eng := w.engine(tb)
	svc, err := drop.New(eng, queue.NewCatalog(w.store, eng), w.store, name, append([]drop.Option{
		drop.WithScenarios(tiny()), drop.WithLogger(quiet), drop.WithTick(2 * time.Millisecond),
		drop.WithDiscover(10 * time.Millisecond), drop.WithLease(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { svc.Run(ctx) })
	wg.Go(func() {
		admission.New(eng, name, admission.WithSweep(2*time.Millisecond), admission.WithDiscover(10*time.Millisecond),
			admission.WithLogger(quiet)).Run(ctx)
	})
	stop := sync.OnceFunc(func() { cancel(); wg.Wait() })
	tb.Cleanup(stop)
	return &replica{svc: svc, stop: stop}
}

// MustService is a drop service that does not run: for calls alone.
func (w *world) MustService(tb testing.TB, opts ...drop.Option) *drop.Service {
	tb.Helper()
	svc, err := drop.New(w.eng, w.cat, w.store, "caller", append([]drop.Option{drop.WithScenarios(tiny()),
		drop.WithLogger(quiet)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}

func intp(v int) *int { return &v }

// MustCreate has svc create a drop of the tiny scenario at the level,
// opening in 10 s.
func (w *world) MustCreate(tb testing.TB, svc *drop.Service, level drop.Level, crowd, seats int) drop.View {
	tb.Helper()
	v, err := svc.Create(context.Background(), drop.Request{Scenario: "tiny", Level: level, Crowd: intp(crowd),
		Seats: intp(seats), OpensAt: w.clk.Now().Add(drop.MinLead)})
	if err != nil {
		tb.Fatalf("create drop: %v", err)
	}
	return v
}

// MustEventually polls cond every few milliseconds until it holds or the
// deadline passes.
func MustEventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// MustFinished waits for drop id to finish and returns it.
func MustFinished(tb testing.TB, svc *drop.Service, id string, within time.Duration) drop.View {
	tb.Helper()
	var v drop.View
	MustEventually(tb, within, "drop "+id+" finished", func() bool {
		var err error
		v, err = svc.Get(context.Background(), id)
		if err != nil {
			tb.Fatal(err)
		}
		return v.Phase == drop.PhaseFinished
	})
	return v
}

// crowdAudit reads the event's line and records and checks the crowd's
// invariants: every index at most once, in line or admitted; admissions in
// arrival order; no seat sold twice. It returns how many of the crowd are
// in line or were admitted, and the seats sold.
func (w *world) crowdAudit(tb testing.TB, d drop.Drop) (crowd int, sold int) {
	tb.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	members, err := w.rdb.ZRange(ctx, queue.Keys(d.Event)[2], 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	prefix := d.VirtualPrefix()
	for _, m := range members {
		if len(m) > len(prefix) && m[:len(prefix)] == prefix {
			seen[m] = true
		}
	}
	recs, err := w.eng.Records(ctx, d.Event, "0", 1<<30)
	if err != nil {
		tb.Fatal(err)
	}
	seats := map[string]string{}
	lastSeq := int64(0)
	for _, r := range recs {
		switch r.Kind {
		case queue.RecordAdmitted:
			if r.Seq <= lastSeq {
				tb.Errorf("admission %d (seq %d) after seq %d: FIFO broken", r.AdmissionNo, r.Seq, lastSeq)
			}
			lastSeq = r.Seq
			if len(r.UserID) > len(prefix) && r.UserID[:len(prefix)] == prefix {
				if seen[r.UserID] {
					tb.Errorf("%s joined twice", r.UserID)
				}
				seen[r.UserID] = true
			}
		case queue.RecordDone:
			if other, dup := seats[r.Seat]; dup {
				tb.Errorf("seat %s sold twice: to %s and %s", r.Seat, other, r.UserID)
			}
			seats[r.Seat] = r.UserID
		}
	}
	return len(seen), len(seats)
}
