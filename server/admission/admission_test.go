package admission_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rushline/rushline/internal/testutil"

	"github.com/rushline/rushline/server/admission"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// counter is an Observer that counts promotions per replica.
type counter struct {
	mu       sync.Mutex
	promoted int
}

func (c *counter) Ticked(_ string, res queue.TickResult, _ time.Duration) {
	c.mu.Lock()
	c.promoted += res.Promoted
	c.mu.Unlock()
}

func (c *counter) Expired(string, int) {}

func TestReplicasPromoteOnceInOrder(t *testing.T) {
	const n = 600
	p := redistest.MustStart(t)
	key := []byte("k")
	engines := make([]*queue.Engine, 3)
	for i := range engines {
		engines[i] = queue.New(redistest.MustClient(t, p.Addr()), key)
	}
	ctx := context.Background()
	ev := queue.Event{ID: "multi", Seats: 10, Capacity: n, AdmitBatch: 25, AdmitIntervalMS: 50,
		ActiveTTLS: 600, Policy: queue.PolicyBatch, Paused: true}
	if err := engines[0].CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	// Joins arrive round-robin through all three replicas.
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, _, err := engines[i%3].Join(ctx, ev.ID, fmt.Sprintf("u_%04d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	counters := make([]*counter, 3)
	var runners sync.WaitGroup
	for i, eng := range engines {
		counters[i] = &counter{}
		r := admission.New(eng, fmt.Sprintf("replica-%d", i), admission.WithObserver(counters[i]),
			admission.WithSweep(10*time.Millisecond), admission.WithDiscover(20*time.Millisecond),
			admission.WithLease(500*time.Millisecond))
		runners.Go(func() { r.Run(runCtx) })
	}
	ev.Paused = false
	if err := engines[1].PutEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := engines[2].Stats(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if st.Waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d waiting", st.Waiting)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	runners.Wait()

	recs, err := engines[0].Records(ctx, ev.ID, "0", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	var last int64
	for _, r := range recs {
		if r.Kind != queue.RecordAdmitted {
			continue
		}
		if seen[r.Seq] {
			t.Fatalf("seq %d promoted twice", r.Seq)
		}
		if r.Seq < last {
			t.Fatalf("FIFO inversion: %d after %d", r.Seq, last)
		}
		seen[r.Seq], last = true, r.Seq
	}
	total := 0
	for _, c := range counters {
		total += c.promoted
	}
	if len(seen) != n || total != n {
		t.Fatalf("admitted %d distinct, observers counted %d; want %d", len(seen), total, n)
	}
}

func TestLeaseMovesWhenHolderStops(t *testing.T) {
	p := redistest.MustStart(t)
	ctx := context.Background()
	a := queue.New(redistest.MustClient(t, p.Addr()), []byte("k"))
	rb := redistest.MustClient(t, p.Addr())
	calls := &callCounter{}
	rb.AddHook(calls)
	b := queue.New(rb, []byte("k"))
	ev := queue.Event{ID: "handover", Seats: 10, Capacity: 1000, AdmitBatch: 1, AdmitIntervalMS: 50,
		ActiveTTLS: 600, Policy: queue.PolicyBatch}
	if err := a.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		if _, _, err := a.Join(ctx, ev.ID, fmt.Sprintf("u_%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	const lease = 300 * time.Millisecond
	opts := []admission.Option{admission.WithSweep(10 * time.Millisecond), admission.WithDiscover(10 * time.Millisecond), admission.WithLease(lease)}
	ca, cb := &counter{}, &counter{}
	ctxA, stopA := context.WithCancel(ctx)
	doneA := make(chan struct{})
	go func() { admission.New(a, "a", append(opts, admission.WithObserver(ca))...).Run(ctxA); close(doneA) }()
	testutil.Eventually(t, syncTimeout, "a takes the lease and promotes", func() bool { return promotedBy(ca) > 0 })
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneB := make(chan struct{})
	go func() { admission.New(b, "b", append(opts, admission.WithObserver(cb))...).Run(ctxB); close(doneB) }()
	// b sweeps as a follower, over several of a's lease renewals (a sweep is
	// one script call, every 10 ms).
	testutil.Eventually(t, syncTimeout, "b sweeps 20 times", func() bool { return calls.n.Load() >= 20 })
	if early := promotedBy(cb); early != 0 {
		t.Fatalf("b promoted %d while a held the lease", early)
	}
	stopA()
	<-doneA
	// a's lease runs out unrenewed; b takes over.
	testutil.Eventually(t, syncTimeout, "b takes over", func() bool { return promotedBy(cb) > 0 })
	stopB()
	<-doneB
}

// syncTimeout bounds every wait for the runners to act.
const syncTimeout = 10 * time.Second

// callCounter is a go-redis hook that counts the script calls of its client
// (a runner's sweeps and ticks).
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *callCounter) count(cmd redis.Cmder) {
	if name := cmd.Name(); name == "evalsha" || name == "eval" {
		c.n.Add(1)
	}
}

func promotedBy(c *counter) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.promoted
}

// expiries is an Observer that counts expired windows.
type expiries struct{ n atomic.Int64 }

func (e *expiries) Ticked(string, queue.TickResult, time.Duration) {}

func (e *expiries) Expired(_ string, n int) { e.n.Add(int64(n)) }

// TestSweepsWhenSomethingIsDue: the lease holder sweeps when a window ends
// or a tick is due, and otherwise every DefaultSweep, not on a fixed short
// period: an idle event costs Redis two round trips a second, not ten. The
// one window still ends.
func TestSweepsWhenSomethingIsDue(t *testing.T) {
	p := redistest.MustStart(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	rdb := redistest.MustClient(t, p.Addr())
	calls := &callCounter{}
	rdb.AddHook(calls)
	eng := queue.New(rdb, []byte("k"))
	ev := queue.Event{ID: "quiet", Seats: 10, Capacity: 1, AdmitBatch: 1, AdmitIntervalMS: 60_000,
		ActiveTTLS: 1, Policy: queue.PolicyBatch}
	if err := eng.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if _, _, err := eng.Join(ctx, ev.ID, "u_1"); err != nil {
		t.Fatal(err)
	}
	ended := &expiries{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		admission.New(eng, "r1", admission.WithObserver(ended), admission.WithDiscover(10*time.Millisecond)).Run(ctx)
	}()
	testutil.Eventually(t, syncTimeout, "the window ends", func() bool { return ended.n.Load() == 1 })
	// Nothing is active and the next tick is a minute away.
	before, start := calls.n.Load(), time.Now()
	time.Sleep(1500 * time.Millisecond)
	idle, most := calls.n.Load()-before, 2*int64(time.Since(start)/time.Second)+2
	stop()
	<-done
	if idle > most {
		t.Fatalf("%d script calls in %v of an idle event, want at most %d (two a second)", idle, time.Since(start), most)
	}
}
