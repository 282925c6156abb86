package push_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
)

// settle runs the collector and returns the live goroutines and heap.
func settle() (int, uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// MustSettleTo waits until no more than base+slack goroutines run.
func MustSettleTo(tb testing.TB, base, slack int, what string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := settle()
		if n <= base+slack {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			tb.Fatalf("%s: %d goroutines, baseline %d (+%d slack):\n%s", what, n, base, slack, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSubscribersDoNotLeak must not run in parallel: it counts every
// goroutine of the process.
func TestSubscribersDoNotLeak(t *testing.T) {
	const (
		events    = 4
		perEvent  = 500
		linger    = 50 * time.Millisecond
		slack     = 2
		heapSlack = 8 << 20
	)
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ids := make([]string, events)
	ens := make([][]queue.Entry, events)
	for i := range ids {
		ids[i] = fmt.Sprintf("leak-%d", i)
		a.MustEvent(t, ids[i])
		ens[i] = a.MustJoinN(t, ids[i], "u", perEvent, 8)
	}
	// The baseline holds no hub: a hub with no subscribers runs nothing.
	baseG, baseHeap := settle()
	k := MustHub(t, addr, push.WithTick(testTick), push.WithLinger(linger))

	var firstHeap uint64
	for round := range 2 {
		// Open 2,000 streams over every event at once, then drop them all.
		subs := make([][]*push.Sub, events)
		errs := make([]error, events)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() { subs[i], errs[i] = k.subscribeAll(ids[i], ens[i], 4) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: subscribe: %v", round, err)
		}
		if round == 0 {
			g, heap := settle()
			t.Logf("%d streams open: %d goroutines, heap %d KiB", events*perEvent, g, heap>>10)
		}
		for i, id := range ids {
			if n := k.hub.Subscribers(id); n != perEvent {
				t.Fatalf("round %d: %s has %d subscribers, want %d", round, id, n, perEvent)
			}
			k.spy.WaitTicks(t, id, 1)
			for _, s := range subs[i] {
				wg.Go(func() { k.hub.Unsubscribe(s) })
			}
		}
		wg.Wait()
		for _, id := range ids {
			if n := k.hub.Subscribers(id); n != 0 {
				t.Fatalf("round %d: %s has %d subscribers after every unsubscribe", round, id, n)
			}
		}
		subs = nil
		// The feeds drop a linger and a stream read after their last
		// subscriber left.
		MustSettleTo(t, baseG, slack, fmt.Sprintf("round %d: after the linger", round))
		// A feed's last read may still hold its buffers for a moment on a
		// busy machine: the heap must come down to the bound, not be
		// there at the first look.
		bound := baseHeap + heapSlack
		if round > 0 {
			bound = min(bound, firstHeap+1<<20)
		}
		var g int
		var heap uint64
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("round %d: the heap back within %d B", round, bound), func() bool {
			g, heap = settle()
			return heap <= bound
		})
		t.Logf("round %d: %d goroutines (baseline %d), heap %d KiB (baseline %d KiB)", round, g, baseG, heap>>10, baseHeap>>10)
		if heap > baseHeap+heapSlack {
			t.Errorf("round %d: heap %d B, baseline %d B (+%d slack)", round, heap, baseHeap, heapSlack)
		}
		// What stays after the first round (pooled connections) must not grow.
		if round == 0 {
			firstHeap = heap
		} else if heap > firstHeap+1<<20 {
			t.Errorf("round %d: heap grew from %d B to %d B", round, firstHeap, heap)
		}
	}

	// A dropped feed comes back for the next subscriber.
	s, u := k.MustSubscribe(t, ids[1], ens[1][0])
	if u.Position != a.MustStatus(t, ids[1], ens[1][0]).Position || k.hub.Subscribers(ids[1]) != 1 {
		t.Fatalf("resubscribe after drop: %+v, %d subscribers", u, k.hub.Subscribers(ids[1]))
	}
	k.spy.WaitTicks(t, ids[1], 1)
	k.Close()
	select {
	case <-k.hub.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	MustSettleTo(t, baseG, slack, "after Close")
	k.hub.Unsubscribe(s) // after Close: must not block or panic
	if _, _, err := k.hub.Subscribe(subscribeCtx(), ids[2], ens[2][0].Seq, ens[2][0].UserID); err == nil {
		t.Error("Subscribe to a new event after Close succeeded")
	}
}
