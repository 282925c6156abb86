// Package push tells waiting users their place and their admission the moment
// it happens. Each replica's Hub tails, for every event with local subscribers,
// that event's Redis stream: the admission script writes an admitted record in
// the same atomic step as the promotion, so a promotion decided by any replica
// reaches every replica. Places are derived from the stream (admissions ahead,
// leaves ahead) on top of an exact rank taken on connect and now and then, so a
// push tick costs O(events) Redis calls, never one per waiting user.
package push

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// Defaults for a Hub.
const (
	// DefaultTick is how often each event's places are recomputed and pushed.
	// Each subscriber gets its position on one tick of every
	// DefaultPositionEvery, so the shorter the tick, the smaller each tick's
	// burst of position writes, which an admission read meanwhile waits
	// behind: with 10,000 streams and 2,000 promotions/s on a 2-core VM (the
	// bench's push step, three runs each), 500 ms made bursts of 5,000
	// writes and a promotion p99 of 42-82 ms (max 82-88), 100 ms bursts of
	// 1,000 and a p99 of 20-35 ms (max 24-43), for a p90 of 15-20 ms
	// against 10-11. A tick costs one rank.lua call per event.
	DefaultTick = 100 * time.Millisecond
	// DefaultHeartbeat is the target gap between positions to an idle
	// subscriber. It is checked on ticks, so it sits a tick and some slack
	// under API.md's "at least every 5 s".
	DefaultHeartbeat = 4 * time.Second
	// DefaultPositionEvery is the shortest gap between two positions to one
	// subscriber. Subscribers are spread over the ticks in between, so a
	// moving line does not turn every tick into a burst of writes to every
	// connection ahead of the admissions that matter.
	DefaultPositionEvery = time.Second
	// DefaultCorrectBatch caps exact re-ranks per event per tick: 160 a
	// second at DefaultTick.
	DefaultCorrectBatch = 16
	// DefaultCorrectEvery is the least time between two re-ranks of one subscriber.
	DefaultCorrectEvery = 30 * time.Second
	// DefaultBlock is how long one stream read waits for new records.
	DefaultBlock = 200 * time.Millisecond
	// DefaultPace is the least time between two stream reads of one event
	// while records keep coming: a busy stream is read in batches, a few
	// reads a second, each a Redis round trip, rather than once per record
	// (a practice drop's sale read it ~60 times a second). A record on a
	// quiet stream still goes out as soon as it is written.
	DefaultPace = 50 * time.Millisecond
	// DefaultLinger keeps an event's tail running this long after its last subscriber left.
	DefaultLinger = 10 * time.Second
	// tailBatch is the most records one stream read returns.
	tailBatch = 5000
)

// Engine is the part of queue.Engine the hub needs. Tail blocks: the engine
// should sit on a connection pool of its own, about two connections per event
// with subscribers.
type Engine interface {
	Tail(ctx context.Context, eventID, after string, count int64, block time.Duration) ([]queue.Record, error)
	LastRecordID(ctx context.Context, eventID string) (string, error)
	Progress(ctx context.Context, eventID string, attempts []queue.Attempt) (queue.Progress, error)
}

var _ Engine = (*queue.Engine)(nil)

// Observer learns how far behind the stream a replica reads.
type Observer interface {
	// Lag is the time from a record's decision to this replica reading it.
	Lag(eventID string, d time.Duration)
}

// Update is one position message.
type Update struct {
	// ID is the stream id the figures are exact at.
	ID       string
	Position int64
	Waiting  int64
	ETA      time.Duration
	// Lane is the lane the attempt waits in.
	Lane queue.Lane
}

// Sub is one subscribed waiting attempt. Its connection waits on Notify and
// then calls Take. Safe for concurrent use.
type Sub struct {
	EventID string
	Seq     int64
	UserID  string

	notify  chan struct{}
	mu      sync.Mutex
	update  *Update
	final   *queue.Record
	recheck bool

	// Owned by the feed, under its lock. rank0, adm0 and leftAhead count
	// within lane.
	based       bool
	lane        queue.Lane
	rank0       int64
	adm0        int64
	leftAhead   int64
	lastPos     int64
	lastSent    time.Time
	correctedAt time.Time
}

// Notify is signalled whenever Take has something new.
func (s *Sub) Notify() <-chan struct{} { return s.notify }

// Take returns what arrived: the newest position and whether the place could
// not be confirmed, so the caller should look the attempt up itself (both
// cleared), and the record that ended the wait (admitted, left or done; it
// stays, and nothing follows it).
func (s *Sub) Take() (*Update, *queue.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, f, r := s.update, s.final, s.recheck
	s.update, s.recheck = nil, false
	return u, f, r
}

