package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

func TestJoin(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ctx := context.Background()
	now := clk.Now()
	later, earlier := now.Add(time.Hour), now.Add(-time.Minute)
	cases := []struct {
		name     string
		mutate   func(*queue.Event)
		before   int // users joined first
		want     queue.Status
		wantPos  int64
		wantCode queue.Code
	}{
		// An empty event with room admits at once.
		{name: "room admits at once", want: queue.StatusActive},
		// With capacity full the next user waits at position 1.
		{name: "full waits", before: 2, want: queue.StatusWaiting, wantPos: 1},
		// Someone waiting means nobody jumps in, even when a slot frees.
		{name: "behind a waiter", before: 3, want: queue.StatusWaiting, wantPos: 2},
		// A paused event queues every join.
		{name: "paused queues", mutate: func(e *queue.Event) { e.Paused = true }, want: queue.StatusWaiting, wantPos: 1},
		// The batch policy promotes only on ticks.
		{name: "batch policy queues", mutate: func(e *queue.Event) { e.Policy = queue.PolicyBatch }, want: queue.StatusWaiting, wantPos: 1},
		// Adaptive never admits on join: the downstream may be down.
		{name: "adaptive policy queues", mutate: func(e *queue.Event) { e.Policy, e.MaxTPS = queue.PolicyAdaptive, 10 }, want: queue.StatusWaiting, wantPos: 1},
		// Before opens_at nobody may join.
		{name: "not open", mutate: func(e *queue.Event) { e.OpensAt = &later }, wantCode: queue.CodeEventNotOpen},
		// After closes_at nobody may join.
		{name: "closed", mutate: func(e *queue.Event) { e.ClosesAt = &earlier }, wantCode: queue.CodeEventClosed},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("join-%d", i)
			MustEvent(t, eng, id, tc.mutate)
			for j := range tc.before {
				MustJoin(t, eng, id, fmt.Sprintf("u_before%d", j))
			}
			en, created, err := eng.Join(ctx, id, "u_me")
			if tc.wantCode != "" {
				MustCode(t, err, tc.wantCode, "")
				return
			}
			if err != nil || !created {
				t.Fatalf("join: created=%v err=%v", created, err)
			}
			if en.Status != tc.want || en.Position != tc.wantPos {
				t.Fatalf("got %s at %d, want %s at %d", en.Status, en.Position, tc.want, tc.wantPos)
			}
			if tc.want == queue.StatusActive && !en.ExpiresAt.Equal(now.Add(60*time.Second)) {
				t.Fatalf("expires_at = %v", en.ExpiresAt)
			}
			again, created, err := eng.Join(ctx, id, "u_me")
			if err != nil || created || again.Token != en.Token {
				t.Fatalf("second join: created=%v token same=%v err=%v", created, again.Token == en.Token, err)
			}
		})
	}
	t.Run("unknown event", func(t *testing.T) {
		_, _, err := eng.Join(ctx, "nope", "u_me")
		MustCode(t, err, queue.CodeEventNotFound, "")
	})
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	owner := queue.Actor{UserID: "u_a"}
	cases := []struct {
		name string
		run  func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string)
	}{
		// A user whose order completed may join again and gets a new token at the back.
		{"join after DONE", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			if _, err := eng.Order(ctx, ev, tok, "A-1", owner); err != nil {
				t.Fatal(err)
			}
			if st := MustStatus(t, eng, ev.ID, tok).Status; st != queue.StatusDone {
				t.Fatalf("status %s", st)
			}
			again := MustJoin(t, eng, ev.ID, "u_a")
			if again.Token == tok || again.Status != queue.StatusActive {
				t.Fatalf("rejoin: %+v", again)
			}
		}},
		// An expired window lets the user join again; the old token says EXPIRED.
		{"join after EXPIRED", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			clk.Advance(61 * time.Second)
			if st := MustStatus(t, eng, ev.ID, tok).Status; st != queue.StatusExpired {
				t.Fatalf("status %s", st)
			}
			again := MustJoin(t, eng, ev.ID, "u_a")
			if again.Token == tok {
				t.Fatal("same token after expiry")
			}
			if st := MustStatus(t, eng, ev.ID, tok).Status; st != queue.StatusExpired {
				t.Fatalf("old token status %s", st)
			}
		}},
		// Leaving while ACTIVE frees the slot and allows a new join.
		{"leave while ACTIVE then join", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			if _, err := eng.Leave(ctx, ev.ID, tok, owner); err != nil {
				t.Fatal(err)
			}
			if st := MustStatus(t, eng, ev.ID, tok).Status; st != queue.StatusLeft {
				t.Fatalf("status %s", st)
			}
			if _, err := eng.Leave(ctx, ev.ID, tok, owner); err != nil {
				t.Fatalf("second leave: %v", err)
			}
			st, _ := eng.Stats(ctx, ev)
			if st.Active != 0 {
				t.Fatalf("active = %d after leave", st.Active)
			}
			if again := MustJoin(t, eng, ev.ID, "u_a"); again.Token == tok || again.Status != queue.StatusActive {
				t.Fatalf("rejoin: %+v", again)
			}
		}},
		// An order on an expired token is refused with its status.
		{"order on expired token", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			clk.Advance(2 * time.Minute)
			_, err := eng.Order(ctx, ev, tok, "A-1", owner)
			MustCode(t, err, queue.CodeNotActive, queue.StatusExpired)
		}},
		// Another user's order on the token is refused and sells nothing.
		{"order by the wrong user", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			_, err := eng.Order(ctx, ev, tok, "A-1", queue.Actor{UserID: "u_b"})
			MustCode(t, err, queue.CodeTokenOwnerMismatch, "")
			if st, _ := eng.Stats(ctx, ev); st.Sold != 0 {
				t.Fatalf("sold %d", st.Sold)
			}
		}},
		// The simulator key never acts for an ACTUAL user's token.
		{"simulator on ACTUAL token", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			_, err := eng.Leave(ctx, ev.ID, tok, queue.Actor{Simulator: true})
			MustCode(t, err, queue.CodeTokenOwnerMismatch, "")
		}},
		// A seat outside the map is not found.
		{"unknown seat", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			_, err := eng.Order(ctx, ev, tok, "Z-99", owner)
			MustCode(t, err, queue.CodeSeatNotFound, "")
		}},
		// A taken seat is refused; the token stays ACTIVE.
		{"seat taken", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			b := MustJoin(t, eng, ev.ID, "u_b")
			if _, err := eng.Order(ctx, ev, b.Token, "A-2", queue.Actor{UserID: "u_b"}); err != nil {
				t.Fatal(err)
			}
			_, err := eng.Order(ctx, ev, tok, "A-2", owner)
			MustCode(t, err, queue.CodeSeatTaken, "")
			if st := MustStatus(t, eng, ev.ID, tok).Status; st != queue.StatusActive {
				t.Fatalf("status %s", st)
			}
		}},
		// Verify answers ACTIVE to the owner, TOKEN_OWNER_MISMATCH to others, NOT_ACTIVE once used.
		{"verify", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			if en, err := eng.Verify(ctx, ev.ID, tok, owner); err != nil || en.Status != queue.StatusActive {
				t.Fatalf("verify: %+v %v", en, err)
			}
			_, err := eng.Verify(ctx, ev.ID, tok, queue.Actor{UserID: "u_b"})
			MustCode(t, err, queue.CodeTokenOwnerMismatch, "")
			if _, err := eng.Order(ctx, ev, tok, "A-3", owner); err != nil {
				t.Fatal(err)
			}
			_, err = eng.Verify(ctx, ev.ID, tok, owner)
			MustCode(t, err, queue.CodeNotActive, queue.StatusDone)
		}},
		// A token of another event, a forged one and garbage are all unknown.
		{"foreign and forged tokens", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			other := MustEvent(t, eng, ev.ID+"-other", nil)
			for _, bad := range []string{tok[:len(tok)-2] + "AA", "garbage", "", strings.Repeat("x.", 300)} {
				_, err := eng.Status(ctx, ev.ID, bad)
				MustCode(t, err, queue.CodeTokenNotFound, "")
			}
			_, err := eng.Status(ctx, other.ID, tok)
			MustCode(t, err, queue.CodeTokenNotFound, "")
		}},
		// Seats are shown only to an ACTIVE token, with taken ones marked.
		{"seat map", func(t *testing.T, eng *queue.Engine, clk *clock, ev queue.Event, tok string) {
			fresh := queue.NewSeatMaps(eng, 0)
			seats, err := mapList(fresh.Get(ctx, ev, tok))
			if err != nil || len(seats) != ev.Seats || seats[0].ID != "A-1" || seats[0].Taken {
				t.Fatalf("seats: %d %+v %v", len(seats), seats[:1], err)
			}
			if _, err := eng.Order(ctx, ev, tok, "A-1", owner); err != nil {
				t.Fatal(err)
			}
			_, err = fresh.Get(ctx, ev, tok)
			MustCode(t, err, queue.CodeNotActive, queue.StatusDone)
			b := MustJoin(t, eng, ev.ID, "u_b")
			seats, _ = mapList(fresh.Get(ctx, ev, b.Token))
			if !seats[0].Taken || seats[1].Taken {
				t.Fatalf("taken flags: %+v", seats[:2])
			}
		}},
	}
	eng, clk, _ := MustEngine(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := MustEvent(t, eng, fmt.Sprintf("life-%d", i), nil)
			en := MustJoin(t, eng, ev.ID, "u_a")
			if en.Status != queue.StatusActive {
				t.Fatalf("first join %s", en.Status)
			}
			tc.run(t, eng, clk, ev, en.Token)
		})
	}
}

