package httpapi

import (
	"context"
	"sync"
	"time"
)

// statsSnapshot is one poll of an event's stats: the message's id and
// data, or ok false when the lookup failed.
type statsSnapshot struct {
	id   string
	data []byte
	ok   bool
}

// statsPoll reads an event's stats once.
type statsPoll func(ctx context.Context, eventID string) statsSnapshot

// statsHub shares one poller per event among its stats streams: the first
// subscriber starts a goroutine polling every tick, the last one stops it,
// so Redis sees one poll per event per tick whatever the streams. Safe for
// concurrent use.
type statsHub struct {
	poll  statsPoll
	every time.Duration

	mu    sync.Mutex
	feeds map[string]*statsFeed
}

func newStatsHub(poll statsPoll, every time.Duration) *statsHub {
	return &statsHub{poll: poll, every: every, feeds: map[string]*statsFeed{}}
}

// statsFeed is one event's poller and its latest snapshot.
type statsFeed struct {
	subs int
	stop context.CancelFunc
	done chan struct{} // closed when the poller has returned

	mu     sync.Mutex
	latest statsSnapshot
	// changed is closed, and replaced, at each new snapshot.
	changed chan struct{}
	polled  bool
}

// subscribe joins eventID's feed, starting its poller if it is the first;
// leave must be called once.
func (h *statsHub) subscribe(eventID string) (f *statsFeed, leave func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f = h.feeds[eventID]
	if f == nil {
		ctx, stop := context.WithCancel(context.Background())
		f = &statsFeed{stop: stop, done: make(chan struct{}), changed: make(chan struct{})}
		h.feeds[eventID] = f
		go h.run(ctx, f, eventID)
	}
	f.subs++
	return f, sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if f.subs--; f.subs == 0 {
			delete(h.feeds, eventID)
			f.stop()
		}
	})
}

// run polls until its feed's last subscriber leaves.
func (h *statsHub) run(ctx context.Context, f *statsFeed, eventID string) {
	defer close(f.done)
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	for {
		snap := h.poll(ctx, eventID)
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		f.latest, f.polled = snap, true
		close(f.changed)
		f.changed = make(chan struct{})
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// next returns the latest snapshot, whether one was taken yet, and a
// channel closed when a newer one is taken.
func (f *statsFeed) next() (snap statsSnapshot, ready bool, wait <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest, f.polled, f.changed
}
