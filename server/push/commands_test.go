package push_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
)

// measureWindow is how many hub ticks one measurement window spans.
const measureWindow = 20

// tickCost is what one measurement window saw, per hub tick.
type tickCost struct {
	server float64 // INFO commandstats calls, script-run commands included
	client float64 // commands the hub's client sent (go-redis hook)
}

// measureTicks subscribes every attempt of ens to a fresh hub with opts, lets
// the connect-time ranks land, then counts the Redis commands of
// measureWindow quiet ticks and checks them against the bound for a hub
// that re-ranks at most batch attempts per tick.
func measureTicks(t *testing.T, addr string, a *admin, eventID string, ens []queue.Entry, batch int, opts ...push.Option) tickCost {
	t.Helper()
	n := len(ens)
	k := MustHub(t, addr, append([]push.Option{push.WithTick(testTick)}, opts...)...)
	defer k.Close()
	subs := k.MustSubscribeAll(t, eventID, ens, 8)
	if got := k.hub.Subscribers(eventID); got != n {
		t.Fatalf("Subscribers = %d, want %d", got, n)
	}
	// Let the connect-time ranks land before counting.
	k.spy.WaitPushed(t, eventID, a.MustLastID(t, eventID), 1)

	serverBefore := MustCommandStats(t, a.rdb)
	clientBefore, namesBefore := k.counter.Snapshot()
	ticksBefore := k.spy.Ticks(eventID)
	k.spy.WaitTicks(t, eventID, measureWindow)
	ticks := k.spy.Ticks(eventID) - ticksBefore
	serverAfter := MustCommandStats(t, a.rdb)
	clientAfter, namesAfter := k.counter.Snapshot()

	server, byCmd := diffStats(serverBefore, serverAfter)
	// Each tick runs at most one EVALSHA and nothing else does in this quiet
	// window, so the server's own count is the number of ticks its commands
	// belong to: a tick in flight at either edge is counted whole, not as
	// part of its neighbour.
	if n := int(byCmd["evalsha"]); n > ticks {
		ticks = n
	}
	c := tickCost{server: float64(server) / float64(ticks), client: float64(clientAfter-clientBefore) / float64(ticks)}
	t.Logf("%d subscribers, %d ticks: %.1f server commands/tick %v; %.1f client commands/tick %v",
		n, ticks, c.server, sorted(byCmd), c.client, sorted(diffNames(namesBefore, namesAfter)))

	// Per tick the hub sends one EVALSHA (rank.lua) and reads its stream
	// with XREAD. rank.lua runs XREVRANGE, a ZCARD per lane and two HMGETs,
	// plus ZSCORE and ZRANK per re-ranked normal-lane attempt (a priority-lane
	// one costs one more ZSCORE). A tick follows a stream read, which
	// blocks a tick's length on a quiet stream (MustHub), so there is about
	// one XREAD per tick; allow two for the reads in flight at either end of
	// the window. Server: 1 + 5 + 2×batch + 2. Client: 1 + 2. None of it
	// depends on how many subscribers there are.
	serverBound := float64(1 + 5 + 2*batch + 2)
	if c.server > serverBound {
		t.Errorf("%.1f server commands per tick, bound %.0f", c.server, serverBound)
	}
	if c.client > 3 {
		t.Errorf("%.1f client commands per tick, bound 3", c.client)
	}
	for _, s := range subs {
		k.hub.Unsubscribe(s)
	}
	return c
}

func TestCommandsPerTickAreBounded(t *testing.T) {
	t.Parallel()
	const correctBatch = push.DefaultCorrectBatch
	variants := []struct {
		name  string
		batch int
		opts  []push.Option
	}{
		{
			// Connect-time ranks only: a tick is the progress read and the tail.
			name: "no re-ranks", batch: 0,
			opts: []push.Option{push.WithCorrections(correctBatch, time.Hour)},
		},
		{
			// Worst case of the default batch: every tick re-ranks a full batch.
			name: "default batch re-ranked every tick", batch: correctBatch,
			opts: []push.Option{push.WithCorrections(correctBatch, 0)},
		},
	}
	sizes := []int{500, 5000}
	var mu sync.Mutex
	got := map[string]map[int]tickCost{}
	t.Run("sizes", func(t *testing.T) {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%d subscribers", n), func(t *testing.T) {
				t.Parallel()
				addr := MustRedis(t)
				a := MustAdmin(t, addr)
				ev := a.MustEvent(t, fmt.Sprintf("cost-%d", n))
				ens := a.MustJoinN(t, ev.ID, "u", n, 8)
				for _, v := range variants {
					t.Run(v.name, func(t *testing.T) {
						c := measureTicks(t, addr, a, ev.ID, ens, v.batch, v.opts...)
						mu.Lock()
						defer mu.Unlock()
						if got[v.name] == nil {
							got[v.name] = map[int]tickCost{}
						}
						got[v.name][n] = c
					})
				}
			})
		}
	})
	for _, v := range variants {
		small, ok1 := got[v.name][sizes[0]]
		large, ok2 := got[v.name][sizes[1]]
		if !ok1 || !ok2 {
			continue // a subtest failed already
		}
		if large.server > 1.5*small.server+10 || large.client > 1.5*small.client+10 {
			t.Errorf("%s: per tick %d subscribers cost %+v, %d cost %+v: grows with subscribers",
				v.name, sizes[1], large, sizes[0], small)
		}
	}
}

