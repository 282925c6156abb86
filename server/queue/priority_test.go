package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

func TestPlace(t *testing.T) {
	cases := []struct {
		name             string
		lane             queue.Lane
		rank             int64
		normal, priority int64
		batch            int64
		share            float64
		want             int64
	}{
		// Batch 10, share 0.3: 3 priority + 7 normal per tick. Rank 7 is served
		// in tick 1 behind its 3 priority peers.
		{name: "normal first tick", rank: 7, normal: 500, priority: 100, batch: 10, share: 0.3, want: 10},
		// Rank 8 goes in tick 2: 6 priority ahead.
		{name: "normal second tick", rank: 8, normal: 500, priority: 100, batch: 10, share: 0.3, want: 14},
		// Only 4 priority waiting: all of them are ahead of rank 8, no more.
		{name: "normal priority drained", rank: 8, normal: 500, priority: 4, batch: 10, share: 0.3, want: 12},
		// No priority waiting: the lane rank is the place.
		{name: "normal no priority", rank: 5, normal: 500, batch: 10, share: 0.3, want: 5},
		// The normal lane drains in tick 2 (9 = 7 + 2): tick 2 fills 8 priority first.
		{name: "normal lane draining", rank: 9, normal: 9, priority: 100, batch: 10, share: 0.3, want: 20},
		// Share 1: nothing of a tick is left for the normal lane, everyone priority is ahead.
		{name: "normal share one", rank: 5, normal: 500, priority: 40, batch: 10, share: 1, want: 45},
		// Share 0: ceil(0) = 0 priority per tick, nobody priority ahead while normal ones fill ticks.
		{name: "normal share zero", rank: 5, normal: 500, priority: 40, batch: 10, share: 0, want: 5},
		// Share 0, the normal lane's last tick has 8 free slots, priority first.
		{name: "normal share zero last tick", rank: 12, normal: 12, priority: 40, batch: 10, share: 0, want: 20},
		// Priority rank 3 in tick 1 (first within its tick): no normal ahead.
		{name: "priority first tick", lane: queue.LanePriority, rank: 3, normal: 500, priority: 100, batch: 10, share: 0.3, want: 3},
		// Priority rank 4 in tick 2: the 7 normal of tick 1 are ahead.
		{name: "priority second tick", lane: queue.LanePriority, rank: 4, normal: 500, priority: 100, batch: 10, share: 0.3, want: 11},
		// Only 2 normal waiting: tick 1 has room for 8 priority, served first.
		{name: "priority few normal", lane: queue.LanePriority, rank: 7, normal: 2, priority: 100, batch: 10, share: 0.3, want: 7},
		// 9 normal: tick 1 takes 3 priority + 7 normal; tick 2 8 priority first, then 2 normal.
		{name: "priority normal draining", lane: queue.LanePriority, rank: 11, normal: 9, priority: 100, batch: 10, share: 0.3, want: 18},
		// Rank 12 falls past tick 2's room: all 9 normal are ahead.
		{name: "priority after normal drained", lane: queue.LanePriority, rank: 12, normal: 9, priority: 100, batch: 10, share: 0.3, want: 21},
		// Share 1: no normal attempt is ever ahead.
		{name: "priority share one", lane: queue.LanePriority, rank: 12, normal: 9, priority: 100, batch: 10, share: 1, want: 12},
		// Share 0: priority only gets room the normal lane leaves, all normal ahead.
		{name: "priority share zero", lane: queue.LanePriority, rank: 2, normal: 30, priority: 100, batch: 10, share: 0, want: 32},
		// Batch 1, share 0.5: ceil(0.5) = 1, the one slot always goes to priority.
		{name: "normal batch one", rank: 1, normal: 10, priority: 3, batch: 1, share: 0.5, want: 4},
		// A share with no exact float form: ceil(100 × 0.07) is 7, not 8.
		{name: "share rounding", rank: 93, normal: 1000, priority: 1000, batch: 100, share: 0.07, want: 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := queue.Place(tc.lane, tc.rank, tc.normal, tc.priority, tc.batch, queue.SharePPM(tc.share))
			if got != tc.want {
				t.Fatalf("Place = %d, want %d", got, tc.want)
			}
		})
	}
}

