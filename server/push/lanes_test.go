package push_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rushline/rushline/server/queue"
)

// TestDerivedPlacesWithPriorityLane: subscribers in both lanes are pushed the
// exact place queue.Place gives, derived from their own lane's admissions
// and leaves, while ticks split each batch between the lanes.
func TestDerivedPlacesWithPriorityLane(t *testing.T) {
	t.Parallel()
	addr := MustRedis(t)
	a := MustAdmin(t, addr)
	ctx := context.Background()
	ev := queue.Event{ID: "lanes", Name: "lanes", Seats: 100, Capacity: 1 << 20, AdmitBatch: 10, AdmitIntervalMS: 50,
		ActiveTTLS: 60, Policy: queue.PolicyBatch, Paused: true, PriorityShare: 0.3, CreatedAt: a.clk.Now()}
	if err := a.eng.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	// 90 normal and 30 priority arrivals, interleaved.
	var ens []queue.Entry
	for i := range 90 {
		ens = append(ens, a.MustJoin(t, ev.ID, fmt.Sprintf("u%d", i)))
		if i%3 == 0 {
			en, _, err := a.eng.JoinWith(ctx, ev.ID, fmt.Sprintf("VIRTUAL:p%d", i), queue.JoinOptions{Priority: true})
			if err != nil || en.Lane != queue.LanePriority {
				t.Fatalf("priority join: %+v %v", en, err)
			}
			ens = append(ens, en)
		}
	}
	k := MustHub(t, addr, exactOpts(1)...)
	var ws []*watcher
	for _, en := range ens {
		s, u := k.MustSubscribe(t, ev.ID, en)
		if exact := a.MustStatus(t, ev.ID, en); u.Position != exact.Position || u.Lane != exact.Lane {
			t.Fatalf("%s subscribed at %d (%q), exact %d (%q)", en.UserID, u.Position, u.Lane, exact.Position, exact.Lane)
		}
		ws = append(ws, newWatcher(en, s, u))
	}
	byUser := map[string]queue.Entry{}
	for _, en := range ens {
		byUser[en.UserID] = en
	}
	rounds := []struct {
		name    string
		leave   []string
		promote bool
	}{
		// One tick: 3 priority and 7 normal move on.
		{name: "one tick", promote: true},
		// Leaves in both lanes move only their own lane up.
		{name: "leaves in both lanes", leave: []string{"VIRTUAL:p30", "u40", "u41", "VIRTUAL:p87"}},
		// Leaves and a tick together.
		{name: "leave and promote", leave: []string{"VIRTUAL:p9", "u12"}, promote: true},
	}
	// Ticks until the priority lane (28 left after 6 served) drains: its last
	// tick fills up from the normal lane.
	for i := range 8 {
		rounds = append(rounds, struct {
			name    string
			leave   []string
			promote bool
		}{name: fmt.Sprintf("tick %d", i+3), promote: true})
	}
	for _, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			for _, u := range r.leave {
				a.MustLeave(t, ev.ID, byUser[u])
			}
			if r.promote {
				a.MustPromote(t, ev, 10)
			}
			k.spy.WaitPushed(t, ev.ID, a.MustLastID(t, ev.ID), 1)
			checkWatchers(t, a, ev.ID, ws)
		})
	}
	st, err := a.eng.Stats(ctx, ev)
	if err != nil || st.Waiting != 120-6-100 {
		t.Fatalf("stats %+v %v, want %d waiting", st, err, 120-6-100)
	}
	for _, w := range ws {
		if w.en.Lane == queue.LanePriority && a.MustStatus(t, ev.ID, w.en).Status == queue.StatusWaiting {
			t.Fatalf("%s still waits in the priority lane", w.en.UserID)
		}
	}
}
