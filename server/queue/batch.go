package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for batching (WithBatching).
const (
	// DefaultBatchSize caps the script calls sent in one pipeline: 128
	// joins run in well under a millisecond of Redis.
	DefaultBatchSize = MaxBatchSize
	// MaxBatchSize caps Batching.Size, so that a run stays inside the 2 ms
	// any script may take: 128 joins given in full (the longest kind) took
	// 1.1 ms of Redis, 1,000 took 5.7 ms (and at about 1,330, join.lua
	// could no longer take its values at once: Lua takes some 8,000).
	MaxBatchSize = 128
	// DefaultBatchInFlight caps the pipelines in flight at once. One: the
	// fewer pipelines, the more calls each carries, and a run of joins or
	// status reads costs Redis a fixed part per call (the config, the
	// counters, the stream entry) plus a few µs per call in it; measured
	// with 64 callers on one event, one in flight costs Redis about a fifth
	// less per join and per status read than two, a third less than four,
	// and answers sooner. A stalled pipeline holds the queue for at most
	// DefaultBatchWait (see Batching.Wait).
	DefaultBatchInFlight = 1
	// DefaultBatchWait bounds how long a call waits for a free pipeline
	// before it goes in an extra one.
	DefaultBatchWait = 10 * time.Millisecond
	// DefaultBatchGather is how long queued calls wait for others to go
	// with them, from the oldest's arrival, while calls come in runs (the
	// last pipeline carried more than one): under load the callers a
	// pipeline answered come back a little apart, and without a gather the
	// first back would go alone, and the calls queued behind a pipeline
	// would go as soon as it returns, however few. Each pipeline costs Redis
	// about 25 µs beyond its commands (the socket reads and writes, the
	// event loop's wake-up) and each run its script's fixed part (about
	// 140,000 instructions for a join run, against 8,500 a join), so the
	// fuller the pipelines the less Redis CPU a call takes. At a low rate,
	// where pipelines carry one call each, nobody waits; under load the
	// gather mostly ends first when every caller that may come back has
	// (see DefaultBatchGatherTarget) or none has come for GatherIdle.
	DefaultBatchGather = 4 * time.Millisecond
	// DefaultBatchGatherIdle ends a gather once no call has come for this
	// long. Measured through the HTTP API against a gather without it (three
	// rounds side by side): an open loop of 1,000 joins/s went from a
	// median of 3.1 ms to 0.5 ms (p99 6.0 to 1.6-2.6 ms), 5,000/s from 4.1
	// to 2.5 ms; 64 connections in a closed loop kept their throughput and
	// Redis CPU per join at 38-41 joins a script call against 46. Half a
	// millisecond made 26-29 a call there.
	DefaultBatchGatherIdle = time.Millisecond
	// DefaultBatchGatherTarget ends a gather as soon as this many calls are
	// queued, or as many as may come back if fewer (see fullLocked): a
	// full pipeline. So a gather waits for every caller the last pipeline
	// answered and every one queued behind it, however many there are, up
	// to a pipeline's worth, and GatherIdle ends it when they stop coming.
	// Measured through the HTTP API with 64 connections on a 2-core VM
	// (`rushline-bench ab`, two runs of 8 rounds, builds side by side): a
	// target of 48 made 36.7-38.2 joins a script call, this 45.0-47.8, with
	// Redis CPU per join 0.88 and 0.93 of 48's (lower in 6 and 7 of 8
	// rounds) and the same server CPU (0.99, 1.00). Before that, 48 against
	// the earlier 500 µs gathered only ahead of a free pipeline took joins
	// from 21 to 47 a script call and Redis CPU per join from 6.7 to 4.9 µs
	// (medians); a fixed 64 also paid, but only because the bench has
	// exactly 64 connections. An open loop up to about 12,000 calls a second
	// gathers fewer than 48 within Gather, so its callers wait as before
	// (`ab --rate`: the same p50 at 5,000 and 12,000 joins/s).
	DefaultBatchGatherTarget = DefaultBatchSize
)