// mustLaneEvent creates a batch-policy event with the given batch and share,
// paused so that joins only queue.
func mustLaneEvent(tb testing.TB, eng *queue.Engine, id string, batch int, share float64) queue.Event {
	tb.Helper()
	return MustEvent(tb, eng, id, func(e *queue.Event) {
		e.Policy, e.AdmitBatch, e.PriorityShare, e.Capacity, e.Seats = queue.PolicyBatch, batch, share, 1_000_000, 1000
	})
}

// MustJoinWith joins with options and fails the test on error.
func MustJoinWith(tb testing.TB, eng *queue.Engine, eventID, user string, o queue.JoinOptions) queue.Entry {
	tb.Helper()
	en, _, err := eng.JoinWith(context.Background(), eventID, user, o)
	if err != nil {
		tb.Fatalf("join %s as %s: %v", eventID, user, err)
	}
	return en
}

// TestPlaceLuaAgreesWithGo checks that every waiting place the scripts report
// is what queue.Place computes from the lane rank and the other lane's size.
func TestPlaceLuaAgreesWithGo(t *testing.T) {
	eng, _, _ := MustEngine(t)
	cases := []struct {
		name             string
		batch            int
		share            float64
		normal, priority int
	}{
		{name: "share 0.3 batch 10", batch: 10, share: 0.3, normal: 60, priority: 25},
		{name: "share 0.07 batch 100", batch: 100, share: 0.07, normal: 250, priority: 30},
		{name: "share 0.33 batch 7", batch: 7, share: 0.33, normal: 40, priority: 40},
		{name: "share 0", batch: 5, share: 0, normal: 12, priority: 9},
		{name: "share 1", batch: 5, share: 1, normal: 12, priority: 9},
		{name: "batch 1", batch: 1, share: 0.5, normal: 6, priority: 6},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := mustLaneEvent(t, eng, fmt.Sprintf("agree-%d", i), tc.batch, tc.share)
			var ens []queue.Entry
			// Interleaved arrivals, so lane ranks differ from arrival order.
			for j := range max(tc.normal, tc.priority) {
				if j < tc.normal {
					ens = append(ens, MustJoin(t, eng, ev.ID, fmt.Sprintf("u_n%d", j)))
				}
				if j < tc.priority {
					ens = append(ens, MustJoinWith(t, eng, ev.ID, fmt.Sprintf("VIRTUAL:p%d", j), queue.JoinOptions{Priority: true}))
				}
			}
			rank := map[queue.Lane]int64{}
			seen := map[int64]bool{}
			for _, en := range ens {
				st := MustStatus(t, eng, ev.ID, en.Token)
				rank[st.Lane]++
				want := queue.Place(st.Lane, rank[st.Lane], int64(tc.normal), int64(tc.priority), int64(tc.batch), queue.SharePPM(tc.share))
				if st.Status != queue.StatusWaiting || st.Position != want {
					t.Fatalf("%s (%q): %s at %d, want WAITING at %d", en.UserID, st.Lane, st.Status, st.Position, want)
				}
				if seen[st.Position] {
					t.Fatalf("two attempts at place %d", st.Position)
				}
				seen[st.Position] = true
			}
			if rank[queue.LanePriority] != int64(tc.priority) {
				t.Fatalf("%d in the priority lane, want %d", rank[queue.LanePriority], tc.priority)
			}
		})
	}
}

// drain ticks ev until nobody waits and returns the admitted records.
func drain(tb testing.TB, eng *queue.Engine, clk *clock, ev queue.Event) [][]queue.Record {
	tb.Helper()
	var ticks [][]queue.Record
	last := "0"
	for range 10_000 {
		res := MustTick(tb, eng, ev.ID)
		clk.Advance(time.Duration(ev.AdmitIntervalMS) * time.Millisecond)
		recs, err := eng.Records(context.Background(), ev.ID, last, 1<<20)
		if err != nil {
			tb.Fatal(err)
		}
		var adm []queue.Record
		for _, r := range recs {
			if r.Kind == queue.RecordAdmitted {
				adm = append(adm, r)
			}
			last = r.ID
		}
		if res.Ran {
			ticks = append(ticks, adm)
		}
		if res.Ran && res.Waiting == 0 {
			return ticks
		}
	}
	tb.Fatal("the line never drained")
	return nil
}

