package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// noSnapshots is the default batching with every status read going to
// verify.lua: the answers snapshots must match.
var noSnapshots = func() queue.Batching { b := queue.DefaultBatching; b.StatusSnapshots = false; return b }()

// statusAnswer is a status read's outcome: its entry, or its error code.
type statusAnswer struct {
	entry queue.Entry
	code  queue.Code
}

// MustReadAll reads every token's status at once, so the reads share
// pipelines (and snapshots), and returns the answers in order.
func MustReadAll(tb testing.TB, eng *queue.Engine, eventID string, tokens []string) []statusAnswer {
	tb.Helper()
	out := make([]statusAnswer, len(tokens))
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Go(func() {
			en, err := eng.Status(context.Background(), eventID, tok)
			var qe *queue.Error
			switch {
			case errors.As(err, &qe):
				out[i].code = qe.Code
			case err != nil:
				tb.Errorf("status %d: %v", i, err)
			}
			out[i].entry = en
		})
	}
	wg.Wait()
	return out
}

// TestSnapshotAnswersAsVerify reads the same tokens through snapshots and
// through verify.lua alone, in states a snapshot answers and states it must
// hand over, and wants the same answers.
func TestSnapshotAnswersAsVerify(t *testing.T) {
	for _, tc := range []struct {
		name string
		// event changes the default event; setup puts users in line and
		// returns the tokens to read.
		event func(*queue.Event)
		setup func(t *testing.T, eng *queue.Engine, id string) []string
		// scriptFree: the second round runs no script on redis-server
		// (every read is one a snapshot answers).
		scriptFree bool
	}{
		{"a line without gaps", nil, func(t *testing.T, eng *queue.Engine, id string) []string {
			return mustJoinLine(t, eng, id, 30)
		}, true},
		{"a line with gaps, still waiting", nil, func(t *testing.T, eng *queue.Engine, id string) []string {
			toks := mustJoinLine(t, eng, id, 30)
			mustLeave(t, eng, id, toks[12], 12)
			return append(toks[:12:12], toks[13:]...)
		}, true},
		{"left from the middle", nil, func(t *testing.T, eng *queue.Engine, id string) []string {
			toks := mustJoinLine(t, eng, id, 30)
			for _, i := range []int{3, 11, 12, 25} {
				mustLeave(t, eng, id, toks[i], i)
			}
			return toks
		}, false},
		{"admitted, waiting and gone", func(e *queue.Event) { e.Paused, e.Capacity = false, 8 },
			func(t *testing.T, eng *queue.Engine, id string) []string {
				toks := mustJoinLine(t, eng, id, 30)
				MustTick(t, eng, id)
				mustLeave(t, eng, id, toks[2], 2)   // active, then left
				mustLeave(t, eng, id, toks[20], 20) // waiting, then left
				return toks
			}, false},
		{"a priority lane", nil, func(t *testing.T, eng *queue.Engine, id string) []string {
			toks := mustJoinLine(t, eng, id, 20)
			for i := range 5 {
				toks = append(toks, MustJoinWith(t, eng, id, fmt.Sprintf("VIRTUAL:fast%d", i), queue.JoinOptions{Priority: true}).Token)
			}
			return toks
		}, false},
		{"an earlier attempt's token", nil, func(t *testing.T, eng *queue.Engine, id string) []string {
			toks := mustJoinLine(t, eng, id, 10)
			mustLeave(t, eng, id, toks[4], 4)
			return append(toks, MustJoin(t, eng, id, "VIRTUAL:u4").Token)
		}, false},
		{"an empty line", nil, func(t *testing.T, eng *queue.Engine, id string) []string {
			toks := mustJoinLine(t, eng, id, 3)
			for i, tok := range toks {
				mustLeave(t, eng, id, tok, i)
			}
			return toks
		}, false},
	} {
		for _, store := range []string{"redis-server", "miniredis"} {
			t.Run(tc.name+"/"+store, func(t *testing.T) {
				rdb := MustStore(t, store)
				snap := MustBatchedEngine(t, rdb, queue.DefaultBatching)
				lua := MustBatchedEngine(t, rdb, noSnapshots)
				MustEvent(t, snap, "snap", func(e *queue.Event) {
					e.Paused, e.Capacity, e.AdmitBatch = true, 100, 100
					if tc.event != nil {
						tc.event(e)
					}
				})
				toks := tc.setup(t, snap, "snap")
				want := MustReadAll(t, lua, "snap", toks)
				// Twice: the first snapshot learns whether the lane has gaps.
				for round := range 2 {
					before := mustEvals(t, store, rdb)
					got := MustReadAll(t, snap, "snap", toks)
					if n := mustEvals(t, store, rdb) - before; round == 1 && tc.scriptFree && store == "redis-server" && n != 0 {
						t.Errorf("the second round ran %d scripts, want none", n)
					}
					for i := range toks {
						if got[i] != want[i] {
							t.Errorf("round %d, token %d: snapshot answered %+v, verify.lua %+v", round, i, got[i], want[i])
						}
					}
				}
			})
		}
	}
}

