package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/server/queue"
)

func TestSectionIndex(t *testing.T) {
	cases := []struct {
		name  string
		seats int
		id    string
		ok    bool
		index int
	}{
		{"first", 1_000_000, "A", true, 0},                      // row A opens section 0
		{"second", 1_000_000, "GS", true, 1},                    // row 200 (GS) opens section 1
		{"inside a section", 1_000_000, "B", false, 0},          // row B is no section's first
		{"last", 1_000_000, "ACGO", true, 99},                   // row 19,800 opens the 100th
		{"past the end", 1_000_000, "ACOG", false, 0},           // row 20,000 is past the map
		{"one list", queue.MaxSeatList, "A", false, 0},          // a map of 10,000 has no sections
		{"one seat over", queue.MaxSeatList + 1, "GS", true, 1}, // its 201st row is a section of one seat
		{"lower case", 1_000_000, "a", false, 0},                // rows are upper case
		{"empty", 1_000_000, "", false, 0},                      // no name
		{"seat id", 1_000_000, "A-1", false, 0},                 // a seat is no section
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if i, ok := queue.SectionIndex(tc.seats, tc.id); ok != tc.ok || (ok && i != tc.index) {
				t.Fatalf("SectionIndex(%d, %q) = %d, %v; want %d, %v", tc.seats, tc.id, i, ok, tc.index, tc.ok)
			}
		})
	}
}

// hscanCounter counts HSCAN calls on a client, and makes each one take
// delay longer, as over a slow link.
type hscanCounter struct {
	n     atomic.Int64
	delay time.Duration
}

func (h *hscanCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *hscanCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *hscanCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "hscan") {
			h.n.Add(1)
			time.Sleep(h.delay)
		}
		return next(ctx, cmd)
	}
}

// mustSell takes seat i of ev for a new user, who joins and orders it.
func mustSell(tb testing.TB, eng *queue.Engine, ev queue.Event, i int) {
	tb.Helper()
	user := fmt.Sprintf("u_buyer%d", i)
	en := MustJoin(tb, eng, ev.ID, user)
	if _, err := eng.Order(context.Background(), ev, en.Token, queue.SeatID(ev.Seats, i), queue.Actor{UserID: user}); err != nil {
		tb.Fatalf("order seat %d: %v", i, err)
	}
}