func TestSoldOut(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "tiny", func(e *queue.Event) { e.Seats = 1 })
	a, b := MustJoin(t, eng, ev.ID, "u_a"), MustJoin(t, eng, ev.ID, "u_b")
	if _, err := eng.Order(ctx, ev, a.Token, "A-1", queue.Actor{UserID: "u_a"}); err != nil {
		t.Fatal(err)
	}
	_, err := eng.Order(ctx, ev, b.Token, "A-1", queue.Actor{UserID: "u_b"})
	MustCode(t, err, queue.CodeSoldOut, "")
}

func TestTick(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	cases := []struct {
		name   string
		mutate func(*queue.Event)
		wait   int
		want   int // promoted by one tick
	}{
		// Capacity 2, both taken by the first joins: nobody is promoted.
		{name: "capacity full", wait: 5, want: 0},
		// Capacity 10 with 2 active and batch 3: a batch of 3.
		{name: "capacity limited by batch", mutate: func(e *queue.Event) { e.Capacity, e.AdmitBatch = 10, 3 }, wait: 5, want: 3},
		// Capacity 4 with 2 active: room for 2.
		{name: "capacity limited by room", mutate: func(e *queue.Event) { e.Capacity = 4 }, wait: 5, want: 2},
		// The batch policy ignores capacity.
		{name: "batch ignores capacity", mutate: func(e *queue.Event) { e.Policy, e.AdmitBatch = queue.PolicyBatch, 4 }, wait: 5, want: 4},
		// A paused event promotes nobody.
		{name: "paused", mutate: func(e *queue.Event) { e.Capacity = 10; e.Paused = true }, wait: 5, want: 0},
		// Adaptive with no orders yet runs at full batch, capped by capacity.
		{name: "adaptive idle downstream", mutate: func(e *queue.Event) { e.Policy, e.MaxTPS, e.Capacity, e.AdmitBatch = queue.PolicyAdaptive, 10, 100, 3 }, wait: 5, want: 3},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Capacity 2: the first two joins are admitted, the rest wait.
			ev := MustEvent(t, eng, fmt.Sprintf("tick-%d", i), nil)
			for j := range 2 + tc.wait {
				MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%d", j))
			}
			// The case's settings apply live, at the next tick.
			if tc.mutate != nil {
				tc.mutate(&ev)
				if err := eng.PutEvent(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}
			res := MustTick(t, eng, ev.ID)
			if res.Paused != ev.Paused || res.Promoted != tc.want {
				t.Fatalf("tick: %+v, want %d promoted", res, tc.want)
			}
			if res.Waiting != int64(tc.wait-tc.want) && !ev.Paused {
				t.Fatalf("waiting %d after tick", res.Waiting)
			}
			// A second tick within the interval does nothing.
			if res2 := MustTick(t, eng, ev.ID); res2.Ran {
				t.Fatalf("tick within interval ran: %+v", res2)
			}
			clk.Advance(100 * time.Millisecond)
		})
	}
}

