package drop_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
)

// TestDropResumesOnAnotherReplica: the replica playing a crowd stops
// mid-crowd; a dead replica's lease then holds the crowd until it runs out;
// another replica resumes from the cursor. The crowd ends exactly complete,
// nobody joined twice, admissions stay in arrival order, and every replica
// reports the same results.
func TestDropResumesOnAnotherReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a 3,000-user drop on two replicas (~10 s)")
	}
	ctx := context.Background()
	w := MustWorld(t, store.DialectSQLite)
	svc := w.MustService(t)
	const crowd = 3000
	d := w.MustCreate(t, svc, drop.LevelEasy, crowd, 50).Drop
	w.clk.Set(d.OpensAt.Add(-time.Second))
	clockCtx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	go w.clk.Run(clockCtx, 10*time.Millisecond, 2*time.Millisecond)

	r1 := w.MustReplica(t, "r1")
	cursor := func() int64 {
		st, err := w.eng.CrowdState(ctx, d.Event)
		if err != nil {
			t.Fatal(err)
		}
		return st.Cursor
	}
	MustEventually(t, 30*time.Second, "r1 joined a third of the crowd", func() bool { return cursor() >= crowd/3 })
	r1.stop()
	stopped := cursor()
	if stopped >= crowd {
		t.Fatalf("r1 joined the whole crowd before it stopped (%d)", stopped)
	}
	// A replica that died holding the lease keeps the crowd until it runs out.
	if err := w.rdb.Set(ctx, queue.CrowdKeys(d.Event)[1], "ghost", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	r2 := w.MustReplica(t, "r2")
	v := MustFinished(t, svc, d.ID, 60*time.Second)
	if v.Stats.CrowdJoined != crowd {
		t.Errorf("crowd_joined = %d, want exactly %d", v.Stats.CrowdJoined, crowd)
	}
	if inLine, sold := w.crowdAudit(t, d); inLine != crowd || sold != 50 {
		t.Errorf("%d of the crowd in line or admitted, want %d; %d seats sold", inLine, crowd, sold)
	}
	t.Logf("r1 stopped at %d of %d; r2 finished", stopped, crowd)

	a, err := svc.Results(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r2.svc.Results(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	a.ServerTime, b.ServerTime = time.Time{}, time.Time{}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("results differ between replicas:\n%+v\n%+v", a, b)
	}
}

// TestSchedulesMakeOneDrop: three replicas with the same schedule make its
// next drop once, and the one after once the first has opened.
func TestSchedulesMakeOneDrop(t *testing.T) {
	w := MustWorld(t, store.DialectSQLite)
	ss, err := drop.ParseSchedules("every=1m,scenario=tiny,level=hard,crowd=40")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.MustReplica(t, fmt.Sprintf("r%d", i), drop.WithSchedules(ss...))
	}
	ctx := context.Background()
	open := func() []string {
		ds, err := w.store.OpenDrops(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		return ids
	}
	first := drop.ScheduledID("hard", start.Add(time.Minute))
	MustEventually(t, 10*time.Second, "the 20:00 drop", func() bool { return len(open()) > 0 })
	if ids := open(); !reflect.DeepEqual(ids, []string{first}) {
		t.Fatalf("open drops %v, want [%s]", ids, first)
	}
	if evs, err := w.eng.Events(ctx); err != nil || len(evs) != 1 || evs[0].ID != drop.EventID(first) {
		t.Fatalf("events %v, %v; want the one drop's", evs, err)
	}
	w.clk.Set(start.Add(time.Minute))
	second := drop.ScheduledID("hard", start.Add(2*time.Minute))
	MustEventually(t, 10*time.Second, "the 20:01 drop", func() bool {
		ids := open()
		return len(ids) == 2 || (len(ids) == 1 && ids[0] == second)
	})
	all, err := w.store.FinishedDrops(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if ids := append(open(), dropIDsOf(all)...); len(ids) != 2 {
		t.Errorf("drops %v, want the two schedule drops once each", ids)
	}
}

func dropIDsOf(ds []drop.Drop) []string {
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestNoSeatSoldTwice: people and the crowd race for the seats from many
// goroutines (run with -race): every seat is sold once, and the drop is
// sold out with every seat accounted for.
func TestNoSeatSoldTwice(t *testing.T) {
	ctx := context.Background()
	w := MustWorld(t, store.DialectSQLite)
	svc := w.MustService(t)
	const crowd, seats, people = 1000, 100, 40
	d := w.MustCreate(t, svc, drop.LevelHard, crowd, seats).Drop
	w.clk.Set(d.OpensAt)
	clockCtx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	go w.clk.Run(clockCtx, 100*time.Millisecond, 2*time.Millisecond)
	w.MustReplica(t, "r1")
	ev := queue.Event{ID: d.Event, Seats: seats}
	var wg sync.WaitGroup
	bought := make(chan string, people)
	for i := range people {
		wg.Go(func() {
			user := fmt.Sprintf("u_%d", i)
			en, _, err := w.eng.Join(ctx, d.Event, user)
			if err != nil {
				t.Error(err)
				return
			}
			for tries := 0; tries < 100_000; tries++ {
				st, err := w.eng.Status(ctx, d.Event, en.Token)
				if err != nil {
					t.Error(err)
					return
				}
				taken, _ := w.eng.SeatsTaken(ctx, d.Event)
				if len(taken) == seats || st.Status.Finished() {
					return
				}
				if st.Status != queue.StatusActive {
					continue
				}
				// Everyone goes for the same few front seats as the crowd.
				seat := queue.SeatID(seats, (i+tries)%8)
				_, err = w.eng.Order(ctx, ev, en.Token, seat, queue.Actor{UserID: user})
				switch queue.ErrorCode(err) {
				case "":
					bought <- seat
					return
				case queue.CodeSeatTaken:
				default:
					return
				}
			}
		})
	}
	wg.Wait()
	close(bought)
	v := MustFinished(t, svc, d.ID, 60*time.Second)
	_, sold := w.crowdAudit(t, d)
	if sold != seats || v.Stats.Sold != seats {
		t.Errorf("seats sold: %d in the records, %d in the stats; want %d", sold, v.Stats.Sold, seats)
	}
	res, err := svc.Results(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	byPeople := 0
	for range bought {
		byPeople++
	}
	if got := res.Crowd.Sold + int64(byPeople); got != seats {
		t.Errorf("crowd bought %d and people %d: %d, want %d", res.Crowd.Sold, byPeople, got, seats)
	}
	t.Logf("people bought %d, the crowd %d", byPeople, res.Crowd.Sold)
}
