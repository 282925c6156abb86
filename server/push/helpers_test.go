package push_test

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

var tokenKey = []byte("push-test-token-key")

// syncTimeout bounds every wait for the hub to catch up.
const syncTimeout = 15 * time.Second

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// admin is the test's own view of the queue: an engine on a client of its
// own, with a clock the test moves so admission ticks are due on demand.
type admin struct {
	eng *queue.Engine
	clk *clock
	rdb *redis.Client
}

// MustRedis starts a private redis-server and returns its address. It runs
// at hz 100: Redis ends a blocked stream read on its cron, every 100 ms at
// the default hz 10, so only at hz 100 does a quiet stream's read (MustHub)
// return after testTick and the hub tick every testTick.
func MustRedis(tb testing.TB) string {
	tb.Helper()
	return redistest.MustStart(tb, func(o *redisproc.Options) { o.Args = append(o.Args, "--hz", "100") }).Addr()
}

// MustAdmin returns the admin engine on addr.
func MustAdmin(tb testing.TB, addr string) *admin {
	tb.Helper()
	rdb := redistest.MustClient(tb, addr)
	clk := &clock{t: time.Now().UTC()}
	return &admin{eng: queue.New(rdb, tokenKey, queue.WithClock(clk.Now)), clk: clk, rdb: rdb}
}

// MustEvent creates a paused batch-policy event: joins never skip the line,
// and nothing moves until the test promotes.
func (a *admin) MustEvent(tb testing.TB, id string) queue.Event {
	tb.Helper()
	ev := queue.Event{ID: id, Name: id, Seats: 100, Capacity: 1 << 20, AdmitBatch: 1, AdmitIntervalMS: 50,
		ActiveTTLS: 60, Policy: queue.PolicyBatch, Paused: true, CreatedAt: a.clk.Now()}
	if err := a.eng.CreateEvent(context.Background(), ev); err != nil {
		tb.Fatalf("create event %s: %v", id, err)
	}
	return ev
}

// MustJoinN joins users prefix0..prefix(n-1). With workers 1 user i gets
// the i-th seq after any earlier joins; with more, seqs are in no order.
func (a *admin) MustJoinN(tb testing.TB, eventID, prefix string, n, workers int) []queue.Entry {
	tb.Helper()
	out := make([]queue.Entry, n)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				en, _, err := a.eng.Join(context.Background(), eventID, fmt.Sprintf("%s%d", prefix, i))
				if err == nil && en.Status != queue.StatusWaiting {
					err = fmt.Errorf("user %s%d is %s, want WAITING", prefix, i, en.Status)
				}
				if err != nil {
					errOnce.Do(func() { first = err })
					return
				}
				out[i] = en
			}
		})
	}
	wg.Wait()
	if first != nil {
		tb.Fatalf("join %s: %v", eventID, first)
	}
	return out
}

// MustJoin joins one user, who must end up waiting.
func (a *admin) MustJoin(tb testing.TB, eventID, user string) queue.Entry {
	tb.Helper()
	en, _, err := a.eng.Join(context.Background(), eventID, user)
	if err != nil || en.Status != queue.StatusWaiting {
		tb.Fatalf("join %s as %s: %+v, %v", eventID, user, en, err)
	}
	return en
}

// MustPromote promotes exactly n from the head of ev's line in one admission tick.
func (a *admin) MustPromote(tb testing.TB, ev queue.Event, n int) {
	tb.Helper()
	if n == 0 {
		return
	}
	ctx := context.Background()
	ev.Paused, ev.AdmitBatch = false, n
	if err := a.eng.PutEvent(ctx, ev); err != nil {
		tb.Fatalf("resume %s: %v", ev.ID, err)
	}
	a.clk.Advance(time.Second) // the next tick is due
	res, err := a.eng.Tick(ctx, ev.ID, "r1", time.Minute)
	if err != nil || !res.Ran || res.Promoted != n {
		tb.Fatalf("tick %s: %+v, %v; want %d promoted", ev.ID, res, err, n)
	}
	ev.Paused = true
	if err := a.eng.PutEvent(ctx, ev); err != nil {
		tb.Fatalf("pause %s: %v", ev.ID, err)
	}
}

// MustLeave gives up en's attempt as its owner.
func (a *admin) MustLeave(tb testing.TB, eventID string, en queue.Entry) {
	tb.Helper()
	if _, err := a.eng.Leave(context.Background(), eventID, en.Token, queue.Actor{UserID: en.UserID}); err != nil {
		tb.Fatalf("leave %s as %s: %v", eventID, en.UserID, err)
	}
}

// MustStatus returns the exact state of en's attempt.
func (a *admin) MustStatus(tb testing.TB, eventID string, en queue.Entry) queue.Entry {
	tb.Helper()
	st, err := a.eng.Status(context.Background(), eventID, en.Token)
	if err != nil {
		tb.Fatalf("status %s of %s: %v", eventID, en.UserID, err)
	}
	return st
}