func TestPriorityShareAndFIFO(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ev := mustLaneEvent(t, eng, "share", 10, 0.3)
	// 100 priority and 1000 normal arrive interleaved.
	for j := range 1000 {
		MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%d", j))
		if j%10 == 0 {
			MustJoinWith(t, eng, ev.ID, fmt.Sprintf("VIRTUAL:p%d", j), queue.JoinOptions{Priority: true})
		}
	}
	ticks := drain(t, eng, clk, ev)
	lastSeq := map[queue.Lane]int64{}
	var no int64
	prioLeft := 100
	for i, tick := range ticks {
		n := map[queue.Lane]int{}
		for _, r := range tick {
			n[r.Lane]++
			// FIFO within each lane, one admission sequence over both.
			if r.Seq <= lastSeq[r.Lane] {
				t.Fatalf("tick %d: %q seq %d after %d", i, r.Lane, r.Seq, lastSeq[r.Lane])
			}
			lastSeq[r.Lane] = r.Seq
			if no++; r.AdmissionNo != no {
				t.Fatalf("admission no %d, want %d", r.AdmissionNo, no)
			}
			if (r.Lane == queue.LanePriority) != (r.UserID[0] == 'V') {
				t.Fatalf("%s admitted from lane %q", r.UserID, r.Lane)
			}
		}
		wantP := min(3, prioLeft)
		if len(tick) != 10 && i != len(ticks)-1 || n[queue.LanePriority] != wantP {
			t.Fatalf("tick %d: %d priority + %d normal, want %d priority of 10", i, n[queue.LanePriority], n[queue.LaneNormal], wantP)
		}
		prioLeft -= n[queue.LanePriority]
	}
	if no != 1100 {
		t.Fatalf("%d admitted, want 1100", no)
	}
}

// TestPositionsHonest: with the batch policy and nobody else joining, every
// place reported at join time is the admission number the attempt gets.
func TestPositionsHonest(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	cases := []struct {
		name  string
		batch int
		share float64
		// About one arrival in nth is a priority one.
		nth, total int
	}{
		{name: "batch 10 share 0.3", batch: 10, share: 0.3, nth: 4, total: 300},
		{name: "batch 7 share 0.5", batch: 7, share: 0.5, nth: 2, total: 200},
		{name: "batch 4 share 0.1", batch: 4, share: 0.1, nth: 3, total: 120},
		{name: "share 0", batch: 5, share: 0, nth: 3, total: 60},
		{name: "share 1", batch: 5, share: 1, nth: 3, total: 60},
	}
	// Random mixes too (fixed seed): lanes draining in every order.
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 25 {
		cases = append(cases, struct {
			name       string
			batch      int
			share      float64
			nth, total int
		}{name: fmt.Sprintf("random %d", i), batch: 1 + rng.IntN(12), share: float64(rng.IntN(11)) / 10,
			nth: 1 + rng.IntN(5), total: 10 + rng.IntN(50)})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := mustLaneEvent(t, eng, fmt.Sprintf("honest-%d", i), tc.batch, tc.share)
			var ens []queue.Entry
			// A random arrival mix per case: every nth-ish arrival is a priority one.
			mix := rand.New(rand.NewPCG(uint64(i), 1))
			for j := range tc.total {
				o := queue.JoinOptions{Priority: mix.IntN(tc.nth) == 0}
				ens = append(ens, MustJoinWith(t, eng, ev.ID, fmt.Sprintf("VIRTUAL:%d", j), o))
			}
			size := map[queue.Lane]int64{}
			for _, en := range ens {
				size[en.Lane]++
			}
			// Lua's places, checked against Go's on the way.
			places := make([]int64, len(ens))
			rank := map[queue.Lane]int64{}
			for j, en := range ens {
				places[j] = MustStatus(t, eng, ev.ID, en.Token).Position
				rank[en.Lane]++
				goPlace := queue.Place(en.Lane, rank[en.Lane], size[queue.LaneNormal], size[queue.LanePriority], int64(tc.batch), queue.SharePPM(tc.share))
				if goPlace != places[j] {
					t.Fatalf("%s: Lua place %d, Go place %d", en.UserID, places[j], goPlace)
				}
			}
			drain(t, eng, clk, ev)
			for j, en := range ens {
				st := MustStatus(t, eng, ev.ID, en.Token)
				if st.Status != queue.StatusActive || st.AdmissionNo != places[j] {
					t.Fatalf("%s: told place %d, admitted as %s no %d", en.UserID, places[j], st.Status, st.AdmissionNo)
				}
			}
		})
	}
}

