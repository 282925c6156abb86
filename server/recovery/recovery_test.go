package recovery_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/audit"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/recovery"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// rig is one event on a private Redis (no persistence) and a store, with the
// audit worker run by hand.
type rig struct {
	ctx   context.Context
	eng   *queue.Engine
	rdb   *redis.Client
	db    *store.Store
	clk   *clock
	ev    queue.Event
	audit *audit.Worker
}

const lease = 2 * time.Second

func MustRig(tb testing.TB, dialect string) *rig {
	tb.Helper()
	ctx := context.Background()
	rdb := redistest.MustClient(tb, redistest.MustStart(tb).Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("token-key"), queue.WithClock(clk.Now))
	db := storetest.MustOpen(tb, dialect)
	ev, err := queue.NewCatalog(db, eng).Create(ctx, queue.Event{ID: "drop", Name: "Drop", Seats: 20, Capacity: 1000,
		AdmitBatch: 5, AdmitIntervalMS: 100, ActiveTTLS: 600, Policy: queue.PolicyBatch, PriorityShare: 0.5})
	if err != nil {
		tb.Fatal(err)
	}
	return &rig{ctx: ctx, eng: eng, rdb: rdb, db: db, clk: clk, ev: ev, audit: audit.New(eng, db, "r1", nil)}
}

// MustTick admits the next batch and returns how many.
func (r *rig) MustTick(tb testing.TB) int {
	tb.Helper()
	r.clk.Advance(time.Duration(r.ev.AdmitIntervalMS) * time.Millisecond)
	res, err := r.eng.Tick(r.ctx, r.ev.ID, "r1", lease)
	if err != nil || !res.Ran {
		tb.Fatalf("tick: %+v, %v", res, err)
	}
	return res.Promoted
}

