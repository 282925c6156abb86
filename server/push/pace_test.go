package push_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/push"
)

// TestBusyStreamIsReadInBatches: while records keep coming, an event's feed
// reads its stream at most about once a pace, not once per record, and its
// subscriber still gets the record that ends its wait.
func TestBusyStreamIsReadInBatches(t *testing.T) {
	t.Parallel()
	const pace = 50 * time.Millisecond
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "paced")
	first := a.MustJoin(t, ev.ID, "first")
	k := MustHub(t, addr, push.WithPace(pace))
	s, _ := k.MustSubscribe(t, ev.ID, first)

	_, before := k.counter.Snapshot()
	start := time.Now()
	joins := 0
	// One record per join, written one after another: hundreds per pace
	// window on any machine, each of which an unpaced feed would read alone.
	for joins < 200 || time.Since(start) < 10*pace {
		a.MustJoin(t, ev.ID, fmt.Sprintf("u%d", joins))
		joins++
	}
	elapsed := time.Since(start)
	_, after := k.counter.Snapshot()
	reads := after["xread"] - before["xread"]
	// A read in flight at either end of the window, and one more that the
	// pace lets go at once after a read that found nothing.
	if bound := int64(elapsed/pace) + 3; reads > bound {
		t.Errorf("%d stream reads for %d records in %v, bound %d (one per %v)", reads, joins, elapsed, bound, pace)
	}
	t.Logf("%d stream reads for %d records in %v", reads, joins, elapsed)

	a.MustPromote(t, ev, 1)
	waitFor(t, "the first in line told it is admitted", func() bool {
		_, final, _ := s.Take()
		return final != nil && final.Seq == first.Seq
	})
}

// TestNudgeSkipsThePace: after an admission, a nudge has a busy stream's
// feed read at once, so the admitted subscriber hears of it without waiting
// out the pace (an hour here).
func TestNudgeSkipsThePace(t *testing.T) {
	t.Parallel()
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ev := a.MustEvent(t, "nudged")
	first := a.MustJoin(t, ev.ID, "first")
	k := MustHub(t, addr, push.WithPace(time.Hour))
	s, _ := k.MustSubscribe(t, ev.ID, first)
	k.hub.Nudge("no-feed-here") // nothing to wake: a no-op

	// A record read makes the stream busy: the feed now waits out its pace.
	a.MustJoin(t, ev.ID, "second")
	k.spy.WaitRead(t, ev.ID, a.MustLastID(t, ev.ID))
	a.MustPromote(t, ev, 1)
	k.hub.Nudge(ev.ID)
	waitFor(t, "the first in line told it is admitted", func() bool {
		_, final, _ := s.Take()
		return final != nil && final.Seq == first.Seq
	})
}