// MustStore starts a private store: "redis-server", or "miniredis" (make
// run's embedded default without redis-server).
func MustStore(t *testing.T, store string) *redis.Client {
	t.Helper()
	if store == "miniredis" {
		return redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	}
	return redistest.MustClient(t, redistest.MustStart(t).Addr())
}

// mustEvals is how many scripts rdb has run ("redis-server" only; 0 on
// miniredis, which does not count commands).
func mustEvals(t *testing.T, store string, rdb *redis.Client) int64 {
	t.Helper()
	if store != "redis-server" {
		return 0
	}
	return MustCommandCalls(t, rdb, "evalsha") + MustCommandCalls(t, rdb, "eval")
}

// mustResume puts ev back unpaused.
func mustResume(t *testing.T, eng *queue.Engine, ev queue.Event) {
	t.Helper()
	ev.Paused = false
	if err := eng.PutEvent(context.Background(), ev); err != nil {
		t.Fatalf("resume %s: %v", ev.ID, err)
	}
}

// mustJoinLine joins n users VIRTUAL:u0… in order and returns their tokens.
func mustJoinLine(t *testing.T, eng *queue.Engine, id string, n int) []string {
	t.Helper()
	toks := make([]string, n)
	for i := range toks {
		toks[i] = MustJoin(t, eng, id, fmt.Sprintf("VIRTUAL:u%d", i)).Token
	}
	return toks
}

// mustLeave has VIRTUAL:u<i> leave with token.
func mustLeave(t *testing.T, eng *queue.Engine, id, token string, i int) {
	t.Helper()
	if _, err := eng.Leave(context.Background(), id, token, queue.Actor{UserID: fmt.Sprintf("VIRTUAL:u%d", i)}); err != nil {
		t.Fatalf("leave u%d: %v", i, err)
	}
}

// TestSnapshotSkipsTheScript checks that status reads of a line in its usual
// state cost no script call, gaps or not, and that a priority lane sends
// them to verify.lua.
func TestSnapshotSkipsTheScript(t *testing.T) {
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := MustBatchedEngine(t, rdb, queue.DefaultBatching)
	MustEvent(t, eng, "skip", func(e *queue.Event) { e.Paused = true })
	toks := mustJoinLine(t, eng, "skip", 40)
	evals := func() int64 { return MustCommandCalls(t, rdb, "evalsha") + MustCommandCalls(t, rdb, "eval") }

	before := evals()
	MustReadAll(t, eng, "skip", toks)
	if n := evals() - before; n != 0 {
		t.Errorf("40 status reads of a line without gaps ran %d scripts, want 0", n)
	}

	mustLeave(t, eng, "skip", toks[7], 7)
	MustReadAll(t, eng, "skip", toks) // learns the gap
	before = evals()
	got := MustReadAll(t, eng, "skip", toks[8:])
	if n := evals() - before; n != 0 {
		t.Errorf("status reads of a line with a gap, once known, ran %d scripts, want 0", n)
	}
	for i, a := range got {
		if want := int64(i + 8); a.entry.Position != want {
			t.Errorf("u%d at place %d, want %d", i+8, a.entry.Position, want)
		}
	}

	MustJoinWith(t, eng, "skip", "VIRTUAL:fast", queue.JoinOptions{Priority: true})
	before = evals()
	MustReadAll(t, eng, "skip", toks[8:9])
	if n := evals() - before; n == 0 {
		t.Error("a status read with a priority lane ran no script")
	}
}