// Batching configures how the engine coalesces concurrent script calls into
// Redis pipelines. A zero Size turns batching off.
type Batching struct {
	// Size caps the calls per pipeline, at most MaxBatchSize.
	Size int
	// InFlight caps the pipelines in flight; a call that finds them all busy
	// queues and goes with the others queued meanwhile.
	InFlight int
	// Wait bounds a queued call's wait: past it the queue goes in an extra
	// pipeline, so one stalled round trip does not hold everyone; at most
	// 2×InFlight pipelines are in flight in all, so a stalled Redis does
	// not pile up connections.
	Wait time.Duration
	// Gather, when set, is how long queued calls wait for others to join
	// them before they go in a free pipeline, counted from the oldest's
	// arrival, as long as the last pipeline carried more than one call
	// (while pipelines carry one call each, nobody waits).
	Gather time.Duration
	// GatherIdle, when set, ends a gather once no call has come for this
	// long, so that at a low rate a call does not wait out Gather for
	// others that are not coming.
	GatherIdle time.Duration
	// GatherTarget, when set, ends a gather once this many calls are
	// queued, or fewer: as many as may come back (the calls of the last
	// pipeline to return plus those queued behind it).
	GatherTarget int
	// StatusSnapshots has status reads answered from one MULTI/EXEC
	// snapshot of their event's line where it can answer them (see
	// snapshot.go), and by verify.lua otherwise.
	StatusSnapshots bool
}

// DefaultBatching is the engine's batching unless WithBatching changes it.
var DefaultBatching = Batching{Size: DefaultBatchSize, InFlight: DefaultBatchInFlight, Wait: DefaultBatchWait,
	Gather: DefaultBatchGather, GatherIdle: DefaultBatchGatherIdle, GatherTarget: DefaultBatchGatherTarget,
	StatusSnapshots: true}

// WithBatching sets how the hot scripts (join, status, verify, leave, order)
// are coalesced into pipelines; Batching{} sends each on its own.
func WithBatching(b Batching) Option { return func(e *Engine) { e.batching = b } }

// errBatcherClosed answers calls made after Close.
var errBatcherClosed = errors.New("queue: engine closed")

// call is one script call waiting for, or riding in, a pipeline.
type call struct {
	ctx    context.Context
	script *luaScript
	// event names the keys the call runs on (script.keysOf): only the
	// first call of a group needs them built.
	event string
	args  []any
	res   []any
	err   error
	done  chan struct{}
	// at is when the call was queued (set only with Batching.Gather on): a
	// gather ends once the oldest queued call has waited Gather or, with
	// GatherIdle set, once the newest has waited GatherIdle (see
	// gatherLeftLocked).
	at time.Time
	// buf holds res for a call of a run answered as one (see manyForm) or
	// from a status snapshot, so that answering it allocates nothing.
	buf [joinWidth + joinShared]any
}

// batcher coalesces concurrent script calls into pipelines: calls that
// arrive while InFlight pipelines are out queue and go together in the next
// free one; with a pipeline free, a call goes at once unless calls come in
// runs, when the queue gathers first (see Batching.Gather). Safe for
// concurrent use.
type batcher struct {
	rdb redis.UniversalClient
	cfg Batching
	// many maps a script to its many-call form: a run of calls of that
	// script on the same keys goes as one call of it.
	many map[*redis.Script]manyForm

	mu      sync.Mutex
	queue   []*call
	running int
	timer   *time.Timer
	armed   bool
	// due is when the armed timer is due: a firing before it is stale.
	due    time.Time
	closed bool
	idle   sync.Cond // signalled when running drops to 0
	// last is how many calls the last pipeline sent carried; gathering
	// says the gather timer runs (see Batching.Gather).
	last int
	// expect is how many callers may soon be queued: those of the last
	// pipeline to return and those queued behind it (see fullLocked).
	expect int
	// returned is when the last pipeline returned, while GatherIdle is set.
	returned  time.Time
	gathering bool
	gather    *time.Timer
	// views remembers what status read snapshots found, by event.
	views views
}

func newBatcher(rdb redis.UniversalClient, cfg Batching, many map[*redis.Script]manyForm) *batcher {
	if cfg.InFlight < 1 {
		cfg.InFlight = 1
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultBatchWait
	}
	cfg.Size = min(cfg.Size, MaxBatchSize)
	b := &batcher{rdb: rdb, cfg: cfg, many: many}
	b.idle.L = &b.mu
	b.timer = time.AfterFunc(time.Hour, b.overdue)
	b.timer.Stop()
	b.gather = time.AfterFunc(time.Hour, b.gathered)
	b.gather.Stop()
	return b
}