func TestPriorityCodes(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	ev := mustLaneEvent(t, eng, "codes", 10, 0.5)
	grants := []queue.Grant{
		{Kind: queue.GrantCode, Value: "VIP-ONE"},
		{Kind: queue.GrantCode, Value: "VIP-TWO"},
		{Kind: queue.GrantUser, Value: "u_granted"},
	}
	if err := eng.PutGrants(ctx, ev.ID, grants); err != nil {
		t.Fatal(err)
	}
	MustJoin(t, eng, ev.ID, "u_first")

	// 50 users race to redeem one code: exactly one gets the priority lane.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, refused := 0, 0
	for j := range 50 {
		wg.Go(func() {
			en, _, err := eng.JoinWith(ctx, ev.ID, fmt.Sprintf("u_race%d", j), queue.JoinOptions{PriorityCode: "VIP-ONE"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && en.Lane == queue.LanePriority:
				won++
			case queue.ErrorCode(err) == queue.CodeForbidden:
				refused++
			default:
				t.Errorf("join: %+v %v", en, err)
			}
		})
	}
	wg.Wait()
	if won != 1 || refused != 49 {
		t.Fatalf("%d redeemed, %d refused; want 1 and 49", won, refused)
	}

	cases := []struct {
		name string
		user string
		o    queue.JoinOptions
		lane queue.Lane
		code queue.Code
	}{
		// An unknown code is refused, nothing queued.
		{name: "unknown code", user: "u_x", o: queue.JoinOptions{PriorityCode: "VIP-NOPE"}, code: queue.CodeForbidden},
		// A redeemed code is refused for anyone else.
		{name: "used code", user: "u_y", o: queue.JoinOptions{PriorityCode: "VIP-ONE"}, code: queue.CodeForbidden},
		// A granted user is in the priority lane without a code.
		{name: "granted user", user: "u_granted", lane: queue.LanePriority},
		// Everyone else is in the normal lane.
		{name: "plain user", user: "u_plain", lane: queue.LaneNormal},
		// A second code works once.
		{name: "second code", user: "u_z", o: queue.JoinOptions{PriorityCode: "VIP-TWO"}, lane: queue.LanePriority},
		// Joining again returns the attempt held, whatever code comes along.
		{name: "idempotent with code", user: "u_first", o: queue.JoinOptions{PriorityCode: "VIP-TWO"}, lane: queue.LaneNormal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			en, _, err := eng.JoinWith(ctx, ev.ID, tc.user, tc.o)
			if tc.code != "" {
				MustCode(t, err, tc.code, "")
				// Unknown and used codes answer alike: no enumeration.
				var qe *queue.Error
				if !errors.As(err, &qe) || qe.Message != queue.ErrPriorityCodeInvalid {
					t.Fatalf("join: %v, want the message %q", err, queue.ErrPriorityCodeInvalid)
				}
				return
			}
			if err != nil || en.Lane != tc.lane || en.Status != queue.StatusWaiting {
				t.Fatalf("join: %+v %v, want WAITING in lane %q", en, err, tc.lane)
			}
		})
	}
	list, err := eng.Grants(ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]string{"user:u_granted:", "code:VIP-ONE:u_race", "code:VIP-TWO:u_z"})
	got := make([]string, len(list))
	for i, g := range list {
		got[i] = fmt.Sprintf("%s:%s:%s", g.Kind, g.Value, g.RedeemedBy)
		if g.Value == "VIP-ONE" {
			got[i] = got[i][:len("code:VIP-ONE:u_race")]
		}
	}
	if fmt.Sprint(got) != want {
		t.Fatalf("grants %v, want %v", got, want)
	}

	// A revoke stops new priority joins but moves nobody already in line.
	if ok, err := eng.RevokeGrant(ctx, ev.ID, queue.GrantUser, "u_granted"); err != nil || !ok {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if st := MustJoin(t, eng, ev.ID, "u_granted"); st.Lane != queue.LanePriority {
		t.Fatalf("revoke moved a waiting user: %+v", st)
	}
	if ok, _ := eng.RevokeGrant(ctx, ev.ID, queue.GrantUser, "u_never"); ok {
		t.Fatal("revoked a grant that never existed")
	}
	// A revoke names its kind: revoking user "VIP-TWO" leaves code "VIP-TWO".
	if ok, err := eng.RevokeGrant(ctx, ev.ID, queue.GrantUser, "VIP-TWO"); err != nil || ok {
		t.Fatalf("revoking user VIP-TWO: %v %v, want nothing revoked", ok, err)
	}
	if ok, err := eng.RevokeGrant(ctx, ev.ID, queue.GrantCode, "VIP-TWO"); err != nil || !ok {
		t.Fatalf("revoking code VIP-TWO: %v %v, want it revoked", ok, err)
	}
	_, err = eng.RevokeGrant(ctx, ev.ID, "team", "u_granted")
	MustCode(t, err, queue.CodeBadRequest, "")
}