func TestAdaptiveLoad(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		report float64 // -1: none
		age    time.Duration
		want   int
	}{
		// Half of max_tps: batch halfway between 11 and 1.
		{name: "half load", report: 5, want: 6},
		// At or over max_tps: one per tick.
		{name: "saturated", report: 20, want: 1},
		// Zero load: the full batch.
		{name: "idle", report: 0, want: 11},
		// A figure older than 10 s means the downstream is down: nothing.
		{name: "stale figure pauses", report: 0, age: 11 * time.Second, want: 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := MustEvent(t, eng, fmt.Sprintf("adaptive-%d", i), func(e *queue.Event) {
				e.Policy, e.MaxTPS, e.AdmitBatch, e.Capacity, e.Paused = queue.PolicyAdaptive, 10, 11, 1000, true
			})
			for j := range 20 {
				MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%d", j))
			}
			ev.Paused = false
			if err := eng.PutEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			if err := eng.ReportLoad(ctx, ev.ID, tc.report); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tc.age)
			res := MustTick(t, eng, ev.ID)
			if res.Promoted != tc.want || res.Room != tc.want {
				t.Fatalf("promoted %d room %d, want %d", res.Promoted, res.Room, tc.want)
			}
		})
	}
}

func TestLeaseAndExpire(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "lease", func(e *queue.Event) { e.ActiveTTLS = 1 })
	a := MustJoin(t, eng, ev.ID, "u_a")
	MustJoin(t, eng, ev.ID, "u_b")
	w := MustJoin(t, eng, ev.ID, "u_c")
	if w.Status != queue.StatusWaiting {
		t.Fatalf("third join %s", w.Status)
	}
	sw, err := eng.Expire(ctx, ev.ID, "r1", time.Minute)
	if err != nil || !sw.Leader || sw.Expired != 0 {
		t.Fatalf("first sweep: %+v %v", sw, err)
	}
	// The two windows end a second from now, on the fake clock.
	if sw.Ends != time.Second {
		t.Fatalf("first sweep: the earliest window ends in %v, want 1s", sw.Ends)
	}
	// Another replica neither sweeps nor ticks while r1 holds the lease.
	if sw, _ := eng.Expire(ctx, ev.ID, "r2", time.Minute); sw.Leader {
		t.Fatal("r2 took a held lease")
	}
	if res, _ := eng.Tick(ctx, ev.ID, "r2", time.Minute); res.Ran || res.Leader {
		t.Fatalf("r2 ticked: %+v", res)
	}
	clk.Advance(1500 * time.Millisecond)
	sw, _ = eng.Expire(ctx, ev.ID, "r1", time.Minute)
	if sw.Expired != 2 || sw.Ends != queue.NoWindow {
		t.Fatalf("expired %d, the earliest window left ends in %v; want 2 and none left", sw.Expired, sw.Ends)
	}
	if st := MustStatus(t, eng, ev.ID, a.Token).Status; st != queue.StatusExpired {
		t.Fatalf("a is %s", st)
	}
	if res := MustTick(t, eng, ev.ID); res.Promoted != 1 {
		t.Fatalf("promoted %d after expiry", res.Promoted)
	}
	if st := MustStatus(t, eng, ev.ID, w.Token); st.Status != queue.StatusActive {
		t.Fatalf("c is %s", st.Status)
	}
	kinds := map[queue.RecordKind]int{}
	for _, r := range MustRecords(t, eng, ev.ID) {
		kinds[r.Kind]++
	}
	if kinds[queue.RecordJoined] != 3 || kinds[queue.RecordAdmitted] != 3 || kinds[queue.RecordExpired] != 2 {
		t.Fatalf("records %v", kinds)
	}
}