// do runs script s on eventID's keys with args in the next pipeline and
// returns its reply. A cancelled ctx returns at once; the call is dropped if
// it has not been sent yet, and its reply is discarded if it has.
func (b *batcher) do(ctx context.Context, s *luaScript, eventID string, args []any) ([]any, error) {
	c := &call{ctx: ctx, script: s, event: eventID, args: args, done: make(chan struct{})}
	if err := b.enqueue(c); err != nil {
		return nil, err
	}
	return c.wait(ctx)
}

// doAll runs script s on eventID's keys once per args, the calls queued
// together so that they go in one pipeline (and, for a script with a
// many-call form, as one call of it) when they fit in one; as do, per call.
func (b *batcher) doAll(ctx context.Context, s *luaScript, eventID string, args [][]any) ([][]any, []error) {
	calls := make([]*call, len(args))
	for i, a := range args {
		calls[i] = &call{ctx: ctx, script: s, event: eventID, args: a, done: make(chan struct{})}
	}
	res, errs := make([][]any, len(args)), make([]error, len(args))
	if err := b.enqueue(calls...); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return res, errs
	}
	for i, c := range calls {
		res[i], errs[i] = c.wait(ctx)
	}
	return res, errs
}

// enqueue queues calls, in order, and sends the queue when a pipeline is
// free (after the gather, while calls come in runs).
func (b *batcher) enqueue(calls ...*call) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errBatcherClosed
	}
	if b.cfg.Gather > 0 {
		now := time.Now()
		for _, c := range calls {
			c.at = now
		}
	}
	b.queue = append(b.queue, calls...)
	var batch []*call
	if b.running < b.cfg.InFlight {
		batch = b.nextLocked()
	} else {
		b.armLocked()
	}
	b.mu.Unlock()
	if batch != nil {
		// Off the caller's goroutine, so the caller can still leave on ctx.
		go b.exec(batch)
	}
	return nil
}

// wait returns c's reply, or ctx's error at once when ctx ends first.
func (c *call) wait(ctx context.Context) ([]any, error) {
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		select {
		case <-c.done: // answered meanwhile: the answer wins
			return c.res, c.err
		default:
			return nil, ctx.Err()
		}
	}
}

// nextLocked, with a pipeline free, takes the queue to send now, or has it
// gather and returns nil: while calls come in runs, the queue goes once its
// oldest has waited Gather, no call has come for GatherIdle (see
// gatherLeftLocked) or it is full (see fullLocked).
func (b *batcher) nextLocked() []*call {
	if len(b.queue) == 0 {
		return nil
	}
	if b.cfg.Gather <= 0 || b.last <= 1 || b.fullLocked() {
		return b.takeLocked()
	}
	if b.gathering {
		return nil
	}
	left := b.gatherLeftLocked()
	if left <= 0 {
		return b.takeLocked()
	}
	b.gathering = true
	b.gather.Reset(left)
	return nil
}

// gatherLeftLocked is how much longer the queue gathers: until its oldest
// call has waited Gather or, with GatherIdle set, until no call has come
// for GatherIdle (counted from the newest call, or from when the last
// pipeline returned if that was later), whichever is sooner.
func (b *batcher) gatherLeftLocked() time.Duration {
	now := time.Now()
	left := b.cfg.Gather - now.Sub(b.queue[0].at)
	if b.cfg.GatherIdle > 0 {
		quiet := now.Sub(b.queue[len(b.queue)-1].at)
		if !b.returned.IsZero() {
			quiet = min(quiet, now.Sub(b.returned))
		}
		left = min(left, b.cfg.GatherIdle-quiet)
	}
	return left
}

// fullLocked reports whether the queue holds enough calls to end a gather:
// GatherTarget, or expect if that is fewer. So a few callers in a closed
// loop go as soon as all are back rather than waiting out the gather for
// callers that do not exist, while many callers that fell into two groups
// (one in the pipeline, one queued behind it) wait for each other and go as
// one.
func (b *batcher) fullLocked() bool {
	return b.cfg.GatherTarget > 0 && len(b.queue) >= min(b.cfg.GatherTarget, b.expect)
}

