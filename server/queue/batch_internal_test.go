package queue

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

// probeBody is a test script: it logs ARGV[3] to a list and answers it with
// its NOW, raises for "boom", answers nil for "nil" and hits a wrong type
// for "wrongtype".
const probeBody = `-- KEYS: lease
if ARGV[3] == 'boom' then error('boom') end
if ARGV[3] == 'nil' then return nil end
if ARGV[3] == 'wrongtype' then redis.call('HSET', K_LEASE, 'x', 1) end
redis.call('RPUSH', K_LEASE, ARGV[3])
return {ARGV[3], NOW}
`

// mustCalls builds calls of s, one per (event, arg) pair, each with its own now.
func mustCalls(t *testing.T, s *luaScript, pairs ...string) []*call {
	t.Helper()
	var cs []*call
	for i := 0; i+1 < len(pairs); i += 2 {
		cs = append(cs, &call{ctx: context.Background(), script: s, event: pairs[i],
			args: []any{1000 + i, 100, pairs[i+1]}, done: make(chan struct{})})
	}
	return cs
}

// TestBatchGroups checks how a pipeline is cut into commands: runs of one
// script with a many-call form on one event go together, in order; anything
// else goes alone.
func TestBatchGroups(t *testing.T) {
	one, other := script(probeBody), script(probeBody)
	b := &batcher{many: map[*redis.Script]manyForm{one.Script: {script: manyScript(probeBody)}}}
	for _, tc := range []struct {
		name  string
		calls []*call
		want  string // group sizes, "m" marking a many-call group
	}{
		{"one call", mustCalls(t, one, "e1", "a"), "1"},
		{"a run", mustCalls(t, one, "e1", "a", "e1", "b", "e1", "c"), "3m"},
		{"events cut runs", mustCalls(t, one, "e1", "a", "e1", "b", "e2", "c", "e1", "d", "e1", "e"), "2m 1 2m"},
		{"other scripts go alone", append(append(mustCalls(t, one, "e1", "a", "e1", "b"), mustCalls(t, other, "e1", "x", "e1", "y")...),
			mustCalls(t, one, "e1", "c")...), "2m 1 1 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			n := 0
			for _, g := range b.group(tc.calls) {
				s := strconv.Itoa(len(g.calls))
				if g.many {
					s += "m"
				}
				got = append(got, s)
				for _, c := range g.calls {
					if c != tc.calls[n] {
						t.Fatalf("call %d out of order", n)
					}
					n++
				}
			}
			if strings.Join(got, " ") != tc.want || n != len(tc.calls) {
				t.Errorf("groups = %q over %d calls, want %q over %d", strings.Join(got, " "), n, tc.want, len(tc.calls))
			}
		})
	}
}

// TestBatchManyReplies runs a many-call group on a real Redis: every call
// gets its own reply and its own clock, in order, and one call's error or
// nil leaves the others' answers alone.
func TestBatchManyReplies(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	one := script(probeBody)
	b := newBatcher(rdb, Batching{Size: 64, InFlight: 1}, map[*redis.Script]manyForm{one.Script: {script: manyScript(probeBody)}})
	calls := mustCalls(t, one, "e1", "a", "e1", "boom", "e1", "nil", "e1", "b", "e1", "wrongtype", "e1", "c")
	b.running = 1 // as takeLocked would count it
	b.exec(calls)
	for i, tc := range []struct {
		name string
		want string // the reply's first element, or the error's text
	}{
		{"plain", "a"},
		{"raises", "boom"},
		{"nil", redis.Nil.Error()},
		{"after errors", "b"},
		{"redis error", "WRONGTYPE"},
		{"last", "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := calls[i]
			<-c.done
			switch {
			case c.err != nil:
				if !strings.Contains(c.err.Error(), tc.want) {
					t.Errorf("error %v, want %q", c.err, tc.want)
				}
				if tc.want == redis.Nil.Error() && !errors.Is(c.err, redis.Nil) {
					t.Errorf("error %v, want redis.Nil", c.err)
				}
			case len(c.res) != 2 || c.res[0] != tc.want:
				t.Errorf("reply %v, want [%s now]", c.res, tc.want)
			case c.res[1] != int64(1000+2*i):
				t.Errorf("NOW = %v, want the call's own %d", c.res[1], 1000+2*i)
			}
		})
	}
	if got, err := rdb.LRange(context.Background(), key("e1", keyLease), 0, -1).Result(); err != nil ||
		strings.Join(got, ",") != "a,b,c" {
		t.Errorf("log = %v, %v; want a,b,c", got, err)
	}
}

