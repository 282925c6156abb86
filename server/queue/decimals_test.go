package queue_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// TestDecimalsAcrossTens: the scripts write numbers as strings they build a
// ten at a time (lib.lua's decimals); across 9→10 and 99→100 the crowd's
// names and seqs, the admission numbers, the record fields and the orders
// read back exactly as the numbers.
func TestDecimalsAcrossTens(t *testing.T) {
	eng, clk, rdb := MustEngine(t)
	ctx := context.Background()
	const first, n = 95, 130
	ev := MustEvent(t, eng, "ev", func(ev *queue.Event) {
		ev.Policy, ev.AdmitBatch, ev.Capacity, ev.Seats = queue.PolicyBatch, n, 1000, 200
	})
	MustCrowdLease(t, eng, "ev", "r1")
	if _, held, err := eng.RaiseCrowdCursor(ctx, "ev", "r1", first); err != nil || !held {
		t.Fatalf("raise cursor: %v, %v", held, err)
	}
	MustJoinCrowd(t, eng, "ev", "r1", first, n-10)
	MustJoinCrowd(t, eng, "ev", "r1", first+n-10, 10)
	user := func(i int) string { return crowdPrefix + strconv.Itoa(first+i-1) } // the i-th to join, seq i
	for i, z := range crowdLine(t, rdb, "ev") {
		if z.Member != user(i+1) || z.Score != float64(i+1) {
			t.Fatalf("place %d = %v@%v, want %s@%d", i+1, z.Member, z.Score, user(i+1), i+1)
		}
	}
	if res := MustTick(t, eng, "ev"); res.Promoted != n {
		t.Fatalf("tick promoted %d, want %d", res.Promoted, n)
	}
	at := strconv.FormatInt(clk.Now().UnixMilli(), 10)
	as, err := rdb.HGetAll(ctx, queue.Keys("ev")[4]).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if want := fmt.Sprintf("%d|%s|%d", i, at, i); as[user(i)] != want {
			t.Fatalf("active %s = %q, want %q", user(i), as[user(i)], want)
		}
	}
	// Two buy; the rest run out of time.
	for _, i := range []int{10, 100} {
		if err := OrderVirtual(ctx, eng, ev, user(i), int64(i), queue.SeatID(ev.Seats, i)); err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
	}
	clk.Advance(time.Duration(ev.ActiveTTLS+1) * time.Second)
	if sw, err := eng.Expire(ctx, "ev", "r1", time.Minute); err != nil || sw.Expired != n-2 {
		t.Fatalf("expire = %+v, %v; want %d expired", sw, err, n-2)
	}
	var adm, done, expired []string
	for _, r := range MustRecords(t, eng, "ev") {
		s := fmt.Sprintf("%s/%d", r.UserID, r.Seq)
		switch r.Kind {
		case queue.RecordAdmitted:
			if r.AdmissionNo != r.Seq {
				t.Errorf("%s admitted as number %d, want %d", r.UserID, r.AdmissionNo, r.Seq)
			}
			adm = append(adm, s)
		case queue.RecordDone:
			done = append(done, s+"/"+r.Seat)
		case queue.RecordExpired:
			expired = append(expired, s)
		}
	}
	var wantAdm, wantExp []string
	for i := 1; i <= n; i++ {
		wantAdm = append(wantAdm, fmt.Sprintf("%s/%d", user(i), i))
		if i != 10 && i != 100 {
			wantExp = append(wantExp, fmt.Sprintf("%s/%d", user(i), i))
		}
	}
	// One expiry ends them all: ties go in member order.
	slices.Sort(expired)
	slices.Sort(wantExp)
	wantDone := []string{fmt.Sprintf("%s/10/%s", user(10), queue.SeatID(ev.Seats, 10)),
		fmt.Sprintf("%s/100/%s", user(100), queue.SeatID(ev.Seats, 100))}
	for _, c := range []struct {
		kind      string
		got, want []string
	}{{"admitted", adm, wantAdm}, {"done", done, wantDone}, {"expired", expired, wantExp}} {
		if strings.Join(c.got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s records = %v\nwant %v", c.kind, c.got, c.want)
		}
	}
	owners, err := rdb.HGetAll(ctx, queue.Keys("ev")[7]).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{10, 100} {
		if v := owners[queue.SeatID(ev.Seats, i)]; !strings.HasPrefix(v, fmt.Sprintf("%s|%d|o_", user(i), i)) {
			t.Errorf("seat %s sold as %q, want %s|%d|<order>", queue.SeatID(ev.Seats, i), v, user(i), i)
		}
	}
}