// takeLocked removes up to Size live queued calls, answering those whose
// caller has gone on the way (they take no room), and counts one more
// pipeline in flight. It returns nil (and counts nothing) when no live call
// is queued.
func (b *batcher) takeLocked() []*call {
	batch := make([]*call, 0, min(len(b.queue), b.cfg.Size))
	n := 0
	for ; n < len(b.queue) && len(batch) < b.cfg.Size; n++ {
		c := b.queue[n]
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		batch = append(batch, c)
	}
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	// The oldest queued call goes (or has gone): so does its gather.
	if b.gathering {
		b.gathering = false
		b.gather.Stop()
	}
	b.armLocked()
	if len(batch) == 0 {
		return nil
	}
	b.running++
	b.last = len(batch)
	return batch
}

// armLocked keeps the overdue timer running exactly while calls are queued.
func (b *batcher) armLocked() {
	switch {
	case len(b.queue) > 0 && !b.armed:
		b.armed = true
		b.due = time.Now().Add(b.cfg.Wait) // before Reset: the timer fires no sooner
		b.timer.Reset(b.cfg.Wait)
	case len(b.queue) == 0 && b.armed:
		b.armed = false
		b.timer.Stop()
	}
}

// gathered sends the calls gathered since the gather timer started, or has
// them wait on when a call came meanwhile (see gatherLeftLocked); so does a
// firing that Stop came too late for (the gather ended and a later one
// began).
func (b *batcher) gathered() {
	b.mu.Lock()
	var batch []*call
	if b.gathering && !b.closed {
		// A gather runs only with a pipeline free, and any pipeline taken
		// meanwhile took the queue and ended it: this one is still free.
		if left := b.gatherLeftLocked(); left > 0 {
			b.gather.Reset(left)
		} else {
			batch = b.takeLocked()
		}
	}
	b.mu.Unlock()
	if batch != nil {
		b.exec(batch)
	}
}

// maxRunning caps the pipelines in flight, extra ones included: while Redis
// stalls, overdue queues go one extra pipeline per InFlight at most, and
// the rest wait for a pipeline to finish.
func (b *batcher) maxRunning() int { return 2 * b.cfg.InFlight }

// overdue sends the queue in an extra pipeline once its oldest call has
// waited Wait for a free one, unless maxRunning are in flight already. A
// firing that Stop came too late for (the queue went and a later one armed
// the timer again) waits on for what is left of the later one's Wait.
func (b *batcher) overdue() {
	b.mu.Lock()
	var batch []*call
	if left := time.Until(b.due); b.armed && left > 0 {
		b.timer.Reset(left)
	} else {
		b.armed = false
		if len(b.queue) > 0 && b.running < b.maxRunning() {
			batch = b.takeLocked()
		}
		if batch == nil {
			b.armLocked() // at the cap: look again after another Wait
		}
	}
	b.mu.Unlock()
	if batch != nil {
		b.exec(batch)
	}
}

// exec sends batch, answers every call, and hands the next queued calls to
// a new goroutine. Its status reads a snapshot may answer go to one (see
// snapshot.go) while the other calls go as one pipeline; those the
// snapshot leaves go after.
func (b *batcher) exec(batch []*call) {
	// The pipeline serves many callers, so no one caller's cancellation may
	// cut it short; go-redis's own timeouts bound it.
	ctx := context.Background()
	reads, others := b.statusReads(batch)
	switch {
	case len(reads) == 0:
		b.send(ctx, others)
	case len(others) == 0:
		b.send(ctx, b.fromSnapshots(ctx, reads))
	default:
		// The others need no snapshot: they go meanwhile.
		missed := make(chan []*call, 1)
		go func() { missed <- b.fromSnapshots(ctx, reads) }()
		b.send(ctx, others)
		b.send(ctx, <-missed)
	}
	b.finish(len(batch))
}