// TestLibReadsNoCallArgs keeps lib.lua's helpers off ARGV past [2]: a
// many-call run hands each call its own ARGV as a parameter, which a helper
// reading the global ARGV would not see.
func TestLibReadsNoCallArgs(t *testing.T) {
	argv := regexp.MustCompile(`ARGV\[(\d+)\]`)
	for i, line := range strings.Split(luaLib, "\n") {
		code, _, _ := strings.Cut(line, "--")
		for _, m := range argv.FindAllStringSubmatch(code, -1) {
			if n, _ := strconv.Atoi(m[1]); n > 2 {
				t.Errorf("lib.lua:%d reads %s", i+1, m[0])
			}
		}
	}
}

// TestBatchConcatenatedRun sends a run of joins, each with its own clock,
// as one call of join.lua: each call gets its own answer (with the values
// shared by the run), in order, and the run happens at its latest clock.
func TestBatchConcatenatedRun(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("k"), WithBatching(Batching{}))
	if err := eng.CreateEvent(ctx, Event{ID: "e1", Name: "e1", Seats: 1, Capacity: 1, AdmitBatch: 7,
		AdmitIntervalMS: 250, ActiveTTLS: 60, Policy: PolicyBatch}); err != nil {
		t.Fatal(err)
	}
	b := newBatcher(rdb, Batching{Size: 64, InFlight: 1}, manyScripts)
	var calls []*call
	for i, now := range []int64{3000, 5000, 4000} {
		calls = append(calls, &call{ctx: ctx, script: scriptJoin, event: "e1",
			args: append([]any{now, int64(0)}, joinArgv(fmt.Sprintf("u_%d", i), JoinOptions{})...), done: make(chan struct{})})
	}
	if gs := b.group(calls); len(gs) != 1 || !gs[0].many {
		t.Fatalf("%d groups, want the run as one", len(gs))
	}
	b.running = 1 // as takeLocked would count it
	b.exec(calls)
	for i, c := range calls {
		<-c.done
		if c.err != nil {
			t.Fatalf("call %d: %v", i, c.err)
		}
		// NEW WAITING seq place waiting … then the run's batch and interval.
		got := fmt.Sprintf("%v %v %v %v %v %v %v", c.res[0], c.res[1], c.res[2], c.res[3], c.res[4], c.res[10], c.res[11])
		if want := fmt.Sprintf("NEW WAITING %d %d %d 7 250", i+1, i+1, i+1); got != want || len(c.res) != joinWidth+joinShared {
			t.Errorf("call %d answered %v, want %s", i, c.res, want)
		}
	}
	recs, err := eng.Records(ctx, "e1", "0", 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.UserID != fmt.Sprintf("u_%d", i) || r.At.UnixMilli() != 5000 {
			t.Errorf("record %d: %+v, want seq %d of u_%d at the run's latest clock", i, r, i+1, i)
		}
	}
}

