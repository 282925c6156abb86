package push_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
)

// checkWatchers compares what every watcher was last told with the exact
// state of its attempt. Waiting attempts must hold their exact place and no
// final; admitted (or since expired) ones exactly one admitted record; left
// ones exactly one left record.
func checkWatchers(t *testing.T, a *admin, eventID string, ws []*watcher) {
	t.Helper()
	for _, w := range ws {
		w.drain()
		st := a.MustStatus(t, eventID, w.en)
		switch st.Status {
		case queue.StatusWaiting:
			if w.final != nil {
				t.Errorf("%s (seq %d) is waiting but got final %s record %s", w.en.UserID, w.en.Seq, w.final.Kind, w.final.ID)
			}
			if w.pos != st.Position {
				t.Errorf("%s (seq %d): pushed position %d, exact %d", w.en.UserID, w.en.Seq, w.pos, st.Position)
			}
		case queue.StatusActive, queue.StatusExpired:
			if w.final == nil || w.final.Kind != queue.RecordAdmitted || w.finals != 1 {
				t.Errorf("%s (seq %d) is %s: final %+v after %d finals, want exactly one admitted record",
					w.en.UserID, w.en.Seq, st.Status, w.final, w.finals)
				continue
			}
			if w.final.Seq != w.en.Seq || w.final.UserID != w.en.UserID {
				t.Errorf("%s (seq %d) got the admitted record of %s (seq %d)", w.en.UserID, w.en.Seq, w.final.UserID, w.final.Seq)
			}
		case queue.StatusLeft:
			if w.final == nil || w.final.Kind != queue.RecordLeft || w.finals != 1 || w.final.Seq != w.en.Seq {
				t.Errorf("%s (seq %d) left: final %+v after %d finals, want exactly one left record",
					w.en.UserID, w.en.Seq, w.final, w.finals)
			}
		default:
			t.Errorf("%s (seq %d) is %s, which this test never makes", w.en.UserID, w.en.Seq, st.Status)
		}
	}
}

// testTick is the hub tick of most tests.
const testTick = 20 * time.Millisecond

// exactOpts make a hub that pushes a changed place at every tick (spread 1)
// or spreads subscribers over spread ticks, and never re-ranks after
// connect, so every place it pushes is derived.
func exactOpts(spread int) []push.Option {
	return []push.Option{push.WithTick(testTick), push.WithPositionEvery(time.Duration(spread) * testTick),
		push.WithCorrections(push.DefaultCorrectBatch, time.Hour)}
}

func TestDerivedPlacesStayExact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		spread int
	}{
		{
			// Every subscriber may get a place at every tick.
			name: "every tick", spread: 1,
		},
		{
			// Subscribers take turns over four ticks (WithPositionEvery).
			name: "spread over 4 ticks", spread: 4,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testDerivedPlaces(t, c.spread)
		})
	}
}