// MustLastID returns the newest record id of eventID.
func (a *admin) MustLastID(tb testing.TB, eventID string) string {
	tb.Helper()
	id, err := a.eng.LastRecordID(context.Background(), eventID)
	if err != nil {
		tb.Fatalf("last record %s: %v", eventID, err)
	}
	return id
}

// subscribing marks the context of a Subscribe call, so the spy tells
// connect-time ranks from hub ticks.
type subscribing struct{}

func subscribeCtx() context.Context {
	return context.WithValue(context.Background(), subscribing{}, true)
}

// tailMark is one stream read: where it started and how many ticks had begun by then.
type tailMark struct {
	after string
	ticks int
}

// feedSpy is what the spy saw of one event's feed.
type feedSpy struct {
	ticksStarted int
	ticksDone    int
	// ranks counts the ticks' Progress calls.
	ranks int
	marks []tailMark
	// read is the last record a tail read returned.
	read string
}

// spyEngine passes the hub's calls through to a queue.Engine and watches
// them: which stream position each tail read started from, and how many
// ticks (Progress calls outside Subscribe) ran. Safe for concurrent use.
type spyEngine struct {
	*queue.Engine

	mu    sync.Mutex
	feeds map[string]*feedSpy
	// afterRank, when set, runs after a Subscribe's rank was read and before
	// the hub sees it.
	afterRank func(eventID string, attempts []queue.Attempt, p queue.Progress)
}

var _ push.Engine = (*spyEngine)(nil)

func (s *spyEngine) feed(eventID string) *feedSpy {
	f := s.feeds[eventID]
	if f == nil {
		f = &feedSpy{}
		s.feeds[eventID] = f
	}
	return f
}

func (s *spyEngine) Tail(ctx context.Context, eventID, after string, count int64, block time.Duration) ([]queue.Record, error) {
	s.mu.Lock()
	f := s.feed(eventID)
	if n := len(f.marks); n == 0 || f.marks[n-1].after != after {
		f.marks = append(f.marks, tailMark{after: after, ticks: f.ticksStarted})
	}
	s.mu.Unlock()
	recs, err := s.Engine.Tail(ctx, eventID, after, count, block)
	if n := len(recs); n > 0 {
		s.mu.Lock()
		s.feed(eventID).read = recs[n-1].ID
		s.mu.Unlock()
	}
	return recs, err
}

func (s *spyEngine) Progress(ctx context.Context, eventID string, attempts []queue.Attempt) (queue.Progress, error) {
	p, err := s.Engine.Progress(ctx, eventID, attempts)
	if ctx.Value(subscribing{}) == nil {
		s.mu.Lock()
		s.feed(eventID).ranks++
		s.mu.Unlock()
	} else if s.afterRank != nil && err == nil {
		s.afterRank(eventID, attempts, p)
	}
	return p, err
}

// Ranks returns how many Progress calls the ticks of eventID have made.
func (s *spyEngine) Ranks(eventID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feed(eventID).ranks
}

// tick counts the hub's ticks of eventID (push.WithTickHook), those that
// needed no Redis call included.
func (s *spyEngine) tick(eventID string, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if done {
		s.feed(eventID).ticksDone++
	} else {
		s.feed(eventID).ticksStarted++
	}
}

// Ticks returns how many hub ticks of eventID have finished.
func (s *spyEngine) Ticks(eventID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feed(eventID).ticksDone
}

// WaitTailed waits until the feed of eventID has read every record up to id.
func (s *spyEngine) WaitTailed(tb testing.TB, eventID, id string) {
	tb.Helper()
	waitFor(tb, "tail of "+eventID+" reads up to "+id, func() bool {
		_, ok := s.tailedAt(eventID, id)
		return ok
	})
}

// WaitRead waits until a tail read of eventID has returned record id (or a
// later one): the feed has it, though it may not have asked for more since.
func (s *spyEngine) WaitRead(tb testing.TB, eventID, id string) {
	tb.Helper()
	waitFor(tb, "a tail read of "+eventID+" returning "+id, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		read := s.feed(eventID).read
		return read != "" && queue.CompareIDs(read, id) >= 0
	})
}

func (s *spyEngine) tailedAt(eventID, id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.feed(eventID).marks {
		if queue.CompareIDs(m.after, id) >= 0 {
			return m.ticks, true
		}
	}
	return 0, false
}

// WaitPushed waits until the feed of eventID has read every record up to id
// and then run spread whole ticks, so every place it pushes is final. spread
// is how many ticks one subscriber waits for its turn (position interval
// over tick, at least 1).
func (s *spyEngine) WaitPushed(tb testing.TB, eventID, id string, spread int) {
	tb.Helper()
	s.WaitTailed(tb, eventID, id)
	base, _ := s.tailedAt(eventID, id)
	// The ticks after the read are base+1…base+spread; tick base+spread+1
	// starts only once those have signalled every subscriber (same goroutine).
	waitFor(tb, "whole ticks of "+eventID+" after "+id, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.feed(eventID).ticksStarted >= base+spread+1
	})
}