// TestConcatArgs: a run's ARGV is its latest clock, the first call's
// MAXLEN and the calls' own arguments as one; the count of what they hold
// when they carry one, and their lines when every call carries one.
func TestConcatArgs(t *testing.T) {
	plain := func(user string) *call {
		return &call{args: append([]any{int64(1), int64(0)}, joinArgv(user, JoinOptions{})...)}
	}
	proven := &call{args: append([]any{int64(1), int64(0)}, joinArgv("p", JoinOptions{Proven: true})...)}
	coded := &call{args: append([]any{int64(1), int64(0)}, joinArgv("c", JoinOptions{PriorityCode: "C1"})...)}
	lookup := func(user string) *call { return &call{args: []any{int64(1), int64(0), lookupArg(user, 7)}} }
	cat := func(calls ...*call) []byte {
		var b []byte
		for _, c := range calls {
			b = append(b, c.args[2].([]byte)...)
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		calls []*call
		want  []any
	}{
		{"plain joins: their lines", []*call{plain("u1"), plain("u 2")},
			[]any{int64(9), int64(0), cat(plain("u1"), plain("u 2")), int64(2), []byte("u1\nu 2")}},
		{"a join with its proof: no lines", []*call{plain("u1"), proven, plain("u3")},
			[]any{int64(9), int64(0), cat(plain("u1"), proven, plain("u3")), int64(3)}},
		{"a join given in full last: no lines", []*call{plain("u1"), coded},
			[]any{int64(9), int64(0), cat(plain("u1"), coded), int64(2)}},
		{"lookups: no count", []*call{lookup("a"), lookup("b")},
			[]any{int64(9), int64(0), cat(lookup("a"), lookup("b"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := concatArgs(int64(9), tc.calls); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBatchSizeCapFitsLua: a run of MaxBatchSize joins given in full, six
// values each, goes through join.lua whole, and no batcher makes a larger
// run (a run of about 1,330 would pass what Lua takes at once).
func TestBatchSizeCapFitsLua(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("k"), WithBatching(Batching{}))
	if err := eng.CreateEvent(ctx, Event{ID: "e1", Name: "e1", Seats: 1, Capacity: 1, AdmitBatch: 1,
		AdmitIntervalMS: 250, ActiveTTLS: 60, Policy: PolicyBatch}); err != nil {
		t.Fatal(err)
	}
	if b := newBatcher(rdb, Batching{Size: 5 * MaxBatchSize}, manyScripts); b.cfg.Size != MaxBatchSize {
		t.Errorf("a batcher asked for runs of %d makes them of %d, want %d", 5*MaxBatchSize, b.cfg.Size, MaxBatchSize)
	}
	calls := make([]*call, MaxBatchSize)
	for i := range calls {
		calls[i] = &call{args: append([]any{int64(1000), int64(0)}, joinArgv(fmt.Sprintf("u_%d", i),
			JoinOptions{Priority: true, Proven: true})...)}
	}
	answers := mustSplit(t, splitJoin, len(calls), scriptJoin.Run(ctx, rdb, scriptJoin.keysOf("e1"), concatArgs(int64(1000), calls)...))
	if last := answers[len(answers)-1]; last[0] != "NEW" || last[2] != int64(MaxBatchSize) {
		t.Errorf("the run's last join answered %v, want NEW at seq %d", last, MaxBatchSize)
	}
}

// mustGatherFixture starts a Redis with event e1 and returns its client and
// a join of user through a batcher.
func mustGatherFixture(t *testing.T) (*redis.Client, func(b *batcher, ctx context.Context, user string) error) {
	t.Helper()
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	eng := New(rdb, []byte("k"), WithBatching(Batching{}))
	if err := eng.CreateEvent(context.Background(), Event{ID: "e1", Name: "e1", Seats: 1, Capacity: 1, AdmitBatch: 1,
		AdmitIntervalMS: 250, ActiveTTLS: 60, Policy: PolicyBatch}); err != nil {
		t.Fatal(err)
	}
	return rdb, func(b *batcher, ctx context.Context, user string) error {
		_, err := b.do(ctx, scriptJoin, "e1", append([]any{int64(1000), int64(0)}, joinArgv(user, JoinOptions{})...))
		return err
	}
}

// TestBatchGathers: while calls come in runs (the last pipeline carried
// more than one), a call that finds the pipeline free waits Gather for
// others and goes with them, or less once GatherTarget calls are queued, or
// as many as may come back (the callers of the last pipeline to return and
// those queued behind it), or no call has come for GatherIdle; after a lone
// call (the last pipeline carried one) the next never waits for the gather.
func TestBatchGathers(t *testing.T) {
	rdb, join := mustGatherFixture(t)
	cases := []struct {
		name   string
		gather time.Duration
		idle   time.Duration
		target int
		last   int // calls of the pipeline before
		expect int // callers that may come back
		calls  int
		want   int // calls of the pipeline they go in
	}{
		{"after a run, two calls go together", 500 * time.Millisecond, 0, 0, 2, 2, 2, 2},
		{"after a run, three calls go together", 500 * time.Millisecond, 0, 0, 5, 5, 3, 3},
		{"the target ends the gather", time.Minute, 0, 3, 5, 5, 3, 3},
		{"the callers that may come back end the gather", time.Minute, 0, 48, 3, 3, 3, 3},
		{"by default the gather waits for every caller that may come back", time.Minute, 0,
			DefaultBatchGatherTarget, 60, 60, 60, 60},
		{"a quiet spell ends the gather", time.Minute, 50 * time.Millisecond, 48, 5, 5, 3, 3},
		{"after a lone call, the next never waits", time.Minute, 0, 0, 1, 1, 1, 1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBatcher(rdb, Batching{Size: 64, InFlight: 1, Gather: tc.gather, GatherIdle: tc.idle,
				GatherTarget: tc.target}, manyScripts)
			defer b.close()
			b.last, b.expect = tc.last, tc.expect
			// A gather of a minute would outlast this deadline: a lone
			// call, or a full queue, must go at once.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for k := range tc.calls {
				wg.Go(func() {
					if err := join(b, ctx, fmt.Sprintf("g%d-%d", i, k)); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.last != tc.want {
				t.Errorf("the calls went in a pipeline of %d, want %d", b.last, tc.want)
			}
		})
	}
}

// TestBatchGathersBehindAPipeline: calls queued behind a pipeline in flight
// do not go the moment it returns while fewer than the target and than the
// callers that may come back: they gather, and go once either is queued. A
// quiet spell counts from the pipeline's return, not from the calls'
// arrival: the callers it answered have had no time to come back.
func TestBatchGathersBehindAPipeline(t *testing.T) {
	rdb, join := mustGatherFixture(t)
	cases := []struct {
		name     string
		target   int
		idle     time.Duration
		inFlight int           // calls of the pipeline in flight
		queued   int           // calls queued behind it
		aged     time.Duration // how long before its return they came
		more     int           // calls that come after it returns
	}{
		{"the target ends the gather", 4, 0, 10, 2, 0, 2},
		{"the callers just answered end the gather", 48, 0, 2, 2, 0, 2},
		{"a quiet spell counts from the return", 4, 5 * time.Second, 10, 2, 10 * time.Second, 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBatcher(rdb, Batching{Size: 64, InFlight: 1, Gather: time.Minute, GatherIdle: tc.idle,
				GatherTarget: tc.target}, manyScripts)
			defer b.close()
			b.mu.Lock()
			b.running, b.last = 1, tc.inFlight
			b.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			joins := func(from, n int) {
				for k := from; k < from+n; k++ {
					wg.Go(func() {
						if err := join(b, ctx, fmt.Sprintf("behind%d-%d", i, k)); err != nil {
							t.Error(err)
						}
					})
				}
			}
			joins(0, tc.queued)
			for {
				b.mu.Lock()
				n := len(b.queue)
				b.mu.Unlock()
				if n == tc.queued {
					b.mu.Lock()
					for _, c := range b.queue {
						c.at = c.at.Add(-tc.aged)
					}
					b.mu.Unlock()
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("%d calls queued behind the pipeline, want %d", n, tc.queued)
				}
				time.Sleep(time.Millisecond)
			}
			b.finish(tc.inFlight) // the pipeline in flight returns
			b.mu.Lock()
			running, queued, gathering := b.running, len(b.queue), b.gathering
			b.mu.Unlock()
			if running != 0 || queued != tc.queued || !gathering {
				t.Fatalf("after the pipeline returned: %d in flight, %d queued, gathering %v; want 0, %d, true",
					running, queued, gathering, tc.queued)
			}
			joins(tc.queued, tc.more)
			wg.Wait()
			b.mu.Lock()
			defer b.mu.Unlock()
			if want := tc.queued + tc.more; b.last != want {
				t.Errorf("the calls went in a pipeline of %d, want %d", b.last, want)
			}
		})
	}
}

// TestBatchTakeSkipsGoneCallers: calls whose caller has gone are answered
// with the caller's error and take no room in the pipeline: it carries Size
// live calls.
func TestBatchTakeSkipsGoneCallers(t *testing.T) {
	// No Redis: a Wait of an hour keeps the call left queued from going.
	b := newBatcher(nil, Batching{Size: 2, InFlight: 1, Wait: time.Hour}, manyScripts)
	defer b.close()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	mk := func(ctx context.Context) *call { return &call{ctx: ctx, done: make(chan struct{})} }
	dead, live := mk(gone), []*call{mk(context.Background()), mk(context.Background()), mk(context.Background())}
	b.mu.Lock()
	b.queue = append(b.queue, dead, live[0], live[1], live[2])
	batch := b.takeLocked()
	queued := len(b.queue)
	b.running-- // the pipeline never goes: close must not wait for it
	b.mu.Unlock()
	if len(batch) != 2 || batch[0] != live[0] || batch[1] != live[1] {
		t.Fatalf("took %d calls, want the first two live ones", len(batch))
	}
	if queued != 1 {
		t.Errorf("%d calls left queued, want the third live one", queued)
	}
	select {
	case <-dead.done:
		if !errors.Is(dead.err, context.Canceled) {
			t.Errorf("the gone caller's call answered %v, want context.Canceled", dead.err)
		}
	default:
		t.Error("the gone caller's call was not answered")
	}
}

// mustQueued waits until n calls are queued in b.
func mustQueued(t *testing.T, b *batcher, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchGatherRearms: while calls come GatherIdle/2 apart, a firing of
// the gather timer sends nothing and re-arms it for what is left of the
// quiet spell the newest call began; once no call has come for GatherIdle,
// the next firing sends them all in one pipeline. Time is simulated: the
// timer's hour never passes, the queued calls are made older instead, and
// each firing is a call of gathered.
func TestBatchGatherRearms(t *testing.T) {
	rdb, join := mustGatherFixture(t)
	const idle = time.Hour
	var wg sync.WaitGroup
	defer wg.Wait() // after close has answered any call left
	b := newBatcher(rdb, Batching{Size: 64, InFlight: 1, Gather: 10 * idle, GatherIdle: idle, GatherTarget: 48}, manyScripts)
	defer b.close()
	b.last, b.expect = 5, 5 // calls come in runs, and up to five may come back
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	arrive := func(n int) {
		wg.Go(func() {
			if err := join(b, ctx, fmt.Sprintf("rearm-%d", n)); err != nil {
				t.Error(err)
			}
		})
		mustQueued(t, b, n)
	}
	pass := func(d time.Duration) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.queue {
			c.at = c.at.Add(-d)
		}
	}
	// fire runs the timer's firing and reports whether it re-armed the
	// timer and how many calls are still queued (a pipeline takes them all).
	fire := func() (rearmed bool, queued int) {
		b.gather.Stop() // the timer fired: it runs no more unless re-armed
		b.gathered()
		rearmed = b.gather.Stop()
		b.mu.Lock()
		defer b.mu.Unlock()
		return rearmed, len(b.queue)
	}
	arrive(1)
	pass(idle / 2)
	arrive(2)
	pass(idle / 2)
	// The first firing, GatherIdle after the first call: the second came
	// half of it ago.
	if rearmed, queued := fire(); !rearmed || queued != 2 {
		t.Fatalf("first firing: re-armed %v, %d queued; want true, 2", rearmed, queued)
	}
	arrive(3)
	pass(idle / 2)
	if rearmed, queued := fire(); !rearmed || queued != 3 {
		t.Fatalf("second firing: re-armed %v, %d queued; want true, 3", rearmed, queued)
	}
	pass(idle / 2)
	// No call for GatherIdle: the gather ends.
	if rearmed, queued := fire(); rearmed || queued != 0 {
		t.Fatalf("third firing: re-armed %v, %d queued; want false, 0", rearmed, queued)
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last != 3 {
		t.Errorf("the calls went in a pipeline of %d, want 3", b.last)
	}
}

// TestBatchOverdueStale: a firing of the overdue timer before the queue has
// waited Wait (one that Stop came too late for: the queue it was armed for
// went, and a later call armed the timer again) sends nothing and re-arms
// the timer for the rest of Wait; a firing once Wait is up sends the queue
// in an extra pipeline. As in TestBatchGatherRearms, each firing is a call.
func TestBatchOverdueStale(t *testing.T) {
	rdb, join := mustGatherFixture(t)
	var wg sync.WaitGroup
	defer wg.Wait() // after close has answered any call left
	b := newBatcher(rdb, Batching{Size: 64, InFlight: 1, Wait: time.Hour}, manyScripts)
	defer b.close()
	b.mu.Lock()
	b.running = 1 // a pipeline in flight: calls queue behind it
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.running-- // it never returns: close must not wait for it
		b.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wg.Go(func() {
		if err := join(b, ctx, "stale"); err != nil {
			t.Error(err)
		}
	})
	mustQueued(t, b, 1)
	fire := func() (rearmed bool, queued, running int) {
		b.timer.Stop() // the timer fired: it runs no more unless re-armed
		b.overdue()
		rearmed = b.timer.Stop()
		b.mu.Lock()
		defer b.mu.Unlock()
		return rearmed, len(b.queue), b.running
	}
	if rearmed, queued, running := fire(); !rearmed || queued != 1 || running != 1 {
		t.Fatalf("stale firing: re-armed %v, %d queued, %d in flight; want true, 1, 1", rearmed, queued, running)
	}
	b.mu.Lock()
	b.due = b.due.Add(-time.Hour) // Wait is up
	b.mu.Unlock()
	if rearmed, queued, running := fire(); rearmed || queued != 0 || running != 1 {
		t.Fatalf("firing when due: re-armed %v, %d queued, %d in flight; want false, 0, 1 (the extra pipeline done)",
			rearmed, queued, running)
	}
	wg.Wait()
}