func TestETAFollowsMeasuredRate(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ev := MustEvent(t, eng, "eta", func(e *queue.Event) {
		e.Policy, e.AdmitBatch, e.AdmitIntervalMS = queue.PolicyBatch, 10, 1000
	})
	for j := range 100 {
		MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%03d", j))
	}
	last := MustStatus(t, eng, ev.ID, MustJoin(t, eng, ev.ID, "u_last").Token)
	// Before any tick: 10 per second configured, 101st in line -> 11 s.
	if last.Position != 101 || last.ETA != 11*time.Second {
		t.Fatalf("before ticks: pos %d eta %v", last.Position, last.ETA)
	}
	for range 3 {
		MustTick(t, eng, ev.ID)
		clk.Advance(time.Second)
	}
	after := MustStatus(t, eng, ev.ID, last.Token)
	if after.Position != 71 || after.AdmittedTotal != 30 || after.ETA != 8*time.Second {
		t.Fatalf("after ticks: pos %d admitted %d eta %v", after.Position, after.AdmittedTotal, after.ETA)
	}
}

func TestSeatIDs(t *testing.T) {
	cases := []struct {
		name  string
		seats int
		id    string
		ok    bool
		index int
	}{
		{"first", 500, "A-1", true, 0},                    // first seat
		{"second row", 500, "B-1", true, 32},              // rows of 32 for 500 seats
		{"last", 500, "P-20", true, 499},                  // 16th row holds the last 20
		{"past the end", 500, "P-21", false, 0},           // beyond the map
		{"column zero", 500, "A-0", false, 0},             // columns count from 1
		{"leading zero", 500, "A-01", false, 0},           // one spelling per seat
		{"lower case", 500, "a-1", false, 0},              // rows are upper case
		{"no dash", 500, "A1", false, 0},                  // malformed
		{"double letters", 1_000_000, "AA-1", true, 1300}, // 27th row of 50
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i, ok := queue.SeatIndex(tc.seats, tc.id)
			if ok != tc.ok || (ok && i != tc.index) {
				t.Fatalf("SeatIndex(%d,%q) = %d,%v", tc.seats, tc.id, i, ok)
			}
			if ok && queue.SeatID(tc.seats, i) != tc.id {
				t.Fatalf("SeatID round trip: %s", queue.SeatID(tc.seats, i))
			}
		})
	}
	for _, n := range []int{1, 7, 500, 12345} {
		for i := range n {
			if j, ok := queue.SeatIndex(n, queue.SeatID(n, i)); !ok || j != i {
				t.Fatalf("seats=%d: %d round-trips to %d,%v", n, i, j, ok)
			}
		}
	}
}
