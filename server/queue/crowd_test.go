package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
)

const crowdPrefix = "VIRTUAL:d-test-"

// MustCrowdLease has replica take the crowd lease of eventID.
func MustCrowdLease(tb testing.TB, eng *queue.Engine, eventID, replica string) {
	tb.Helper()
	ok, err := eng.HoldCrowdLease(context.Background(), eventID, replica, time.Minute)
	if err != nil || !ok {
		tb.Fatalf("crowd lease for %s: %v, %v", replica, ok, err)
	}
}

// MustJoinCrowd joins n from cursor and fails on anything but a join.
func MustJoinCrowd(tb testing.TB, eng *queue.Engine, eventID, replica string, cursor int64, n int) queue.CrowdJoin {
	tb.Helper()
	res, err := eng.JoinCrowd(context.Background(), eventID, replica, crowdPrefix, cursor, n)
	if err != nil || res.Moved || res.Follower {
		tb.Fatalf("join crowd %d+%d: %+v, %v", cursor, n, res, err)
	}
	return res
}

// crowdLine returns the normal lane, head first.
func crowdLine(tb testing.TB, rdb *redis.Client, eventID string) []redis.Z {
	tb.Helper()
	z, err := rdb.ZRangeWithScores(context.Background(), queue.Keys(eventID)[2], 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return z
}

// TestJoinCrowd: the crowd joins in index order with consecutive arrival
// numbers, behind and before people as the calls fall, and counts as joined.
func TestJoinCrowd(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ctx := context.Background()
	MustEvent(t, eng, "ev", func(ev *queue.Event) { ev.Capacity = 1 })
	MustCrowdLease(t, eng, "ev", "r1")
	MustJoin(t, eng, "ev", "alice") // admitted at once: the line was empty
	MustJoin(t, eng, "ev", "bob")
	first := MustJoinCrowd(t, eng, "ev", "r1", 0, 3)
	MustJoin(t, eng, "ev", "carol")
	second := MustJoinCrowd(t, eng, "ev", "r1", 3, 2)
	if first.Cursor != 3 || first.FirstSeq != 3 || second.Cursor != 5 || second.FirstSeq != 7 {
		t.Fatalf("joins = %+v then %+v", first, second)
	}
	var line []string
	for i, z := range crowdLine(t, rdb, "ev") {
		line = append(line, fmt.Sprintf("%s@%v", z.Member, z.Score))
		if i > 0 && int(z.Score) != i+2 {
			t.Errorf("place %d has seq %v: arrival numbers have a gap", i+1, z.Score)
		}
	}
	want := []string{"bob@2", crowdPrefix + "0@3", crowdPrefix + "1@4", crowdPrefix + "2@5", "carol@6",
		crowdPrefix + "3@7", crowdPrefix + "4@8"}
	if strings.Join(line, " ") != strings.Join(want, " ") {
		t.Errorf("line = %v\nwant   %v", line, want)
	}
	counts, err := eng.JoinCounts(ctx, "ev")
	if err != nil || counts.Joined != 8 || counts.Seq != 8 {
		t.Errorf("JoinCounts = %+v, %v; want 8 joined, seq 8", counts, err)
	}
	st, err := eng.CrowdState(ctx, "ev")
	if err != nil || st.Cursor != 5 {
		t.Errorf("CrowdState = %+v, %v; want cursor 5", st, err)
	}
	// A later person's place counts the crowd ahead.
	if en := MustJoin(t, eng, "ev", "dave"); en.Position != 8 {
		t.Errorf("dave's position = %d, want 8", en.Position)
	}
}

// TestJoinCrowdRefuses: a stale cursor, a replica without the lease, an
// event not open yet or unknown, a chunk past the seqs SQL has reserved, and
// a chunk out of bounds change nothing.
func TestJoinCrowdRefuses(t *testing.T) {
	eng, clk, rdb := MustEngine(t)
	ctx := context.Background()
	opens := clk.Now().Add(time.Minute)
	MustEvent(t, eng, "ev", nil)
	MustEvent(t, eng, "later", func(ev *queue.Event) { ev.OpensAt = &opens })
	MustCrowdLease(t, eng, "ev", "r1")
	MustCrowdLease(t, eng, "later", "r1")
	MustJoinCrowd(t, eng, "ev", "r1", 0, 4)
	// SQL has reserved seqs up to 6 for "ev": a chunk past them is refused.
	if err := eng.Reserve(ctx, "ev", queue.Incarnation{SeqCap: 6, AdmitCap: 100}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		event  string
		who    string
		cursor int64
		n      int
		check  func(t *testing.T, res queue.CrowdJoin, err error)
	}{
		{"stale cursor", "ev", "r1", 2, 4, func(t *testing.T, res queue.CrowdJoin, err error) {
			if err != nil || !res.Moved || res.Cursor != 4 {
				t.Errorf("got %+v, %v; want Moved at 4", res, err)
			}
		}},
		{"ahead of the cursor", "ev", "r1", 9, 1, func(t *testing.T, res queue.CrowdJoin, err error) {
			if err != nil || !res.Moved || res.Cursor != 4 {
				t.Errorf("got %+v, %v; want Moved at 4", res, err)
			}
		}},
		{"not the lease holder", "ev", "r2", 4, 1, func(t *testing.T, res queue.CrowdJoin, err error) {
			if err != nil || !res.Follower {
				t.Errorf("got %+v, %v; want Follower", res, err)
			}
		}},
		{"not open", "later", "r1", 0, 1, func(t *testing.T, _ queue.CrowdJoin, err error) {
			MustCode(t, err, queue.CodeEventNotOpen, "")
		}},
		{"unknown event", "nope", "r1", 0, 1, func(t *testing.T, _ queue.CrowdJoin, err error) {
			MustCode(t, err, queue.CodeEventNotFound, "")
		}},
		{"past the reserved seqs", "ev", "r1", 4, 3, func(t *testing.T, _ queue.CrowdJoin, err error) {
			MustCode(t, err, queue.CodeUnavailable, "")
		}},
		{"empty chunk", "ev", "r1", 4, 0, func(t *testing.T, _ queue.CrowdJoin, err error) {
			if err == nil {
				t.Error("a chunk of 0 was accepted")
			}
		}},
		{"chunk too big", "ev", "r1", 4, queue.MaxCrowdChunk + 1, func(t *testing.T, _ queue.CrowdJoin, err error) {
			if err == nil {
				t.Error("a chunk over MaxCrowdChunk was accepted")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := eng.JoinCrowd(ctx, tc.event, tc.who, crowdPrefix, tc.cursor, tc.n)
			tc.check(t, res, err)
			if n := len(crowdLine(t, rdb, "ev")); n != 4 {
				t.Errorf("%d waiting, want the 4 of the first join", n)
			}
		})
	}
}

// TestCrowdResumeNeverJoinsTwice: a player killed mid-crowd is replaced by
// another that reads the cursor; the first, back with its stale cursor,
// joins nobody. A user whose attempt is DONE is never joined again, and the
// crowd ends exactly complete, in index order.
func TestCrowdResumeNeverJoinsTwice(t *testing.T) {
	eng, clk, rdb := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "ev", func(ev *queue.Event) { ev.Capacity, ev.AdmitBatch = 5, 5 })
	MustCrowdLease(t, eng, "ev", "r1")
	MustJoinCrowd(t, eng, "ev", "r1", 0, 3)
	// Crowd user 0 is admitted and buys: DONE.
	if res := MustTick(t, eng, "ev"); res.Promoted != 3 {
		t.Fatalf("tick promoted %d, want 3", res.Promoted)
	}
	if err := OrderVirtual(ctx, eng, ev, crowdPrefix+"0", 1, "A-1"); err != nil {
		t.Fatal(err)
	}
	// r1 dies holding cursor 3; its lease runs out and r2 takes over.
	if err := rdb.Del(ctx, queue.CrowdKeys("ev")[1]).Err(); err != nil {
		t.Fatal(err)
	}
	MustCrowdLease(t, eng, "ev", "r2")
	st, err := eng.CrowdState(ctx, "ev")
	if err != nil || st.Cursor != 3 {
		t.Fatalf("resumed cursor = %+v, %v", st, err)
	}
	MustJoinCrowd(t, eng, "ev", "r2", st.Cursor, 4)
	// r1 comes back with its stale view: refused, twice over.
	if res, err := eng.JoinCrowd(ctx, "ev", "r1", crowdPrefix, 3, 4); err != nil || !res.Follower {
		t.Errorf("stale player: %+v, %v; want Follower", res, err)
	}
	MustCrowdLease(t, eng, "ev", "r2")
	if res, err := eng.JoinCrowd(ctx, "ev", "r2", crowdPrefix, 0, 3); err != nil || !res.Moved {
		t.Errorf("rejoin from 0: %+v, %v; want Moved", res, err)
	}
	MustJoinCrowd(t, eng, "ev", "r2", 7, 3)
	clk.Advance(time.Second)

	line := crowdLine(t, rdb, "ev")
	if len(line) != 7 {
		t.Fatalf("%d waiting, want 7 (10 joined, 3 admitted)", len(line))
	}
	for i, z := range line {
		if want := crowdPrefix + strconv.Itoa(i+3); z.Member != want || int(z.Score) != i+4 {
			t.Errorf("place %d: %v@%v, want %s@%d", i+1, z.Member, z.Score, want, i+4)
		}
	}
	if st, _ := eng.CrowdState(ctx, "ev"); st.Cursor != 10 {
		t.Errorf("cursor = %d, want 10", st.Cursor)
	}
}

// TestCrowdJoinHammer: many players racing one crowd, each joining from the
// cursor it last saw, join every index exactly once, in order (-race).
func TestCrowdJoinHammer(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ctx := context.Background()
	MustEvent(t, eng, "ev", nil)
	MustCrowdLease(t, eng, "ev", "r1")
	const crowd, players, chunk = 5000, 8, 37
	var wg sync.WaitGroup
	var mu sync.Mutex
	joins := 0
	for range players {
		wg.Go(func() {
			var cursor int64
			for cursor < crowd {
				res, err := eng.JoinCrowd(ctx, "ev", "r1", crowdPrefix, cursor, int(min(chunk, crowd-cursor)))
				if err != nil {
					t.Error(err)
					return
				}
				if !res.Moved {
					mu.Lock()
					joins++
					mu.Unlock()
				}
				cursor = res.Cursor
			}
		})
	}
	wg.Wait()
	line := crowdLine(t, rdb, "ev")
	if len(line) != crowd {
		t.Fatalf("%d waiting, want %d", len(line), crowd)
	}
	for i, z := range line {
		if want := crowdPrefix + strconv.Itoa(i); z.Member != want || int(z.Score) != i+1 {
			t.Fatalf("place %d: %v@%v, want %s@%d", i+1, z.Member, z.Score, want, i+1)
		}
	}
	if want := (crowd + chunk - 1) / chunk; joins != want {
		t.Errorf("%d calls joined users, want %d", joins, want)
	}
}

// TestCrowdLease: one holder at a time; renewal keeps it; a release hands
// it over at once.
func TestCrowdLease(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ctx := context.Background()
	hold := func(replica string) bool {
		t.Helper()
		ok, err := eng.HoldCrowdLease(ctx, "ev", replica, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !hold("r1") || hold("r2") || !hold("r1") {
		t.Fatal("r1 should hold the lease, renew it, and r2 not take it")
	}
	if ttl := rdb.PTTL(ctx, queue.CrowdKeys("ev")[1]).Val(); ttl <= 0 || ttl > 2*time.Second {
		t.Errorf("lease ttl %v, want (0, 2s]", ttl)
	}
	if err := eng.ReleaseCrowdLease(ctx, "ev", "r2"); err != nil {
		t.Fatal(err)
	}
	if hold("r2") {
		t.Error("r2 released r1's lease")
	}
	if err := eng.ReleaseCrowdLease(ctx, "ev", "r1"); err != nil {
		t.Fatal(err)
	}
	if !hold("r2") {
		t.Error("r2 could not take the released lease")
	}
}

// TestOrderVirtual: the crowd buys through the order script, with its
// answers; a person's attempt is not the crowd's to buy with.
func TestOrderVirtual(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "ev", func(ev *queue.Event) { ev.Seats, ev.Capacity, ev.AdmitBatch = 2, 10, 10 })
	MustCrowdLease(t, eng, "ev", "r1")
	alice := MustJoin(t, eng, "ev", "alice")
	MustJoinCrowd(t, eng, "ev", "r1", 0, 4) // seqs 2..5
	MustTick(t, eng, "ev")
	adm, err := eng.ActiveWithPrefix(ctx, "ev", crowdPrefix)
	if err != nil || len(adm) != 4 {
		t.Fatalf("ActiveWithPrefix = %+v, %v; want the 4 crowd users", adm, err)
	}
	for _, a := range adm {
		if k, _ := strconv.Atoi(strings.TrimPrefix(a.UserID, crowdPrefix)); a.Seq != int64(k)+2 || a.At.IsZero() {
			t.Errorf("admission %+v: want seq %d and a time", a, k+2)
		}
	}
	if err := OrderVirtual(ctx, eng, ev, crowdPrefix+"0", 2, "A-1"); err != nil {
		t.Fatal(err)
	}
	err = OrderVirtual(ctx, eng, ev, crowdPrefix+"1", 3, "A-1")
	MustCode(t, err, queue.CodeSeatTaken, "")
	err = OrderVirtual(ctx, eng, ev, crowdPrefix+"0", 2, "A-2")
	MustCode(t, err, queue.CodeNotActive, queue.StatusDone)
	err = OrderVirtual(ctx, eng, ev, "alice", alice.Seq, "A-2")
	MustCode(t, err, queue.CodeTokenOwnerMismatch, "")
	err = OrderVirtual(ctx, eng, ev, crowdPrefix+"1", 3, "Z-9")
	MustCode(t, err, queue.CodeSeatNotFound, "")
	if err := OrderVirtual(ctx, eng, ev, crowdPrefix+"1", 3, "A-2"); err != nil {
		t.Fatal(err)
	}
	err = OrderVirtual(ctx, eng, ev, crowdPrefix+"2", 4, "A-1")
	MustCode(t, err, queue.CodeSoldOut, "")
	seats, err := eng.SeatsTaken(ctx, "ev")
	if err != nil || len(seats) != 2 {
		t.Errorf("SeatsTaken = %v, %v", seats, err)
	}
	if adm, _ := eng.ActiveWithPrefix(ctx, "ev", crowdPrefix); len(adm) != 2 {
		t.Errorf("%d crowd users active after two orders, want 2", len(adm))
	}
}

// TestPeopleAndCheckpoint: nicknames and false starts, the player's
// checkpoint, and a dropped event takes its crowd keys along.
func TestPeopleAndCheckpoint(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ctx := context.Background()
	MustEvent(t, eng, "ev", nil)
	for _, fs := range []bool{true, true, false} {
		if err := eng.NotePerson(ctx, "ev", "u1", "alice", fs); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := eng.People(ctx, "ev", "u1", "u2")
	if err != nil || ps[0] != (queue.Person{Nickname: "alice", FalseStarts: 2}) || ps[1] != (queue.Person{}) {
		t.Errorf("People = %+v, %v", ps, err)
	}
	// Many people are read in pages, in order.
	many := []string{"u1"}
	for i := range 1200 {
		u := "m" + strconv.Itoa(i)
		if err := eng.NotePerson(ctx, "ev", u, "nick-"+u, false); err != nil {
			t.Fatal(err)
		}
		many = append(many, u)
	}
	ps, err = eng.People(ctx, "ev", many...)
	if err != nil || len(ps) != len(many) || ps[0].FalseStarts != 2 {
		t.Fatalf("People of %d = %d, %v", len(many), len(ps), err)
	}
	for i, u := range many[1:] {
		if ps[i+1].Nickname != "nick-"+u {
			t.Fatalf("person %d (%s) = %+v", i+1, u, ps[i+1])
		}
	}
	c := queue.CrowdCheckpoint{StreamID: "17-3", Admitted: 40, LeftWaiting: 2, CrowdSold: 31}
	if err := eng.SaveCrowdCheckpoint(ctx, "ev", c); err != nil {
		t.Fatal(err)
	}
	MustCrowdLease(t, eng, "ev", "r1")
	MustJoinCrowd(t, eng, "ev", "r1", 0, 2)
	if st, err := eng.CrowdState(ctx, "ev"); err != nil || st != (queue.CrowdState{Cursor: 2, CrowdCheckpoint: c}) {
		t.Errorf("CrowdState = %+v, %v", st, err)
	}
	if err := eng.DropEvent(ctx, "ev"); err != nil {
		t.Fatal(err)
	}
	keys := append(queue.Keys("ev"), queue.CrowdKeys("ev")...)
	if n := rdb.Exists(ctx, keys...).Val(); n != 0 {
		t.Errorf("%d keys of the dropped event remain", n)
	}
}

// TestRaiseCrowdCursor: the lease holder puts a lost cursor back, never
// lowers it, and nobody else may move it; the crowd join then goes on past
// it.
func TestRaiseCrowdCursor(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	MustEvent(t, eng, "ev", func(ev *queue.Event) { ev.Capacity = 1 })
	MustCrowdLease(t, eng, "ev", "r1")
	MustJoinCrowd(t, eng, "ev", "r1", 0, 3)
	tests := []struct {
		name    string
		replica string
		to      int64
		want    int64
		held    bool
	}{
		{"raised", "r1", 40, 40, true},
		{"never lowered", "r1", 5, 40, true},
		{"not the lease holder", "r2", 90, -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at, held, err := eng.RaiseCrowdCursor(ctx, "ev", tc.replica, tc.to)
			if err != nil || at != tc.want || held != tc.held {
				t.Errorf("RaiseCrowdCursor(%s, %d) = %d, %v, %v; want %d, %v", tc.replica, tc.to, at, held, err, tc.want, tc.held)
			}
		})
	}
	if res, err := eng.JoinCrowd(ctx, "ev", "r1", crowdPrefix, 3, 1); err != nil || !res.Moved || res.Cursor != 40 {
		t.Errorf("join at the old cursor = %+v, %v; want MOVED to 40", res, err)
	}
	if res := MustJoinCrowd(t, eng, "ev", "r1", 40, 2); res.Moved || res.Cursor != 42 {
		t.Errorf("join at the raised cursor = %+v, want 42", res)
	}
}

// TestOrderVirtualsInOneRun: a crowd's purchases go as one script call and
// answer each order in order, as one call each would: a seat an earlier
// order of the run took is SEAT_TAKEN, a bought attempt NOT_ACTIVE, and the
// orders refused before Redis cost no call.
func TestOrderVirtualsInOneRun(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "ev", func(ev *queue.Event) { ev.Seats, ev.Capacity, ev.AdmitBatch = 10, 10, 10 })
	MustCrowdLease(t, eng, "ev", "r1")
	MustJoinCrowd(t, eng, "ev", "r1", 0, 6) // seqs 1..6
	MustTick(t, eng, "ev")
	v := func(k int) string { return crowdPrefix + strconv.Itoa(k) }
	seat := func(i int) string { return queue.SeatID(ev.Seats, i) }
	if err := OrderVirtual(ctx, eng, ev, v(5), 6, seat(9)); err != nil {
		t.Fatal(err)
	}
	before := MustCommandCalls(t, rdb, "evalsha")
	errs := eng.OrderVirtuals(ctx, ev, []queue.VirtualOrder{
		{v(0), 1, seat(1)}, {v(1), 2, seat(1)}, {v(2), 3, seat(2)}, {"alice", 1, seat(3)}, {v(3), 4, "Z-99"},
		{v(5), 6, seat(4)}, {v(3), 4, seat(3)}, {v(4), 5, seat(4)},
	})
	if n := MustCommandCalls(t, rdb, "evalsha") - before; n != 1 {
		t.Errorf("%d EVALSHAs for one run of orders, want 1", n)
	}
	want := []struct {
		code   queue.Code
		status queue.Status
	}{{}, {queue.CodeSeatTaken, ""}, {}, {queue.CodeTokenOwnerMismatch, ""}, {queue.CodeSeatNotFound, ""},
		{queue.CodeNotActive, queue.StatusDone}, {}, {}}
	for i, w := range want {
		if w.code == "" {
			if errs[i] != nil {
				t.Errorf("order %d: %v, want sold", i, errs[i])
			}
			continue
		}
		MustCode(t, errs[i], w.code, w.status)
	}
	owners, err := eng.SeatOwners(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	wantOwners := map[string]string{seat(1): v(0), seat(2): v(2), seat(3): v(3), seat(4): v(4), seat(9): v(5)}
	if fmt.Sprint(owners) != fmt.Sprint(wantOwners) {
		t.Errorf("seat owners %v, want %v", owners, wantOwners)
	}
}

// TestOrderVirtualsNeverSellTwice: runs of crowd purchases racing each
// other for the same seats sell each seat once and each attempt one seat.
func TestOrderVirtualsNeverSellTwice(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	const users, seats, runs = 200, 50, 20
	ev := MustEvent(t, eng, "ev", func(ev *queue.Event) { ev.Seats, ev.Capacity, ev.AdmitBatch = seats, users, users })
	MustCrowdLease(t, eng, "ev", "r1")
	MustJoinCrowd(t, eng, "ev", "r1", 0, users) // seqs 1..users
	MustTick(t, eng, "ev")
	var wg sync.WaitGroup
	var mu sync.Mutex
	sold := map[string]int{}
	for r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Run r: users r, r+runs, … each try seat (k·7) mod seats.
			var orders []queue.VirtualOrder
			for k := r; k < users; k += runs {
				orders = append(orders, queue.VirtualOrder{UserID: crowdPrefix + strconv.Itoa(k), Seq: int64(k) + 1,
					Seat: queue.SeatID(seats, k*7%seats)})
			}
			for i, err := range eng.OrderVirtuals(ctx, ev, orders) {
				switch queue.ErrorCode(err) {
				case "":
					mu.Lock()
					sold[orders[i].Seat]++
					mu.Unlock()
				case queue.CodeSeatTaken, queue.CodeSoldOut:
				default:
					t.Errorf("order %+v: %v", orders[i], err)
				}
			}
		}()
	}
	wg.Wait()
	owners, err := eng.SeatOwners(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	if len(sold) != len(owners) {
		t.Errorf("%d seats sold by the answers, %d in Redis", len(sold), len(owners))
	}
	for seat, n := range sold {
		if n != 1 || owners[seat] == "" {
			t.Errorf("seat %s sold %d times (owner %q)", seat, n, owners[seat])
		}
	}
}