// MustCatchUp runs the audit worker until it has nothing left to write.
func (r *rig) MustCatchUp(tb testing.TB) {
	tb.Helper()
	for range 20 {
		n, err := r.audit.Round(r.ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	tb.Fatal("the audit worker never caught up")
}

func (r *rig) MustStatus(tb testing.TB, token string) queue.Entry {
	tb.Helper()
	en, err := r.eng.Status(r.ctx, r.ev.ID, token)
	if err != nil {
		tb.Fatalf("status: %v", err)
	}
	return en
}

// lossCases are the ways Redis comes back empty before recovery runs.
var lossCases = []struct {
	name string
	// after runs after the FLUSHALL, before Recover.
	after func(tb testing.TB, r *rig)
}{
	{
		// Nothing touched Redis in between.
		name:  "empty redis",
		after: func(testing.TB, *rig) {},
	},
	{
		// An admin changed the event meanwhile: the change fails (503) and
		// does not bring the event back empty.
		name: "definition changed meanwhile",
		after: func(tb testing.TB, r *rig) {
			_, err := queue.NewCatalog(r.db, r.eng).Update(r.ctx, r.ev.ID, func(e *queue.Event) { e.Paused = true })
			if queue.ErrorCode(err) != queue.CodeEventNotFound {
				tb.Fatalf("changing a lost event: %v, want %s from an engine without WithLost", err, queue.CodeEventNotFound)
			}
			if n := r.rdb.Exists(r.ctx, queue.Keys(r.ev.ID)...).Val(); n != 0 {
				tb.Fatalf("the change left %d keys of the lost event", n)
			}
		},
	},
}

func TestRecoverAfterDataLoss(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		for _, tc := range lossCases {
			t.Run(dialect+"/"+tc.name, func(t *testing.T) {
				r := MustRig(t, dialect)
				const n = 40
				tokens := make([]string, n)
				for i := range tokens {
					en, _, err := r.eng.Join(r.ctx, r.ev.ID, fmt.Sprintf("u_%02d", i))
					if err != nil {
						t.Fatal(err)
					}
					tokens[i] = en.Token
				}
				// u_00..u_09 admitted; u_00, u_01 buy; u_02 leaves; u_20 leaves its place.
				if got := r.MustTick(t) + r.MustTick(t); got != 10 {
					t.Fatalf("admitted %d, want 10", got)
				}
				me := queue.Actor{UserID: "u_00"}
				if _, err := r.eng.Order(r.ctx, r.ev, tokens[0], queue.SeatID(r.ev.Seats, 0), me); err != nil {
					t.Fatal(err)
				}
				if _, err := r.eng.Order(r.ctx, r.ev, tokens[1], queue.SeatID(r.ev.Seats, 1), queue.Actor{UserID: "u_01"}); err != nil {
					t.Fatal(err)
				}
				for _, i := range []int{2, 20} {
					if _, err := r.eng.Leave(r.ctx, r.ev.ID, tokens[i], queue.Actor{UserID: fmt.Sprintf("u_%02d", i)}); err != nil {
						t.Fatal(err)
					}
				}
				// Four FAST TRACK users join behind everyone.
				for i := range 4 {
					en, _, err := r.eng.JoinWith(r.ctx, r.ev.ID, fmt.Sprintf("VIRTUAL:p_%d", i), queue.JoinOptions{Priority: true})
					if err != nil {
						t.Fatal(err)
					}
					tokens = append(tokens, en.Token)
				}
				// An admin grants u_vip the priority lane; it joins only after the loss.
				grant := []queue.Grant{{EventID: r.ev.ID, Kind: queue.GrantUser, Value: "u_vip"}}
				if err := r.db.PutGrants(r.ctx, grant); err != nil {
					t.Fatal(err)
				}
				if err := r.eng.PutGrants(r.ctx, r.ev.ID, grant); err != nil {
					t.Fatal(err)
				}
				r.MustCatchUp(t)
				before := make([]queue.Entry, len(tokens))
				for i, tok := range tokens {
					before[i] = r.MustStatus(t, tok)
				}
				stats, err := r.eng.Stats(r.ctx, r.ev)
				if err != nil {
					t.Fatal(err)
				}

				if err := r.rdb.FlushAll(r.ctx).Err(); err != nil {
					t.Fatal(err)
				}
				tc.after(t, r)
				rep, err := recovery.Recover(r.ctx, r.db, r.eng, r.ev.ID, false)
				if err != nil {
					t.Fatalf("recover: %v", err)
				}
				// The counters resume at the caps reserved at the create.
				want := recovery.Report{EventID: r.ev.ID, Waiting: 33, Active: 7, Done: 2, Left: 2, Admitted: queue.AdmitBlock,
					Seats: 2, Grants: 1, MaxSeq: queue.SeqBlock}
				if rep != want {
					t.Fatalf("report %+v, want %+v", rep, want)
				}

				// The same tokens answer the same statuses and places.
				for i, tok := range tokens {
					got := r.MustStatus(t, tok)
					b := before[i]
					if got.Status != b.Status || got.Position != b.Position || got.Seq != b.Seq ||
						got.AdmissionNo != b.AdmissionNo || !got.ExpiresAt.Equal(b.ExpiresAt) || !got.AdmittedAt.Equal(b.AdmittedAt) {
						t.Errorf("token %d: after recovery %+v, before %+v", i, got, b)
					}
				}
				// admitted_total counts on from where admission numbers resume.
				stats.AdmittedTotal = queue.AdmitBlock
				if after, err := r.eng.Stats(r.ctx, r.ev); err != nil || after != stats {
					t.Fatalf("stats after recovery %+v (%v), want %+v", after, err, stats)
				}

				// A second recovery refuses to overwrite the live event, unless forced.
				if _, err := recovery.Recover(r.ctx, r.db, r.eng, r.ev.ID, false); queue.ErrorCode(err) != queue.CodeEventExists {
					t.Fatalf("second recover without force: %v, want %s", err, queue.CodeEventExists)
				}

				// Seats stay sold: no double sale, by a new holder or an old one.
				if got := r.MustTick(t); got != 5 {
					t.Fatalf("the first tick after recovery admitted %d, want 5", got)
				}
				// FIFO goes on exactly, in each lane: the priority share (3 of
				// 5) p_0..p_2 first, then u_10 and u_11, numbered past every
				// admission number the lost state can have handed out.
				for i, tok := range []string{tokens[n], tokens[n+1], tokens[n+2], tokens[10], tokens[11]} {
					if st := r.MustStatus(t, tok); st.Status != queue.StatusActive || st.AdmissionNo != int64(queue.AdmitBlock+1+i) {
						t.Fatalf("%s after the first tick: %+v, want ACTIVE as admission %d", st.UserID, st, queue.AdmitBlock+1+i)
					}
				}
				p3, u12 := r.MustStatus(t, tokens[n+3]), r.MustStatus(t, tokens[12])
				if p3.Status != queue.StatusWaiting || u12.Status != queue.StatusWaiting || p3.Position != 1 || u12.Position != 2 {
					t.Fatalf("after the first tick p_3 %+v, u_12 %+v; want both WAITING, p_3 first", p3, u12)
				}
				_, err = r.eng.Order(r.ctx, r.ev, tokens[10], queue.SeatID(r.ev.Seats, 0), queue.Actor{UserID: "u_10"})
				if queue.ErrorCode(err) != queue.CodeSeatTaken {
					t.Fatalf("ordering a seat sold before the loss: %v, want %s", err, queue.CodeSeatTaken)
				}
				_, err = r.eng.Order(r.ctx, r.ev, tokens[0], queue.SeatID(r.ev.Seats, 5), me)
				if queue.ErrorCode(err) != queue.CodeNotActive {
					t.Fatalf("a DONE token ordering again: %v, want %s", err, queue.CodeNotActive)
				}
				// A new join queues behind everyone, with a fresh seq.
				en, created, err := r.eng.Join(r.ctx, r.ev.ID, "u_new")
				if err != nil || !created || en.Seq != queue.SeqBlock+1 || en.Status != queue.StatusWaiting || en.Position != en.Waiting {
					t.Fatalf("join after recovery: %+v, created %v, %v; want seq %d at the back", en, created, err, queue.SeqBlock+1)
				}
				// The grant survived: u_vip waits in the priority lane.
				if en, _, err := r.eng.Join(r.ctx, r.ev.ID, "u_vip"); err != nil || en.Lane != queue.LanePriority {
					t.Fatalf("u_vip joining after recovery: %+v, %v; want the priority lane", en, err)
				}
				// A user still in line joins again and gets the old attempt back.
				if en, created, err := r.eng.Join(r.ctx, r.ev.ID, "u_30"); err != nil || created || en.Token != tokens[30] {
					t.Fatalf("u_30 joining again: %+v, created %v, %v; want its old token", en, created, err)
				}
				// The audit trail goes on from the rebuilt stream.
				r.MustCatchUp(t)
				rows, err := r.db.Entries(r.ctx, r.ev.ID)
				if err != nil || len(rows) != n+6 || rows[n+4].UserID != "u_new" || rows[10].Status != queue.StatusActive ||
					rows[n].Status != queue.StatusActive || rows[n].Lane != queue.LanePriority {
					t.Fatalf("audit after recovery: %d rows (%v)", len(rows), err)
				}

				if _, err := recovery.Recover(r.ctx, r.db, r.eng, r.ev.ID, true); err != nil {
					t.Fatalf("forced recover: %v", err)
				}
				if st := r.MustStatus(t, tokens[11]); st.Status != queue.StatusActive || st.AdmissionNo != queue.AdmitBlock+5 {
					t.Fatalf("u_11 after a forced recovery: %+v", st)
				}
				if st := r.MustStatus(t, tokens[n+3]); st.Status != queue.StatusWaiting || st.Position != 1 {
					t.Fatalf("p_3 after a forced recovery: %+v, want first in line", st)
				}
			})
		}
	}
}

// TestLateOrderKeptAside: an audit batch read before Redis lost its data
// reaches SQL only after the rebuild began (the race between the write-behind
// and the rebuild's snapshot). Its order is not folded in behind the
// rebuild's back (the rebuilt line does not have it, so the seat is free in
// Redis): it goes to order_conflicts as late, with nothing changed in
// entries or orders; the seat is sold again and both SQL and Redis name the
// new owner. A second order for a seat SQL holds is kept aside as seat_taken.
func TestLateOrderKeptAside(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			r := MustRig(t, dialect)
			var tokens []string
			for i := range 3 {
				en, _, err := r.eng.Join(r.ctx, r.ev.ID, fmt.Sprintf("u_%d", i))
				if err != nil {
					t.Fatal(err)
				}
				tokens = append(tokens, en.Token)
			}
			r.MustTick(t)
			r.MustCatchUp(t)
			seat := queue.SeatID(r.ev.Seats, 0)
			if _, err := r.eng.Order(r.ctx, r.ev, tokens[0], seat, queue.Actor{UserID: "u_0"}); err != nil {
				t.Fatal(err)
			}
			// The in-flight batch: read before the loss, written after.
			inflight, err := r.eng.Records(r.ctx, r.ev.ID, "0", 1000)
			if err != nil {
				t.Fatal(err)
			}
			inflight = slices.DeleteFunc(inflight, func(rec queue.Record) bool { return rec.Kind != queue.RecordDone })
			if len(inflight) != 1 || inflight[0].OrderID == "" {
				t.Fatalf("in flight %+v, want u_0's done record", inflight)
			}
			if err := r.rdb.FlushAll(r.ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := recovery.Recover(r.ctx, r.db, r.eng, r.ev.ID, false); err != nil {
				t.Fatal(err)
			}
			conflicts, err := r.db.WriteRecords(r.ctx, inflight)
			if err != nil {
				t.Fatal(err)
			}
			if len(conflicts) != 1 || conflicts[0].Reason != queue.ConflictLate || conflicts[0].Holder.ID != "" {
				t.Fatalf("conflicts %+v, want u_0's order kept aside as late, seat held by nobody", conflicts)
			}
			if again, err := r.db.WriteRecords(r.ctx, inflight); err != nil || len(again) != 0 {
				t.Fatalf("the same batch again: %+v, %v; want nothing new", again, err)
			}
			rows, err := r.db.Entries(r.ctx, r.ev.ID)
			if err != nil || rows[0].Status != queue.StatusActive {
				t.Fatalf("u_0's entry %+v (%v): a late record must not move it", rows, err)
			}
			// The rebuilt line has u_0 ACTIVE without a seat: u_1 buys it.
			if _, err := r.eng.Order(r.ctx, r.ev, tokens[1], seat, queue.Actor{UserID: "u_1"}); err != nil {
				t.Fatal(err)
			}
			r.MustCatchUp(t)
			orders, err := r.db.Orders(r.ctx, r.ev.ID)
			if err != nil || len(orders) != 1 || orders[0].UserID != "u_1" {
				t.Fatalf("orders %+v (%v), want the seat sold to u_1", orders, err)
			}
			if owner, _, _ := strings.Cut(r.rdb.HGet(r.ctx, queue.Keys(r.ev.ID)[7], seat).Val(), "|"); owner != "u_1" {
				t.Fatalf("Redis names %q as the owner, SQL u_1", owner)
			}
			// An order for a seat SQL holds for another: kept aside with its holder.
			twice := inflight[0]
			twice.ID, twice.OrderID, twice.UserID, twice.Seq = "9999999999999-0", "o_twice", "u_2", 3
			conflicts, err = r.db.WriteRecords(r.ctx, []queue.Record{twice})
			if err != nil || len(conflicts) != 1 || conflicts[0].Reason != queue.ConflictSeatTaken ||
				conflicts[0].Holder.UserID != "u_1" {
				t.Fatalf("a second sale of the seat: %+v, %v; want seat_taken held by u_1", conflicts, err)
			}
			kept, err := r.db.Conflicts(r.ctx, r.ev.ID)
			reasons := map[string]string{}
			for _, c := range kept {
				reasons[c.UserID] = c.Reason + " " + c.HolderUserID
			}
			if err != nil || len(kept) != 2 || reasons["u_0"] != "late " || reasons["u_2"] != "seat_taken u_1" {
				t.Fatalf("order_conflicts %+v (%v)", kept, err)
			}
		})
	}
}