// TestSnapshotSendsTheAdmittedToTheScript checks that, once a snapshot has
// seen the lane's head, reads of attempts before it (admitted, say) go to
// verify.lua at once, with no snapshot first, and the waiting ones still
// come from snapshots.
func TestSnapshotSendsTheAdmittedToTheScript(t *testing.T) {
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := MustBatchedEngine(t, rdb, queue.DefaultBatching)
	ev := MustEvent(t, eng, "head", func(e *queue.Event) { e.Paused = true; e.Capacity, e.AdmitBatch = 5, 5 })
	toks := mustJoinLine(t, eng, "head", 20)
	mustResume(t, eng, ev)
	if res := MustTick(t, eng, "head"); res.Promoted != 5 {
		t.Fatalf("tick promoted %d, want 5", res.Promoted)
	}
	MustReadAll(t, eng, "head", toks[5:]) // a snapshot sees the head
	multis, evals := MustCommandCalls(t, rdb, "multi"), MustCommandCalls(t, rdb, "evalsha")
	for i, a := range MustReadAll(t, eng, "head", toks[:5]) {
		if a.entry.Status != queue.StatusActive {
			t.Errorf("u%d is %s, want ACTIVE", i, a.entry.Status)
		}
	}
	if n := MustCommandCalls(t, rdb, "multi") - multis; n != 0 {
		t.Errorf("reads of admitted attempts took %d snapshots, want none", n)
	}
	if MustCommandCalls(t, rdb, "evalsha") == evals {
		t.Error("reads of admitted attempts ran no script")
	}
	evals = MustCommandCalls(t, rdb, "evalsha")
	for i, a := range MustReadAll(t, eng, "head", toks[5:]) {
		if a.entry.Status != queue.StatusWaiting || a.entry.Position != int64(i+1) {
			t.Errorf("u%d is %s at %d, want WAITING at %d", i+5, a.entry.Status, a.entry.Position, i+1)
		}
	}
	if n := MustCommandCalls(t, rdb, "evalsha") - evals; n != 0 {
		t.Errorf("reads of waiting attempts ran %d scripts, want none", n)
	}
}

// TestSnapshotNeverStale hammers status reads while ticks admit the line and
// checks that no read answers from before a tick that had ended when it
// began, and that each reader sees its users' places only fall: in a line
// without gaps (places from the lane's ends) and in one where every tenth
// user left (places from ranks).
func TestSnapshotNeverStale(t *testing.T) {
	for _, tc := range []struct {
		name string
		gaps bool
	}{{"without gaps", false}, {"with gaps", true}} {
		t.Run(tc.name, func(t *testing.T) { mustNeverStale(t, tc.gaps) })
	}
}

// mustNeverStale is TestSnapshotNeverStale for a line with or without gaps.
func mustNeverStale(t *testing.T, gaps bool) {
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	eng := MustBatchedEngine(t, rdb, queue.DefaultBatching)
	ev := MustEvent(t, eng, "fresh", func(e *queue.Event) {
		e.Capacity, e.AdmitBatch, e.AdmitIntervalMS, e.Policy = 1000, 7, 1, queue.PolicyCapacity
		e.Paused = true
	})
	const users, readers = 300, 32
	toks := mustJoinLine(t, eng, "fresh", users)
	left := func(i int) bool { return gaps && i%10 == 5 }
	remain := users
	for i := range users {
		if left(i) {
			mustLeave(t, eng, "fresh", toks[i], i)
			remain--
		}
	}
	mustResume(t, eng, ev)

	// promoted is how many ticks have admitted, counted once each tick ends.
	var promoted, reads atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			last := map[int]queue.Entry{}
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				i := r + readers*(k%((users+readers-1)/readers))
				if i >= users || left(i) {
					continue
				}
				done := promoted.Load()
				en, err := eng.Status(context.Background(), "fresh", toks[i])
				if err != nil {
					t.Errorf("status u%d: %v", i, err)
					return
				}
				reads.Add(1)
				seq := int64(i + 1)
				switch {
				case en.Status == queue.StatusWaiting && seq <= done:
					t.Errorf("u%d (seq %d) waiting at %d after %d admissions had ended", i, seq, en.Position, done)
				case en.Status == queue.StatusWaiting && en.Position > seq-done:
					t.Errorf("u%d (seq %d) at place %d after %d admissions", i, seq, en.Position, done)
				case last[i].Status == queue.StatusActive && en.Status != queue.StatusActive:
					t.Errorf("u%d went from ACTIVE to %s", i, en.Status)
				case last[i].Status == queue.StatusWaiting && en.Status == queue.StatusWaiting && en.Position > last[i].Position:
					t.Errorf("u%d's place rose from %d to %d", i, last[i].Position, en.Position)
				}
				last[i] = en
			}
		})
	}
	ticks := 0
	for promoted.Load() < int64(remain) && !t.Failed() {
		res, err := eng.Tick(context.Background(), "fresh", "r1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res.Promoted > 0 {
			ticks++
		}
		promoted.Add(int64(res.Promoted))
		time.Sleep(2 * time.Millisecond) // a tick is due every 1 ms
	}
	close(stop)
	wg.Wait()
	t.Logf("%d status reads over %d promoting ticks", reads.Load(), ticks)
	if reads.Load() < int64(ticks) {
		t.Errorf("%d status reads over %d promoting ticks: the readers hardly read", reads.Load(), ticks)
	}
}