// TestSeatMaps: a large map's snapshot counts free seats per section, marks
// the sold ones, is shown to active tokens only, and is read once for many
// readers at once while it is young enough.
func TestSeatMaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng, _, rdb := MustEngine(t)
	hscans := &hscanCounter{}
	rdb.AddHook(hscans)
	// 25,001 seats: sections of 10,000, 10,000 and 5,001. Room for every buyer.
	ev := MustEvent(t, eng, "big", func(ev *queue.Event) { ev.Seats, ev.Capacity = 25_001, 10_000 })
	// Enough sold seats for several HSCAN steps, all in the first two sections.
	const sold = 2500
	for i := range sold {
		mustSell(t, eng, ev, i*8)
	}
	mustSell(t, eng, ev, 25_000) // the last seat, alone in its row

	reader := MustJoin(t, eng, ev.ID, "u_reader")
	maps := queue.NewSeatMaps(eng, time.Hour)
	m, err := maps.Get(ctx, ev, reader.Token)
	if err != nil {
		t.Fatal(err)
	}
	perRead := hscans.n.Load()
	want := []queue.Section{
		{ID: "A", Seats: 10_000, Free: 10_000 - 1250, First: "A-1", Last: "GR-50"},
		{ID: "GS", Seats: 10_000, Free: 10_000 - 1250, First: "GS-1", Last: "OJ-50"},
		{ID: "OK", Seats: 5001, Free: 5000, First: "OK-1", Last: "SG-1"},
	}
	if got := m.Sections(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sections = %+v\nwant %+v", got, want)
	}
	for _, tc := range []struct {
		seat  int
		taken bool
	}{{0, true}, {1, false}, {8, true}, {19_992, true}, {20_000, false}, {25_000, true}} {
		if m.Taken(tc.seat) != tc.taken {
			t.Errorf("seat %d (%s) taken = %v, want %v", tc.seat, queue.SeatID(ev.Seats, tc.seat), !tc.taken, tc.taken)
		}
	}
	if first, n := m.SectionSpan(2); first != 20_000 || n != 5001 {
		t.Errorf("SectionSpan(2) = %d, %d; want 20000, 5001", first, n)
	}
	if perRead < 2 {
		t.Errorf("%d HSCAN calls for %d sold seats, want several small ones", perRead, sold)
	}

	t.Run("shared while young", func(t *testing.T) {
		mustSell(t, eng, ev, 1)
		before := hscans.n.Load()
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				got, err := maps.Get(ctx, ev, reader.Token)
				if err != nil || got != m {
					t.Errorf("Get = %p, %v; want the snapshot %p", got, err, m)
				}
			})
		}
		wg.Wait()
		if n := hscans.n.Load() - before; n != 0 {
			t.Errorf("%d HSCAN calls for a young snapshot", n)
		}
	})

	t.Run("one read for concurrent readers", func(t *testing.T) {
		fresh := queue.NewSeatMaps(eng, time.Hour)
		before := hscans.n.Load()
		got := make([]*queue.SeatMap, 32)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				var err error
				if got[i], err = fresh.Get(ctx, ev, reader.Token); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, g := range got[1:] {
			if g != got[0] {
				t.Fatal("concurrent readers got different snapshots")
			}
		}
		if !got[0].Taken(1) {
			t.Error("a new snapshot misses the seat sold after the last one")
		}
		// One read's worth of calls (give or take one while Redis rehashes), not 32.
		if n := hscans.n.Load() - before; n < 1 || n >= 2*perRead {
			t.Errorf("%d HSCAN calls for 32 concurrent readers; one read takes %d", n, perRead)
		}
	})

	t.Run("refreshed when old", func(t *testing.T) {
		always := queue.NewSeatMaps(eng, 0)
		a, err := always.Get(ctx, ev, reader.Token)
		if err != nil {
			t.Fatal(err)
		}
		mustSell(t, eng, ev, 2)
		b, err := always.Get(ctx, ev, reader.Token)
		if err != nil || a == b || !b.Taken(2) || a.Taken(2) {
			t.Fatalf("old snapshot not replaced: %p %p %v", a, b, err)
		}
	})

	t.Run("active tokens only", func(t *testing.T) {
		_, err := maps.Get(ctx, ev, "garbage")
		MustCode(t, err, queue.CodeTokenNotFound, "")
		if _, err := eng.Leave(ctx, ev.ID, reader.Token, queue.Actor{UserID: "u_reader"}); err != nil {
			t.Fatal(err)
		}
		_, err = maps.Get(ctx, ev, reader.Token)
		MustCode(t, err, queue.CodeNotActive, queue.StatusLeft)
	})
}

// A map answered as one list is shared too, but never served for long
// whatever the snapshots' age, and its JSON is the list's.
func TestSeatMapList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng, _, _ := MustEngine(t)
	ev := MustEvent(t, eng, "small", func(ev *queue.Event) { ev.Seats, ev.Capacity = 120, 10 })
	mustSell(t, eng, ev, 3)
	reader := MustJoin(t, eng, ev.ID, "u_reader")
	maps := queue.NewSeatMaps(eng, time.Hour)
	m, err := maps.Get(ctx, ev, reader.Token)
	if err != nil {
		t.Fatal(err)
	}
	list := m.List()
	if len(list) != 120 || list[0].ID != "A-1" || !list[3].Taken || list[4].Taken {
		t.Fatalf("list = %d seats, %+v", len(list), list[:5])
	}
	want, _ := json.Marshal(map[string][]queue.Seat{"seats": list})
	if got := m.ListJSON(); string(got) != string(want) {
		t.Fatalf("ListJSON = %.80s…, want %.80s…", got, want)
	}
	if again, _ := maps.Get(ctx, ev, reader.Token); again != m {
		t.Fatal("a young list map was read again")
	}
	mustSell(t, eng, ev, 7)
	testutil.Eventually(t, 10*time.Second, "the sold seat in a refreshed list", func() bool {
		m, err := maps.Get(ctx, ev, reader.Token)
		return err == nil && m.Taken(7)
	})
}

