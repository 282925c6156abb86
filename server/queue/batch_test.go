package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// MustBatchedEngine returns an engine on rdb batching with b.
func MustBatchedEngine(tb testing.TB, rdb redis.UniversalClient, b queue.Batching) *queue.Engine {
	tb.Helper()
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithBatching(b))
	tb.Cleanup(eng.Close)
	return eng
}

// hammer joins users from many goroutines across events, some users
// twice at once, with status reads and leaves mixed in, and checks that
// every caller got its own answer and every event kept exact FIFO seqs.
func hammer(t *testing.T, eng *queue.Engine, events []string) {
	t.Helper()
	const users, callers = 600, 64
	ctx := context.Background()
	for _, id := range events {
		MustEvent(t, eng, id, func(e *queue.Event) { e.Paused = true })
	}
	type joined struct {
		event, user, token string
		seq                int64
		left               bool
	}
	var (
		mu  sync.Mutex
		got []joined
		wg  sync.WaitGroup
		sem = make(chan struct{}, callers)
	)
	for i := range users {
		// Users join twice at once, but for every seventh pair: a solo
		// joiner who leaves again (so it can never rejoin with a new seq).
		ev := events[(i/2)%len(events)]
		user, leaves := fmt.Sprintf("u_%d", i/2), (i/2)%7 == 0
		if leaves {
			user = fmt.Sprintf("solo_%d", i)
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			en, _, err := eng.Join(ctx, ev, user)
			if err != nil {
				t.Errorf("join %s %s: %v", ev, user, err)
				return
			}
			st, err := eng.Status(ctx, ev, en.Token)
			if err != nil {
				t.Errorf("status %s %s: %v", ev, user, err)
				return
			}
			if en.UserID != user || st.UserID != user || st.Seq != en.Seq {
				t.Errorf("%s asked, got join %s/%d and status %s/%d", user, en.UserID, en.Seq, st.UserID, st.Seq)
			}
			j := joined{event: ev, user: user, token: en.Token, seq: en.Seq}
			if leaves {
				was, err := eng.Leave(ctx, ev, en.Token, queue.Actor{UserID: user})
				if err != nil {
					t.Errorf("leave %s %s: %v", ev, user, err)
					return
				}
				j.left = was == queue.StatusWaiting
			}
			mu.Lock()
			got = append(got, j)
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, ev := range events {
		seqOf := map[string]int64{}
		left := map[string]bool{}
		for _, j := range got {
			if j.event != ev {
				continue
			}
			if s, ok := seqOf[j.user]; ok && s != j.seq {
				t.Fatalf("%s %s queued twice: seqs %d and %d", ev, j.user, s, j.seq)
			}
			seqOf[j.user] = j.seq
			left[j.user] = left[j.user] || j.left
		}
		seqs := make([]int64, 0, len(seqOf))
		for _, s := range seqOf {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("%s seqs %v: want 1..%d with no gap", ev, seqs, len(seqs))
			}
		}
		// The ones still waiting stand in seq order, 1..n.
		type place struct{ seq, pos int64 }
		var places []place
		for _, j := range got {
			if j.event != ev || left[j.user] {
				continue
			}
			st := MustStatus(t, eng, ev, j.token)
			if st.Status == queue.StatusWaiting {
				places = append(places, place{st.Seq, st.Position})
			}
		}
		slices.SortFunc(places, func(a, b place) int { return int(a.seq - b.seq) })
		places = slices.CompactFunc(places, func(a, b place) bool { return a.seq == b.seq })
		for i, p := range places {
			if p.pos != int64(i+1) {
				t.Fatalf("%s: seq %d at position %d, want %d", ev, p.seq, p.pos, i+1)
			}
		}
	}
}

func TestBatchHammer(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    queue.Batching
	}{
		// The default: up to 128 calls per pipeline, one pipeline in flight,
		// status reads from snapshots.
		{"default", queue.DefaultBatching},
		// Status reads all through verify.lua, in runs.
		{"no-snapshots", noSnapshots},
		// One pipeline in flight and tiny batches: long queues, many hand-overs.
		{"one-in-flight", queue.Batching{Size: 3, InFlight: 1, Wait: time.Millisecond, StatusSnapshots: true}},
		// No batching at all: the same checks hold for plain calls.
		{"off", queue.Batching{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := redistest.MustStart(t)
			eng := MustBatchedEngine(t, redistest.MustClient(t, p.Addr()), tc.b)
			hammer(t, eng, []string{"ham-a", "ham-b", "ham-c"})
		})
	}
}

func TestBatchCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-master Redis Cluster: runs in make test")
	}
	c := redistest.MustCluster(t, 3)
	cc := redistest.MustClusterClient(t, c)
	eng := MustBatchedEngine(t, cc, queue.DefaultBatching)
	// Enough events that their slots spread over every master.
	events := make([]string, 9)
	for i := range events {
		events[i] = fmt.Sprintf("cl-%d", i)
	}
	hammer(t, eng, events)
	// Status reads of the events' lines, at once, come from snapshots: one
	// transaction per event (a cluster refuses one across slots), no script.
	var toks, ids []string
	for _, id := range events {
		for i := range 5 {
			toks, ids = append(toks, MustJoin(t, eng, id, fmt.Sprintf("VIRTUAL:snap%d", i)).Token), append(ids, id)
		}
	}
	evals := func() int64 {
		var n atomic.Int64
		_ = cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
			n.Add(MustCommandCalls(t, m, "evalsha") + MustCommandCalls(t, m, "eval"))
			return nil
		})
		return n.Load()
	}
	before := evals()
	var wg sync.WaitGroup
	for i, tok := range toks {
		wg.Go(func() {
			if st, err := eng.Status(context.Background(), ids[i], tok); err != nil || st.Status != queue.StatusWaiting {
				t.Errorf("status of %s on %s: %+v, %v", tok, ids[i], st, err)
			}
		})
	}
	wg.Wait()
	if n := evals() - before; n != 0 {
		t.Errorf("%d status reads across %d events ran %d scripts, want 0", len(toks), len(events), n)
	}
	// A flushed script cache on every master: the next pipelines load it again.
	if err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		return m.ScriptFlush(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	mustConcurrentJoins(t, eng, events, "after-flush")
}

// mustConcurrentJoins joins 100 new users at once across events.
func mustConcurrentJoins(t *testing.T, eng *queue.Engine, events []string, prefix string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			user := fmt.Sprintf("%s_%d", prefix, i)
			en, created, err := eng.Join(context.Background(), events[i%len(events)], user)
			if err != nil || !created || en.UserID != user {
				t.Errorf("join %s: created %v, user %q, err %v", user, created, en.UserID, err)
			}
		})
	}
	wg.Wait()
}

func TestBatchNoScript(t *testing.T) {
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := MustBatchedEngine(t, rdb, queue.DefaultBatching)
	MustEvent(t, eng, "flushed", func(e *queue.Event) { e.Paused = true })
	tok := MustJoin(t, eng, "flushed", "u_before").Token
	if err := rdb.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	mustConcurrentJoins(t, eng, []string{"flushed"}, "u_after")
	if st := MustStatus(t, eng, "flushed", tok); st.Position != 1 {
		t.Fatalf("first joiner at %d after the flush, want 1", st.Position)
	}
}

// pause holds every script on rdb's server for d (CLIENT PAUSE WRITE).
func pause(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	c := redistest.MustClient(t, addr)
	if err := c.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
}

// unpause ends a pause before its time: a test that checks what the paused
// calls do pauses for long, so that a loaded machine cannot outlast the
// pause before the check, and ends it after.
func unpause(t *testing.T, addr string) {
	t.Helper()
	if err := redistest.MustClient(t, addr).Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}

func TestBatchCancel(t *testing.T) {
	t.Parallel() // waits out a paused Redis
	p := redistest.MustStart(t)
	eng := MustBatchedEngine(t, redistest.MustClient(t, p.Addr()), queue.Batching{Size: 8, InFlight: 1, Wait: time.Second})
	MustEvent(t, eng, "cancel", func(e *queue.Event) { e.Paused = true })
	pause(t, p.Addr(), 2*time.Second)
	// answered counts callers who stayed and got their answer: none can
	// before the pause ends, so a cancelled caller that finds it 0 left
	// without waiting for the paused Redis.
	var answered atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			ctx := context.Background()
			cancelled := i%2 == 0
			if cancelled {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
			}
			_, _, err := eng.Join(ctx, "cancel", fmt.Sprintf("u_%d", i))
			if !cancelled {
				answered.Add(1)
			}
			switch {
			case cancelled && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("cancelled caller %d: err %v, want deadline exceeded", i, err)
			case cancelled && answered.Load() > 0:
				t.Errorf("cancelled caller %d returned only after the paused Redis answered", i)
			case !cancelled && err != nil:
				t.Errorf("caller %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	// Cancelled calls still queued were never sent: at most the one that
	// went at once, before its caller left, joined.
	if st, err := eng.Stats(context.Background(), queue.Event{ID: "cancel"}); err != nil || st.Waiting > 21 {
		t.Fatalf("waiting %d (err %v), want the 20 who stayed and at most one more", st.Waiting, err)
	}
	for i := 1; i < 40; i += 2 {
		if en := MustJoin(t, eng, "cancel", fmt.Sprintf("u_%d", i)); en.Status != queue.StatusWaiting {
			t.Fatalf("u_%d is %s", i, en.Status)
		}
	}
}

func TestBatchOutage(t *testing.T) {
	t.Parallel() // waits out a paused Redis
	p := redistest.MustStart(t)
	// One dial per try, as the server dials (redistest.FailFast): go-redis's
	// default of five dials 100 ms apart made each queued call wait ~1 s.
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: 1, DialTimeout: 200 * time.Millisecond, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	eng := MustBatchedEngine(t, rdb, queue.Batching{Size: 8, InFlight: 2, Wait: 5 * time.Millisecond})
	MustEvent(t, eng, "outage", func(e *queue.Event) { e.Paused = true })
	tok := MustJoin(t, eng, "outage", "u_probe").Token
	pause(t, p.Addr(), 5*time.Second)
	errs := make(chan error, 30)
	for i := range cap(errs) {
		go func() {
			if i%2 == 0 {
				_, _, err := eng.Join(context.Background(), "outage", fmt.Sprintf("u_%d", i))
				errs <- err
				return
			}
			_, err := eng.Status(context.Background(), "outage", tok)
			errs <- err
		}()
	}
	time.Sleep(200 * time.Millisecond) // every call is in a pipeline or queued
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	for range cap(errs) {
		select {
		case err := <-errs:
			MustCode(t, err, queue.CodeUnavailable, "")
		case <-time.After(10 * time.Second):
			t.Fatal("a caller never got an answer")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), redistest.Timeout)
	defer cancel()
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	MustEvent(t, eng, "after", nil)
	mustConcurrentJoins(t, eng, []string{"after"}, "u_back")
}

func TestBatchOverdue(t *testing.T) {
	t.Parallel() // waits out a paused Redis
	for _, tc := range []struct {
		name  string
		wait  time.Duration
		conns int
	}{
		// The queued call outwaits Wait and goes in a second pipeline.
		{"overdue", 20 * time.Millisecond, 2},
		// Within Wait it stays queued behind the one pipeline in flight.
		{"within-wait", 10 * time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := redistest.MustStart(t)
			rdb := redistest.MustClient(t, p.Addr())
			eng := MustBatchedEngine(t, rdb, queue.Batching{Size: 8, InFlight: 1, Wait: tc.wait})
			MustEvent(t, eng, "slow", func(e *queue.Event) { e.Paused = true })
			pause(t, p.Addr(), 10*time.Second)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { MustJoin(t, eng, "slow", fmt.Sprintf("u_%d", i)) })
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			if n := inUse(rdb); n != tc.conns {
				t.Errorf("%d pipelines in flight, want %d", n, tc.conns)
			}
			unpause(t, p.Addr())
			wg.Wait()
		})
	}
}