// WaitTicks waits until n more ticks of eventID have finished.
func (s *spyEngine) WaitTicks(tb testing.TB, eventID string, n int) {
	tb.Helper()
	want := s.Ticks(eventID) + n
	waitFor(tb, fmt.Sprintf("%d ticks of %s", n, eventID), func() bool { return s.Ticks(eventID) >= want })
}

// commandCounter is a go-redis hook that counts the commands a client sends.
type commandCounter struct {
	n      atomic.Int64
	mu     sync.Mutex
	byName map[string]int64
}

func (c *commandCounter) count(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		c.byName[cmd.Name()]++
	}
	c.n.Add(int64(len(cmds)))
}

func (c *commandCounter) Snapshot() (int64, map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int64, len(c.byName))
	for k, v := range c.byName {
		m[k] = v
	}
	return c.n.Load(), m
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds...)
		return next(ctx, cmds)
	}
}

// hubKit is a hub under test with the spy and the client it runs on.
type hubKit struct {
	hub      *push.Hub
	spy      *spyEngine
	rdb      *redis.Client
	counter  *commandCounter
	closeHub sync.Once
}

func (k *hubKit) Close() { k.closeHub.Do(k.hub.Close) }

// MustHub returns a hub on a client of its own to addr, closed in tb.Cleanup.
// Its stream reads block testTick rather than push.DefaultBlock, so a quiet
// stream ticks every testTick, not every 200 ms; opts come after and may
// change that.
func MustHub(tb testing.TB, addr string, opts ...push.Option) *hubKit {
	tb.Helper()
	rdb := redistest.MustClient(tb, addr)
	counter := &commandCounter{byName: map[string]int64{}}
	rdb.AddHook(counter)
	spy := &spyEngine{Engine: queue.New(rdb, tokenKey), feeds: map[string]*feedSpy{}}
	opts = append([]push.Option{push.WithBlock(testTick), push.WithTickHook(spy.tick)}, opts...)
	k := &hubKit{hub: push.New(spy, opts...), spy: spy, rdb: rdb, counter: counter}
	tb.Cleanup(k.Close)
	return k
}

// MustSubscribe subscribes en's attempt.
func (k *hubKit) MustSubscribe(tb testing.TB, eventID string, en queue.Entry) (*push.Sub, push.Update) {
	tb.Helper()
	s, u, err := k.hub.Subscribe(subscribeCtx(), eventID, en.Seq, en.UserID)
	if err != nil {
		tb.Fatalf("subscribe %s as %s: %v", eventID, en.UserID, err)
	}
	return s, u
}

// MustSubscribeAll subscribes every entry with a few concurrent callers.
func (k *hubKit) MustSubscribeAll(tb testing.TB, eventID string, ens []queue.Entry, workers int) []*push.Sub {
	tb.Helper()
	subs, err := k.subscribeAll(eventID, ens, workers)
	if err != nil {
		tb.Fatalf("subscribe %s: %v", eventID, err)
	}
	return subs
}

// subscribeAll is MustSubscribeAll for goroutines other than the test's.
func (k *hubKit) subscribeAll(eventID string, ens []queue.Entry, workers int) ([]*push.Sub, error) {
	subs := make([]*push.Sub, len(ens))
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ens) {
					return
				}
				s, _, err := k.hub.Subscribe(subscribeCtx(), eventID, ens[i].Seq, ens[i].UserID)
				if err != nil {
					errOnce.Do(func() { first = err })
					return
				}
				subs[i] = s
			}
		})
	}
	wg.Wait()
	return subs, first
}

// watcher follows one Sub the way a connection would: the newest place it
// was told and the record that ended its wait.
type watcher struct {
	en      queue.Entry
	sub     *push.Sub
	pos     int64
	waiting int64
	fresh   bool // an update arrived at the last drain
	final   *queue.Record
	finals  int // distinct final records seen
	recheck bool
}

func newWatcher(en queue.Entry, s *push.Sub, first push.Update) *watcher {
	return &watcher{en: en, sub: s, pos: first.Position, waiting: first.Waiting}
}

// drain takes what arrived since the last drain.
func (w *watcher) drain() {
	u, f, r := w.sub.Take()
	w.fresh = u != nil
	if u != nil {
		w.pos, w.waiting = u.Position, u.Waiting
	}
	if f != nil && (w.final == nil || w.final.ID != f.ID) {
		w.final = f
		w.finals++
	}
	w.recheck = w.recheck || r
}

// waitFor polls cond until it holds or syncTimeout passes.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(syncTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// MustCommandStats returns the calls per command from INFO commandstats.
// Commands run by scripts count there too.
func MustCommandStats(tb testing.TB, rdb *redis.Client) map[string]int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("info commandstats: %v", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					tb.Fatalf("commandstats line %q: %v", sc.Text(), err)
				}
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return out
}

// diffStats returns after-before per command, leaving out the INFO calls
// that took the readings.
func diffStats(before, after map[string]int64) (int64, map[string]int64) {
	var total int64
	d := map[string]int64{}
	for k, v := range after {
		if k == "info" {
			continue
		}
		if n := v - before[k]; n != 0 {
			d[k] = n
			total += n
		}
	}
	return total, d
}