func (s *Sub) signal(set func()) {
	s.mu.Lock()
	set()
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Hub fans an event's stream out to this replica's subscribers. Safe for
// concurrent use.
type Hub struct {
	eng          Engine
	tick         time.Duration
	heartbeat    time.Duration
	every        time.Duration
	correctBatch int
	correctEvery time.Duration
	block        time.Duration
	pace         time.Duration
	linger       time.Duration
	obs          Observer
	log          *slog.Logger
	// tickHook, when set (tests only), learns when each feed tick starts
	// and ends, whether or not the tick needed Redis.
	tickHook func(eventID string, done bool)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	feeds  map[string]*feed
}

// Option configures a Hub.
type Option func(*Hub)

// WithTick sets how often places are pushed.
func WithTick(d time.Duration) Option { return func(h *Hub) { h.tick = d } }

// WithHeartbeat sets the longest gap between two position messages.
func WithHeartbeat(d time.Duration) Option { return func(h *Hub) { h.heartbeat = d } }

// WithPositionEvery sets the shortest gap between two positions to one subscriber.
func WithPositionEvery(d time.Duration) Option { return func(h *Hub) { h.every = d } }

// WithCorrections sets how many re-ranks one tick may do and how seldom one subscriber is re-ranked.
func WithCorrections(batch int, every time.Duration) Option {
	return func(h *Hub) { h.correctBatch, h.correctEvery = batch, every }
}

// WithBlock sets how long one stream read waits for new records; on a quiet
// stream a tick follows each read, so ticks come no faster than this.
func WithBlock(d time.Duration) Option { return func(h *Hub) { h.block = d } }

// WithPace sets the least time between two stream reads of one event while
// records keep coming (0: read again at once).
func WithPace(d time.Duration) Option { return func(h *Hub) { h.pace = d } }

// WithLinger sets how long an event's tail outlives its last subscriber.
func WithLinger(d time.Duration) Option { return func(h *Hub) { h.linger = d } }

// WithObserver reports stream lag to o.
func WithObserver(o Observer) Option { return func(h *Hub) { h.obs = o } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(h *Hub) { h.log = l } }

// New returns a hub; Close stops it.
func New(eng Engine, opts ...Option) *Hub {
	h := &Hub{eng: eng, tick: DefaultTick, heartbeat: DefaultHeartbeat, every: DefaultPositionEvery, correctBatch: DefaultCorrectBatch,
		correctEvery: DefaultCorrectEvery, block: DefaultBlock, pace: DefaultPace, linger: DefaultLinger, log: slog.Default(),
		feeds: map[string]*feed{}}
	for _, o := range opts {
		o(h)
	}
	if h.tick <= 0 {
		h.tick = DefaultTick
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Done is closed when the hub closes; open streams should end then.
func (h *Hub) Done() <-chan struct{} { return h.ctx.Done() }

// Close stops every tail and waits for them.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true // no feed starts after this
	h.cancel()
	h.mu.Unlock()
	h.wg.Wait()
}

// Subscribe registers the waiting attempt (seq, userID) of eventID and returns
// its exact place now. When the attempt is no longer waiting, the Sub comes
// back already flagged for a recheck. Call Unsubscribe when done.
func (h *Hub) Subscribe(ctx context.Context, eventID string, seq int64, userID string) (*Sub, Update, error) {
	f, err := h.feedFor(ctx, eventID)
	if err != nil {
		return nil, Update{}, err
	}
	s := &Sub{EventID: eventID, Seq: seq, UserID: userID, notify: make(chan struct{}, 1)}
	f.add(s)
	// Ranked after registering: any record after AsOf reaches s through the feed.
	p, err := h.eng.Progress(ctx, eventID, []queue.Attempt{{UserID: userID, Seq: seq}})
	if err != nil {
		h.Unsubscribe(s)
		return nil, Update{}, err
	}
	r := laneRank{p.Ranks[0], p.Lanes[0]}
	f.correct(p.AsOf, map[*Sub]laneRank{s: r}, time.Now())
	if r.rank < 0 {
		f.sent(s, r.rank)
		s.signal(func() { s.recheck = true })
		return s, Update{ID: p.AsOf, Waiting: p.Waiting}, nil
	}
	pos := p.Place(r.lane, r.rank)
	f.sent(s, pos) // the caller sends this first place itself
	return s, Update{ID: p.AsOf, Position: pos, Waiting: p.Waiting, ETA: p.ETA(pos), Lane: r.lane}, nil
}

// Unsubscribe removes s; its event's tail stops after the linger time if s was the last.
func (h *Hub) Unsubscribe(s *Sub) {
	if f := h.running(s.EventID); f != nil {
		f.remove(s)
	}
}

// Nudge tells eventID's feed that records worth pushing at once are in its
// stream, as after an admission tick that promoted: its next read skips the
// pace (DefaultPace) it keeps while the stream is busy. Without a feed for
// eventID on this replica it does nothing.
func (h *Hub) Nudge(eventID string) {
	f := h.running(eventID)
	if f == nil {
		return
	}
	select {
	case f.wake <- struct{}{}:
	default: // a nudge is pending already
	}
}

// Subscribers counts the subscribers of eventID on this replica.
func (h *Hub) Subscribers(eventID string) int {
	f := h.running(eventID)
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// running returns eventID's feed on this replica, or nil.
func (h *Hub) running(eventID string) *feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.feeds[eventID]
}

func (h *Hub) feedFor(ctx context.Context, eventID string) (*feed, error) {
	if f, err := h.existing(eventID); f != nil || err != nil {
		return f, err
	}
	// The tail starts at the newest record, read before any subscriber is
	// ranked; read outside the lock so a slow Redis stalls only this event.
	last, err := h.eng.LastRecordID(ctx, eventID)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, h.ctx.Err()
	}
	if f := h.feeds[eventID]; f != nil {
		return f, nil // another caller started it meanwhile
	}
	f := &feed{h: h, eventID: eventID, wake: make(chan struct{}, 1), lastID: last, subs: map[*Sub]struct{}{}, bySeq: map[int64][]*Sub{},
		emptySince: time.Now()}
	h.feeds[eventID] = f
	h.wg.Go(f.run)
	return f, nil
}

// existing returns eventID's running feed, with its linger clock restarted so
// it is not dropped before the caller adds to it.
func (h *Hub) existing(eventID string) (*feed, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, h.ctx.Err()
	}
	f := h.feeds[eventID]
	if f != nil {
		f.mu.Lock()
		f.emptySince = time.Now()
		f.mu.Unlock()
	}
	return f, nil
}

// drop removes f once it has had no subscriber for the linger time.
func (h *Hub) drop(f *feed) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) > 0 || time.Since(f.emptySince) < h.linger {
		return false
	}
	delete(h.feeds, f.eventID)
	return true
}