// TestBatchOverdueCap: while Redis stalls, overdue queues go in extra
// pipelines only up to 2×InFlight in all; later calls wait for one to end.
func TestBatchOverdueCap(t *testing.T) {
	t.Parallel() // waits out a paused Redis
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := MustBatchedEngine(t, rdb, queue.Batching{Size: 8, InFlight: 1, Wait: 5 * time.Millisecond})
	MustEvent(t, eng, "stalled", func(e *queue.Event) { e.Paused = true })
	pause(t, p.Addr(), 10*time.Second)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { MustJoin(t, eng, "stalled", fmt.Sprintf("u_%d", i)) })
		time.Sleep(30 * time.Millisecond) // each call outwaits Wait on its own
	}
	if n := inUse(rdb); n != 2 {
		t.Errorf("%d pipelines in flight, want the cap of 2", n)
	}
	unpause(t, p.Addr())
	wg.Wait()
	if st, err := eng.Stats(context.Background(), queue.Event{ID: "stalled"}); err != nil || st.Waiting != 8 {
		t.Fatalf("waiting %d (%v), want all 8 joined after the stall", st.Waiting, err)
	}
}

// inUse counts rdb's connections busy now, pipeline pool included.
func inUse(rdb *redis.Client) int {
	st := rdb.PoolStats()
	n := int(st.TotalConns) - int(st.IdleConns)
	if p := st.PipelineStats; p != nil {
		n += int(p.TotalConns) - int(p.IdleConns)
	}
	return n
}

func TestBatchClose(t *testing.T) {
	t.Parallel() // waits out a paused Redis
	p := redistest.MustStart(t)
	// Wait and the pause outlast any slow machine: the second call stays
	// queued behind the first until Close, which is then what answers it.
	eng := queue.New(redistest.MustClient(t, p.Addr()), []byte("k"), queue.WithBatching(queue.Batching{Size: 4, InFlight: 1, Wait: time.Minute}))
	MustEvent(t, eng, "closing", func(e *queue.Event) { e.Paused = true })
	pause(t, p.Addr(), 10*time.Second)
	var (
		wg   sync.WaitGroup
		errs [2]error
	)
	answered := make(chan struct{})
	wg.Go(func() { _, _, errs[0] = eng.Join(context.Background(), "closing", "u_0") })
	time.Sleep(50 * time.Millisecond)
	wg.Go(func() {
		defer close(answered)
		_, _, errs[1] = eng.Join(context.Background(), "closing", "u_1")
	})
	time.Sleep(50 * time.Millisecond)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		eng.Close() // waits for the pipeline in flight
	}()
	select {
	case <-answered: // by Close, while Redis is still paused
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not answer the queued call")
	}
	select {
	case <-closed:
		t.Fatal("Close returned with a pipeline still in flight")
	default:
	}
	unpause(t, p.Addr())
	<-closed
	wg.Wait()
	first, second := errs[0], errs[1]
	if first != nil {
		t.Errorf("the call in flight: %v, want it answered", first)
	}
	MustCode(t, second, queue.CodeUnavailable, "")
	_, _, err := eng.Join(context.Background(), "closing", "u_late")
	MustCode(t, err, queue.CodeUnavailable, "")
}