// mapList is the seat list of a snapshot read, or its error.
func mapList(m *queue.SeatMap, err error) ([]queue.Seat, error) {
	if err != nil {
		return nil, err
	}
	return m.List(), nil
}

// TestSeatMapListIsOneRead: a map answered as one list, however many of its
// seats are sold, is read in one round trip that brings the sold seats'
// names alone: one HKEYS, no HSCAN steps.
func TestSeatMapListIsOneRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng, _, rdb := MustEngine(t)
	ev := MustEvent(t, eng, "list", func(ev *queue.Event) { ev.Seats, ev.Capacity = queue.MaxSeatList, 5000 })
	const sold = 2000 // two HSCAN steps' worth and more
	for i := range sold {
		mustSell(t, eng, ev, i*5)
	}
	reader := MustJoin(t, eng, ev.ID, "u_reader")
	hkeys, hscans := MustCommandCalls(t, rdb, "hkeys"), MustCommandCalls(t, rdb, "hscan")
	m, err := queue.NewSeatMaps(eng, time.Hour).Get(ctx, ev, reader.Token)
	if err != nil {
		t.Fatal(err)
	}
	if n, s := MustCommandCalls(t, rdb, "hkeys")-hkeys, MustCommandCalls(t, rdb, "hscan")-hscans; n != 1 || s != 0 {
		t.Errorf("one list read took %d HKEYS and %d HSCAN calls, want 1 and 0", n, s)
	}
	taken := 0
	for i := range queue.MaxSeatList {
		if m.Taken(i) {
			taken++
			if i%5 != 0 || i/5 >= sold {
				t.Fatalf("seat %d taken, never sold", i)
			}
		}
	}
	if taken != sold {
		t.Errorf("%d seats taken in the map, %d sold", taken, sold)
	}
}

// TestSeatMapsServeASlowReadLonger: a snapshot is served for at least
// four times as long as it took to read, even past the configured age, so
// that readers of a map that is slow to read do not queue behind reread
// after reread.
func TestSeatMapsServeASlowReadLonger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng, _, rdb := MustEngine(t)
	// Each HSCAN step 100 ms slower: the map takes several tenths of a
	// second to read, far longer than a stalled goroutine on a loaded
	// machine, so the snapshot's term is the map's and not the scheduler's.
	hscans := &hscanCounter{delay: 100 * time.Millisecond}
	rdb.AddHook(hscans)
	ev := MustEvent(t, eng, "slow", func(ev *queue.Event) { ev.Seats, ev.Capacity = 25_001, 3000 })
	for i := range 2500 { // several HSCAN steps
		mustSell(t, eng, ev, i*8)
	}
	reader := MustJoin(t, eng, ev.ID, "u_reader")
	// A nanosecond: past the configured age at once.
	maps := queue.NewSeatMaps(eng, time.Nanosecond)
	m, err := maps.Get(ctx, ev, reader.Token)
	if err != nil {
		t.Fatal(err)
	}
	steps := hscans.n.Load()
	// The next read comes one round trip (the token's check) after the
	// first, which took several: well within four times as long.
	if again, err := maps.Get(ctx, ev, reader.Token); err != nil || again != m {
		t.Errorf("Get right after a read of %d HSCAN steps = %p, %v; want the same snapshot %p", steps, again, err, m)
	}
	if n := hscans.n.Load() - steps; n != 0 {
		t.Errorf("%d HSCAN calls to serve a snapshot read just now", n)
	}
	testutil.Eventually(t, 10*time.Second, "a fresh read once the snapshot is old", func() bool {
		again, err := maps.Get(ctx, ev, reader.Token)
		return err == nil && again != m
	})
}
