package httpapi

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// guard bounds a wait that should end long before it; not a speed goal.
const guard = 30 * time.Second

// N streams of one event share one poller: each poll reaches every stream,
// and the poller stops when the last stream leaves.
func TestStatsHubPollsOncePerEvent(t *testing.T) {
	var polls atomic.Int64
	permit := make(chan struct{})
	poll := func(ctx context.Context, eventID string) statsSnapshot {
		n := polls.Add(1)
		select {
		case <-permit:
		case <-ctx.Done():
		}
		return statsSnapshot{id: strconv.FormatInt(n, 10), data: []byte(eventID), ok: true}
	}
	h := newStatsHub(poll, time.Millisecond)
	const streams, rounds = 5, 3
	var feeds []*statsFeed
	var leaves []func()
	for range streams {
		f, leave := h.subscribe("ev")
		feeds = append(feeds, f)
		leaves = append(leaves, leave)
	}
	if len(h.feeds) != 1 {
		t.Fatalf("%d feeds for one event", len(h.feeds))
	}
	for round := 1; round <= rounds; round++ {
		permit <- struct{}{}
		var wg sync.WaitGroup
		for i, f := range feeds {
			wg.Go(func() {
				for {
					snap, ready, wait := f.next()
					if ready && snap.id == strconv.Itoa(round) {
						return
					}
					select {
					case <-wait:
					case <-time.After(guard):
						t.Errorf("stream %d never saw poll %d", i, round)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	// rounds polls answered, at most one more waiting: not one per stream.
	if n := polls.Load(); n < rounds || n > rounds+1 {
		t.Errorf("%d polls for %d streams over %d rounds, want %d or %d", n, streams, rounds, rounds, rounds+1)
	}
	for _, leave := range leaves[1:] {
		leave()
	}
	select {
	case <-feeds[0].done:
		t.Fatal("the poller stopped while a stream was left")
	default:
	}
	leaves[0]()
	leaves[0]() // a second leave changes nothing
	select {
	case <-feeds[0].done:
	case <-time.After(guard):
		t.Fatal("the poller runs on after the last stream left")
	}
	h.mu.Lock()
	left := len(h.feeds)
	h.mu.Unlock()
	if left != 0 {
		t.Errorf("%d feeds after every stream left", left)
	}
	// A new stream starts a new poller.
	before := polls.Load()
	f, leave := h.subscribe("ev")
	defer leave()
	permit <- struct{}{}
	if f == feeds[0] || polls.Load() != before+1 {
		t.Errorf("a new subscriber after the last left: same feed %v, polls %d → %d", f == feeds[0], before, polls.Load())
	}
}