func testDerivedPlaces(t *testing.T, spread int) {
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "derive")
	// Users u0..u299 hold seqs 1..300; every third one (u0, u3, …, u297) is subscribed.
	ens := a.MustJoinN(t, ev.ID, "u", 300, 1)
	k := MustHub(t, addr, exactOpts(spread)...)
	var ws []*watcher
	for i := 0; i < len(ens); i += 3 {
		s, u := k.MustSubscribe(t, ev.ID, ens[i])
		if u.Position != int64(i+1) {
			t.Fatalf("%s subscribed at position %d, want %d", ens[i].UserID, u.Position, i+1)
		}
		ws = append(ws, newWatcher(ens[i], s, u))
	}
	k.spy.WaitPushed(t, ev.ID, a.MustLastID(t, ev.ID), spread)
	checkWatchers(t, a, ev.ID, ws)

	rejoined := 0
	rounds := []struct {
		name    string
		leave   []int // user indices that give up their place (or active slot)
		rejoin  []int // user indices that join again at the back, subscribed
		promote int
		expire  bool // every active window runs out
		head    bool // the leavers are the head of the line
	}{
		{
			// Unsubscribed users ahead of, between and behind subscribers leave.
			name:  "unsubscribed leave",
			leave: []int{1, 2, 4, 100, 200, 299},
		},
		{
			// Subscribers leave: the ones behind them move up, they get a left record.
			name:  "subscribed leave",
			leave: []int{0, 9, 150, 297},
		},
		{
			// A batch crosses the first few remaining subscribers.
			name:    "promote a batch",
			promote: 7,
		},
		{
			// Leaves on both sides of subscribers and a promotion in one round.
			name:    "leave and promote together",
			leave:   []int{20, 21, 22, 24, 99, 101, 240, 243},
			promote: 13,
		},
		{
			// Admitted users give up their active slots: nobody waiting moves.
			name:  "admitted leave the active set",
			leave: []int{5, 7},
		},
		{
			// Left users join again at the back and subscribe; nobody ahead moves.
			name:   "left users rejoin",
			rejoin: []int{1, 0, 150},
		},
		{
			// Active windows expire: nobody waiting moves, admitted keep their admitted record.
			name:   "active windows expire",
			expire: true,
		},
		{
			// A large batch crosses many subscribers at once.
			name:    "promote through subscribers",
			promote: 120,
		},
		{
			// The head of the line (u153, subscribed, and the two behind it)
			// leaves, then the line drains but for a few.
			name:    "head leaves, then most are promoted",
			leave:   []int{153, 154, 155},
			head:    true,
			promote: 120,
		},
		{
			// Everyone still waiting, rejoined users included, is admitted.
			name:    "promote the rest",
			promote: -1,
		},
	}
	for _, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			for j, i := range r.leave {
				if st := a.MustStatus(t, ev.ID, ens[i]); r.head && (st.Status != queue.StatusWaiting || st.Position != int64(j+1)) {
					t.Fatalf("%s is %s at %d, want waiting at %d", ens[i].UserID, st.Status, st.Position, j+1)
				}
			}
			for _, i := range r.leave {
				a.MustLeave(t, ev.ID, ens[i])
			}
			for _, i := range r.rejoin {
				en := a.MustJoin(t, ev.ID, ens[i].UserID)
				s, u := k.MustSubscribe(t, ev.ID, en)
				ws = append(ws, newWatcher(en, s, u))
				rejoined++
			}
			n := r.promote
			if n < 0 {
				st, err := a.eng.Stats(context.Background(), ev)
				if err != nil {
					t.Fatal(err)
				}
				n = int(st.Waiting)
			}
			a.MustPromote(t, ev, n)
			if r.expire {
				a.clk.Advance(time.Duration(ev.ActiveTTLS+1) * time.Second)
				if res, err := a.eng.Expire(context.Background(), ev.ID, "r1", time.Minute); err != nil || res.Expired == 0 {
					t.Fatalf("expire: %+v, %v", res, err)
				}
			}
			k.spy.WaitPushed(t, ev.ID, a.MustLastID(t, ev.ID), spread)
			checkWatchers(t, a, ev.ID, ws)
		})
	}
	if rejoined != 3 {
		t.Fatalf("rejoined %d users, want 3", rejoined)
	}
}

func TestAdmittedExactlyOnceInOrder(t *testing.T) {
	t.Parallel()
	const (
		users = 1000
		batch = 100
	)
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "fifo")
	ens := a.MustJoinN(t, ev.ID, "u", users, 1)
	k := MustHub(t, addr, exactOpts(1)...)
	ws := make([]*watcher, users)
	for i, en := range ens {
		s, u := k.MustSubscribe(t, ev.ID, en)
		ws[i] = newWatcher(en, s, u)
	}
	lastPos := make([]int64, users)
	for admitted := 0; admitted < users; admitted += batch {
		a.MustPromote(t, ev, batch)
		k.spy.WaitPushed(t, ev.ID, a.MustLastID(t, ev.ID), 1)
		for i, w := range ws {
			w.drain()
			if i < admitted+batch {
				if w.final == nil || w.finals != 1 || w.final.Kind != queue.RecordAdmitted {
					t.Fatalf("%s (seq %d) after %d admitted: final %+v after %d finals, want exactly one admitted",
						w.en.UserID, w.en.Seq, admitted+batch, w.final, w.finals)
				}
				continue
			}
			// Users hold seqs 1..users and nobody leaves: place = seq - admitted.
			want := w.en.Seq - int64(admitted+batch)
			if w.final != nil || w.pos != want {
				t.Fatalf("%s (seq %d) after %d admitted: position %d, final %+v; want position %d",
					w.en.UserID, w.en.Seq, admitted+batch, w.pos, w.final, want)
			}
			if lastPos[i] != 0 && w.pos > lastPos[i] {
				t.Fatalf("%s moved back from %d to %d", w.en.UserID, lastPos[i], w.pos)
			}
			lastPos[i] = w.pos
		}
	}
	got := make([]queue.Record, users)
	for i, w := range ws {
		if w.final.Seq != w.en.Seq || w.final.UserID != w.en.UserID {
			t.Fatalf("%s (seq %d) got the record of %s (seq %d)", w.en.UserID, w.en.Seq, w.final.UserID, w.final.Seq)
		}
		got[i] = *w.final
	}
	slices.SortFunc(got, func(x, y queue.Record) int { return int(x.Seq - y.Seq) })
	for i := 1; i < len(got); i++ {
		if queue.CompareRecords(got[i-1], got[i]) >= 0 {
			t.Fatalf("FIFO inversion: seq %d admitted by record %s, seq %d by earlier record %s",
				got[i-1].Seq, got[i-1].Key(), got[i].Seq, got[i].Key())
		}
	}
}