// finish counts a pipeline of n calls done and sends the calls queued
// behind it, or has them gather.
func (b *batcher) finish(n int) {
	b.mu.Lock()
	b.running--
	b.expect = n + len(b.queue)
	if b.cfg.GatherIdle > 0 {
		b.returned = time.Now()
	}
	var next []*call
	if b.running < b.cfg.InFlight {
		next = b.nextLocked()
	}
	if b.running == 0 {
		b.idle.Broadcast()
	}
	b.mu.Unlock()
	if next != nil {
		go b.exec(next)
	}
}

// send sends calls as one pipeline and answers every one.
func (b *batcher) send(ctx context.Context, calls []*call) {
	if len(calls) == 0 {
		return
	}
	groups := b.group(calls)
	cmds := make([]*redis.Cmd, len(groups))
	pipe := b.rdb.Pipeline()
	for i, g := range groups {
		cmds[i] = g.script.EvalSha(ctx, pipe, g.keys(), g.args()...)
	}
	_, _ = pipe.Exec(ctx)
	// A flushed script cache: send those calls again with the script's body,
	// which also loads it for the next EVALSHA.
	var again redis.Pipeliner
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") || errors.Is(cmd.Err(), redis.ErrNoScript) {
			if again == nil {
				again = b.rdb.Pipeline()
			}
			cmds[i] = groups[i].script.Eval(ctx, again, groups[i].keys(), groups[i].args()...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, g := range groups {
		g.answer(cmds[i])
	}
}

// close fails every queued call, refuses new ones and waits for the
// pipelines in flight.
func (b *batcher) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.timer.Stop()
	b.gather.Stop()
	b.armed = false
	for _, c := range b.queue {
		c.err = errBatcherClosed
		close(c.done)
	}
	b.queue = nil
	for b.running > 0 {
		b.idle.Wait()
	}
}

// manyForm is how a run of calls of one script goes as one call: the
// script wrapped in a loop over the calls (manyScript), or, for a script
// that takes any number of calls one after the other (join.lua,
// verify.lua), the script itself, given the calls' arguments concatenated
// (see concatArgs).
type manyForm struct {
	script *redis.Script
	// split, for a script taking calls one after the other, cuts its reply
	// into each call's answer; nil for a manyScript.
	split splitter
}

// group is one command of a pipeline: a single call, or a run of calls of
// one script on the same keys sent as one call of its many-call form.
// split is the script's splitter, if it takes calls one after the other:
// even a single call's reply goes through it.
type group struct {
	script *redis.Script
	calls  []*call
	many   bool
	split  splitter
}

// group splits batch into commands, keeping the calls' order: consecutive
// calls of a script that has a many-call form, on the same event, go as one.
func (b *batcher) group(batch []*call) []group {
	gs := make([]group, 0, len(batch))
	for i := 0; i < len(batch); {
		c := batch[i]
		j := i + 1
		m, ok := b.many[c.script.Script]
		if ok {
			for j < len(batch) && batch[j].script == c.script && batch[j].event == c.event {
				j++
			}
			if j-i > 1 {
				gs = append(gs, group{script: m.script, calls: batch[i:j], many: true, split: m.split})
				i = j
				continue
			}
		}
		gs = append(gs, group{script: c.script.Script, calls: batch[i:j], split: m.split})
		i = j
	}
	return gs
}

// keys is the KEYS of g: its first call's (all its calls share them).
func (g group) keys() []string { return g.calls[0].script.keysOf(g.calls[0].event) }

// args is the ARGV of g: a single call's own; for a script taking calls one
// after the other, the latest of the calls' clocks (the run happens at one
// instant, its last call's) and the rest as concatArgs puts it; else the
// many-call layout of manyScript.
func (g group) args() []any {
	if !g.many {
		return g.calls[0].args
	}
	if g.split != nil {
		now := g.calls[0].args[0]
		for _, c := range g.calls {
			if later(c.args[0], now) {
				now = c.args[0]
			}
		}
		return concatArgs(now, g.calls)
	}
	n := 3
	for _, c := range g.calls {
		n += 1 + len(c.args)
	}
	a := make([]any, 0, n)
	first := g.calls[0].args
	a = append(a, first[0], first[1], len(g.calls))
	for _, c := range g.calls {
		a = append(a, len(c.args))
		a = append(a, c.args...)
	}
	return a
}