func diffNames(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// sorted renders a command count map in a stable order for logs.
func sorted(m map[string]int64) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += fmt.Sprintf(" %s=%d", k, m[k])
	}
	return "{" + s + " }"
}

// TestQuietTicksSkipRedis: a feed calls Redis only at ticks where a
// subscriber is due (its slot, a heartbeat or a re-rank), so two subscribers
// whose slots share one tick of the ten in a position interval cost about
// one call per interval, not one per tick.
func TestQuietTicksSkipRedis(t *testing.T) {
	t.Parallel()
	const slots = 10
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "quiet")
	ens := a.MustJoinN(t, ev.ID, "u", 2*slots, 1) // one worker: seqs 1..20 in order
	// No heartbeat or re-rank in the window: only the slots call Redis.
	k := MustHub(t, addr, push.WithTick(testTick), push.WithPositionEvery(slots*testTick),
		push.WithHeartbeat(time.Hour), push.WithCorrections(push.DefaultCorrectBatch, time.Hour))
	for _, en := range []queue.Entry{ens[0], ens[slots]} { // seqs 1 and 11: the same slot
		k.MustSubscribe(t, ev.ID, en)
	}
	k.spy.WaitTicks(t, ev.ID, 2)
	ticks0, ranks0, start := k.spy.Ticks(ev.ID), k.spy.Ranks(ev.ID), time.Now()
	k.spy.WaitTicks(t, ev.ID, 4*slots)
	ticks, ranks := k.spy.Ticks(ev.ID)-ticks0, k.spy.Ranks(ev.ID)-ranks0
	// Ticks run late on a busy machine, so the window spans more intervals
	// than its ticks say: bound the calls by its time, one per interval
	// begun plus one at each edge.
	intervals := int(time.Since(start) / (slots * testTick))
	if limit := intervals + 3; ranks > limit || ranks < 1 || ranks*2 > ticks {
		t.Errorf("%d Progress calls in %d ticks over %d intervals, want 1..%d and under half the ticks", ranks, ticks, intervals, limit)
	}
}

// TestHeartbeatsRideTheSlots: a subscriber whose place never changes gets
// its heartbeats at its slot's ticks, which call Redis anyway, so a quiet
// feed makes one Progress call a position interval, not one more for each
// heartbeat; the heartbeats still come.
func TestHeartbeatsRideTheSlots(t *testing.T) {
	t.Parallel()
	const slots, beats = 5, 3 // a heartbeat every 3 position intervals
	interval := slots * testTick
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "beats")
	en := a.MustJoinN(t, ev.ID, "u", 1, 1)[0]
	k := MustHub(t, addr, push.WithTick(testTick), push.WithPositionEvery(interval),
		push.WithHeartbeat(beats*interval), push.WithCorrections(push.DefaultCorrectBatch, time.Hour))
	sub, _ := k.MustSubscribe(t, ev.ID, en)
	k.spy.WaitTicks(t, ev.ID, 2)
	sub.Take() // the first place: what follows in the window is heartbeats
	ranks0, start := k.spy.Ranks(ev.ID), time.Now()
	k.spy.WaitTicks(t, ev.ID, 6*beats*slots)
	ranks := k.spy.Ranks(ev.ID) - ranks0
	intervals := int(time.Since(start) / interval)
	// Heartbeats off the slots would add one call per heartbeat: 1 + 1/3
	// a position interval, past this bound over 18 intervals or more.
	if limit := intervals + 3; ranks > limit || ranks < 1 {
		t.Errorf("%d Progress calls over %d position intervals, want 1..%d", ranks, intervals, limit)
	}
	if u, _, _ := sub.Take(); u == nil || u.Position != 1 {
		t.Errorf("no heartbeat over %d position intervals: %+v", intervals, u)
	}
}