func TestSubscribeAfterPromotionRechecks(t *testing.T) {
	t.Parallel()
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "late")
	ens := a.MustJoinN(t, ev.ID, "u", 4, 1)
	k := MustHub(t, addr, push.WithTick(testTick))
	// u0 is admitted, u2 leaves, u3 leaves and joins again: its old seq is stale.
	a.MustPromote(t, ev, 1)
	a.MustLeave(t, ev.ID, ens[2])
	a.MustLeave(t, ev.ID, ens[3])
	again := a.MustJoin(t, ev.ID, ens[3].UserID)
	cases := []struct {
		name    string
		en      queue.Entry
		recheck bool
		pos     int64
	}{
		{
			// Promoted before connecting: no place to derive, look it up.
			name: "admitted before subscribe", en: ens[0], recheck: true,
		},
		{
			// Left before connecting.
			name: "left before subscribe", en: ens[2], recheck: true,
		},
		{
			// A token from an earlier attempt of a user who waits again.
			name: "stale seq of a rejoined user", en: ens[3], recheck: true,
		},
		{
			// Still waiting: exact place, no recheck (u0 admitted, u2 left).
			name: "waiting", en: ens[1], pos: 1,
		},
		{
			// The rejoined attempt waits behind u1.
			name: "rejoined attempt", en: again, pos: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, u := k.MustSubscribe(t, ev.ID, c.en)
			defer k.hub.Unsubscribe(s)
			if u.Position != c.pos || u.Waiting != 2 {
				t.Errorf("first update %+v, want position %d of 2 waiting", u, c.pos)
			}
			// Flagged already when Subscribe returns, with its notification pending.
			notified := false
			select {
			case <-s.Notify():
				notified = true
			default:
			}
			_, final, recheck := s.Take()
			if c.recheck && !notified {
				t.Error("no pending notification for the recheck")
			}
			if recheck != c.recheck || final != nil {
				t.Errorf("Take: recheck %v, final %+v; want recheck %v and no final", recheck, final, c.recheck)
			}
		})
	}
}

// raceSubscribe subscribes u10, then u19 while five admissions land and
// are read by the tail between u19's connect-time rank and the hub seeing
// that rank. It returns both watchers.
func raceSubscribe(t *testing.T, opts ...push.Option) (*admin, *hubKit, queue.Event, []*watcher) {
	t.Helper()
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "race")
	ens := a.MustJoinN(t, ev.ID, "u", 20, 1)
	k := MustHub(t, addr, opts...)
	// The first subscriber starts the feed, so the tail is running.
	first, u0 := k.MustSubscribe(t, ev.ID, ens[10])

	ranked, release := make(chan struct{}), make(chan struct{})
	k.spy.afterRank = func(_ string, at []queue.Attempt, _ queue.Progress) {
		if len(at) == 1 && at[0].UserID == ens[19].UserID {
			close(ranked)
			<-release
		}
	}
	type result struct {
		s   *push.Sub
		u   push.Update
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, u, err := k.hub.Subscribe(subscribeCtx(), ev.ID, ens[19].Seq, ens[19].UserID)
		done <- result{s, u, err}
	}()
	<-ranked
	a.MustPromote(t, ev, 5)
	k.spy.WaitTailed(t, ev.ID, a.MustLastID(t, ev.ID))
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.u.Position != 20 {
		t.Fatalf("u19 subscribed at %d, want 20 (ranked before the admissions)", r.u.Position)
	}
	return a, k, ev, []*watcher{newWatcher(ens[10], first, u0), newWatcher(ens[19], r.s, r.u)}
}

// TestSubscribeRacingTheTail: a place ranked on connect while admissions
// land must still be exact. The rank is exact at its AsOf, but the tail may
// already have read past AsOf when it arrives; the feed brings it forward
// through its history of admissions and leaves.
func TestSubscribeRacingTheTail(t *testing.T) {
	t.Parallel()
	a, k, ev, ws := raceSubscribe(t, exactOpts(1)...)
	k.spy.WaitTicks(t, ev.ID, 3)
	k.spy.WaitPushed(t, ev.ID, a.MustLastID(t, ev.ID), 1)
	checkWatchers(t, a, ev.ID, ws)
}

// TestCorrectionsRepairDrift: whatever made a derived place wrong (here the
// race above), the periodic exact re-rank puts it right.
func TestCorrectionsRepairDrift(t *testing.T) {
	t.Parallel()
	a, k, ev, ws := raceSubscribe(t, push.WithTick(testTick), push.WithPositionEvery(testTick),
		push.WithCorrections(push.DefaultCorrectBatch, 100*time.Millisecond))
	// A re-rank is queued at most 100 ms after the last, lands a tick
	// later and is pushed at the tick after that.
	k.spy.WaitTicks(t, ev.ID, 4)
	deadline := time.Now().Add(syncTimeout)
	for {
		k.spy.WaitPushed(t, ev.ID, a.MustLastID(t, ev.ID), 1)
		ok := true
		for _, w := range ws {
			w.drain()
			if st := a.MustStatus(t, ev.ID, w.en); w.pos != st.Position {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			checkWatchers(t, a, ev.ID, ws)
			t.Fatal("places still wrong")
		}
	}
	checkWatchers(t, a, ev.ID, ws)
}