// answer hands each call of g its reply from cmd.
func (g group) answer(cmd *redis.Cmd) {
	replies, err := cmd.Slice()
	if !g.many && g.split == nil {
		c := g.calls[0]
		c.res, c.err = replies, err
		close(c.done)
		return
	}
	if err == nil && g.split != nil {
		into := make([][]any, len(g.calls))
		for i, c := range g.calls {
			into[i] = c.buf[:0]
		}
		if err = g.split(replies, into); err == nil {
			for i, c := range g.calls {
				c.res = into[i]
			}
		}
	}
	if err == nil && g.split == nil && len(replies) != len(g.calls) {
		err = fmt.Errorf("queue: %d replies to %d calls", len(replies), len(g.calls))
	}
	for i, c := range g.calls {
		switch {
		case err != nil:
			c.err = err
		case g.split == nil:
			c.res, c.err = reply(replies[i])
		}
		close(c.done)
	}
}

// concatArgs is the ARGV of a run of calls of a script that takes calls one
// after the other (join.lua, verify.lua), at clock reading now: now, the first
// call's MAXLEN, the calls' own arguments (each a []byte) as one, then,
// when the calls carry a count of what they hold (an int64 after it), the
// sum of the counts, and, when every call also carries a line (a string
// after the count), the lines joined by "\n".
func concatArgs(now any, calls []*call) []any {
	size, count, lines, lined := 0, int64(0), 0, true
	for _, c := range calls {
		size += len(c.args[2].([]byte))
		if len(c.args) > 3 {
			count += c.args[3].(int64)
		}
		if lined = lined && len(c.args) > 4; lined {
			lines += len(c.args[4].(string)) + 1
		}
	}
	b := make([]byte, 0, size)
	for _, c := range calls {
		b = append(b, c.args[2].([]byte)...)
	}
	a := []any{now, calls[0].args[1], b}
	if len(calls[0].args) <= 3 {
		return a
	}
	a = append(a, count)
	if !lined {
		return a
	}
	l := make([]byte, 0, lines)
	for i, c := range calls {
		if i > 0 {
			l = append(l, '\n')
		}
		l = append(l, c.args[4].(string)...)
	}
	return append(a, l)
}

// later reports whether clock reading a (ms, as run puts it in ARGV[1]) is
// after b.
func later(a, b any) bool {
	x, _ := a.(int64)
	y, _ := b.(int64)
	return x > y
}

// reply is one call's part of a many-call reply, as cmd.Slice would give it
// had the call gone alone.
func reply(v any) ([]any, error) {
	switch r := v.(type) {
	case []any:
		return r, nil
	case nil:
		return nil, redis.Nil
	case error:
		return nil, r
	default:
		return nil, fmt.Errorf("queue: unexpected script reply %T", v)
	}
}

// manyScript is the many-call form of a script body: one call runs the body
// once per call, in order, for calls on the same keys. Its ARGV is {now,
// maxlen, n, argc_1, argv_1..., argc_n, argv_n...}, each argv_i a call's own
// ARGV (its own now and maxlen first). It returns one reply per call: the
// body's table, nil, or an error reply when the body raised, so one call's
// failure leaves the others' answers alone, as separate calls would.
func manyScript(body string) *redis.Script {
	pre, _ := prelude(body)
	return redis.NewScript(pre + "local function one(ARGV)\n" + body + "\nend\n" + `
local out, i = {}, 4
for c = 1, tonumber(ARGV[3]) do
  local n, a = tonumber(ARGV[i]), {}
  for j = 1, n do a[j] = ARGV[i + j] end
  i = i + n + 1
  NOW, MAXLEN = tonumber(a[1]), a[2]
  local ok, r = pcall(one, a)
  if not ok then
    if type(r) ~= 'table' then r = redis.error_reply(tostring(r)) end
    out[c] = r
  else
    out[c] = r or false
  end
end
return out
`)
}

// hot reports whether s runs per user request, and so is worth batching.
// Admission and event scripts run a few times a second and go on their own.
func hot(s *luaScript) bool {
	return s == scriptJoin || s == scriptVerify || s == scriptLeave || s == scriptOrder
}