func TestPriorityRecordsCarryLane(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ev := mustLaneEvent(t, eng, "lane-records", 10, 0.5)
	p := MustJoinWith(t, eng, ev.ID, "VIRTUAL:p", queue.JoinOptions{Priority: true})
	n := MustJoin(t, eng, ev.ID, "u_n")
	q := MustJoinWith(t, eng, ev.ID, "VIRTUAL:q", queue.JoinOptions{Priority: true})
	if _, err := eng.Leave(context.Background(), ev.ID, q.Token, queue.Actor{Simulator: true}); err != nil {
		t.Fatal(err)
	}
	MustTick(t, eng, ev.ID)
	clk.Advance(time.Duration(ev.ActiveTTLS+1) * time.Second)
	if _, err := eng.Expire(context.Background(), ev.ID, "r1", time.Minute); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range MustRecords(t, eng, ev.ID) {
		got = append(got, fmt.Sprintf("%s/%d/%q", r.Kind, r.Seq, r.Lane))
	}
	want := fmt.Sprint([]string{
		fmt.Sprintf("joined/%d/\"priority\"", p.Seq), fmt.Sprintf("joined/%d/\"\"", n.Seq), fmt.Sprintf("joined/%d/\"priority\"", q.Seq),
		fmt.Sprintf("left/%d/\"priority\"", q.Seq),
		fmt.Sprintf("admitted/%d/\"priority\"", p.Seq), fmt.Sprintf("admitted/%d/\"\"", n.Seq),
		fmt.Sprintf("expired/%d/\"priority\"", p.Seq), fmt.Sprintf("expired/%d/\"\"", n.Seq),
	})
	if fmt.Sprint(got) != want {
		t.Fatalf("records\n%v\nwant\n%v", got, want)
	}
}

func TestDeviceBinding(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	ev := mustLaneEvent(t, eng, "devices", 10, 0.5)
	// Many nicknames on one device: one place.
	first := MustJoinWith(t, eng, ev.ID, "u_nick0", queue.JoinOptions{Device: "dev-a"})
	for j := 1; j < 5; j++ {
		_, _, err := eng.JoinWith(ctx, ev.ID, fmt.Sprintf("u_nick%d", j), queue.JoinOptions{Device: "dev-a"})
		MustCode(t, err, queue.CodeDeviceBusy, "")
	}
	// The holder itself joins again idempotently.
	if en := MustJoinWith(t, eng, ev.ID, "u_nick0", queue.JoinOptions{Device: "dev-a"}); en.Token != first.Token {
		t.Fatalf("holder got a new token: %+v", en)
	}
	// Another device: another place.
	MustJoinWith(t, eng, ev.ID, "u_other", queue.JoinOptions{Device: "dev-b"})
	// Binding off (no device): no check.
	MustJoin(t, eng, ev.ID, "u_nick1")
	// Once the holder leaves, the device is free for another user.
	if _, err := eng.Leave(ctx, ev.ID, first.Token, queue.Actor{UserID: "u_nick0"}); err != nil {
		t.Fatal(err)
	}
	MustJoinWith(t, eng, ev.ID, "u_nick2", queue.JoinOptions{Device: "dev-a"})
	st, err := eng.Stats(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if st.Waiting != 3 {
		t.Fatalf("%d waiting, want 3", st.Waiting)
	}
}
