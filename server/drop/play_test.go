package drop_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store/storetest"
)

// TestDropPlaysItsCrowd: a drop on a fast test clock. A person's early
// press is refused and counted; the crowd joins on its plan, exactly once,
// in order, beside the person; the crowd buys until the drop is sold out,
// and the results have the person where their join put them.
func TestDropPlaysItsCrowd(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := MustWorld(t, dialect)
			svc := w.MustService(t)
			const crowd, seats = 300, 50
			v := w.MustCreate(t, svc, drop.LevelHard, crowd, seats)
			d := v.Drop
			if v.Phase != drop.PhaseCountdown || d.Event != drop.EventID(d.ID) || d.Crowd != crowd || d.Seats != seats {
				t.Fatalf("created %+v", v)
			}

			// A false start, ten seconds early.
			early, err := svc.Joining(ctx, d.Event, "u_alice", "Alice")
			if err != nil || !early {
				t.Fatalf("Joining before the opening = %v, %v", early, err)
			}
			_, _, err = w.eng.Join(ctx, d.Event, "u_alice")
			MustCode(t, err, queue.CodeEventNotOpen)
			if err := svc.FalseStart(ctx, d.Event, "u_alice", "Alice"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.MyResult(ctx, d.ID, "u_alice"); queue.ErrorCode(err) != queue.CodeResultNotFound {
				t.Errorf("result before racing: %v, want RESULT_NOT_FOUND", err)
			}

			r := w.MustReplica(t, "r1")
			// 400 ms after the opening Alice presses, behind the crowd due by then.
			w.clk.Set(d.OpensAt.Add(400 * time.Millisecond))
			plan, err := r.svc.Plan(d)
			if err != nil {
				t.Fatal(err)
			}
			due := int64(plan.Due(400 * time.Millisecond))
			if due < 30 {
				t.Fatalf("only %d of the hard crowd due by 400 ms: the test wants some ahead of Alice", due)
			}
			MustEventually(t, 10*time.Second, "the crowd due by 400 ms joined", func() bool {
				st, err := w.eng.CrowdState(ctx, d.Event)
				if err != nil {
					t.Fatal(err)
				}
				if st.Cursor > due {
					t.Fatalf("%d of the crowd joined by 400 ms, the plan has %d", st.Cursor, due)
				}
				return st.Cursor == due
			})
			if early, err := r.svc.Joining(ctx, d.Event, "u_alice", "Alice"); err != nil || early {
				t.Fatalf("Joining after the opening = %v, %v", early, err)
			}
			alice, _, err := w.eng.Join(ctx, d.Event, "u_alice")
			if err != nil || alice.Status != queue.StatusWaiting {
				t.Fatalf("alice's join: %+v, %v; want her waiting behind the crowd", alice, err)
			}
			clockCtx, stopClock := context.WithCancel(ctx)
			defer stopClock()
			go w.clk.Run(clockCtx, 100*time.Millisecond, 2*time.Millisecond)
			MustEventually(t, 30*time.Second, "alice admitted or sold out", func() bool {
				st, err := w.eng.Status(ctx, d.Event, alice.Token)
				if err != nil {
					t.Fatal(err)
				}
				taken, _ := w.eng.SeatsTaken(ctx, d.Event)
				if st.Status != queue.StatusActive {
					// Sold out, the line stops: she stays in it.
					return st.Status != queue.StatusWaiting || len(taken) == seats
				}
				free := map[string]bool{}
				for i := range seats {
					free[queue.SeatID(seats, i)] = true
				}
				for _, s := range taken {
					delete(free, s)
				}
				for s := range free {
					_, err := w.eng.Order(ctx, queue.Event{ID: d.Event, Seats: seats}, alice.Token, s, queue.Actor{UserID: "u_alice"})
					return err == nil || queue.ErrorCode(err) == queue.CodeSoldOut
				}
				return true
			})
			v = MustFinished(t, svc, d.ID, 60*time.Second)
			stopClock()

			st := v.Stats
			if st.CrowdJoined != crowd || st.PeopleJoined != 1 || st.Sold != seats || st.SeatsLeft != 0 || v.People != 1 {
				t.Errorf("finished stats %+v, people %d", *st, v.People)
			}
			inLine, sold := w.crowdAudit(t, d)
			if inLine != crowd || sold != seats {
				t.Errorf("crowd in line or admitted: %d, want %d; seats sold %d, want %d", inLine, crowd, sold, seats)
			}
			res, err := svc.Results(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.People) != 1 || res.Phase != drop.PhaseFinished {
				t.Fatalf("results %+v", res)
			}
			a := res.People[0]
			if a.UserID != "u_alice" || a.Nickname != "Alice" || a.Rank != 1 || a.ReactionMS != 400 || a.Position != alice.Position {
				t.Errorf("alice's entry %+v; she joined at place %d, 400 ms in", a, alice.Position)
			}
			if (a.Outcome == drop.OutcomeSeat) != (a.Seat != nil) || (a.Outcome != drop.OutcomeSeat && a.Outcome != drop.OutcomeSoldOut) {
				t.Errorf("alice's outcome %s, seat %v", a.Outcome, a.Seat)
			}
			c := res.Crowd
			t.Logf("alice: place %d, %s; crowd %+v", a.Position, a.Outcome, c)
			peopleSold := int64(0)
			if a.Seat != nil {
				peopleSold = 1
			}
			if c.Joined != crowd || c.Sold+peopleSold != seats || c.ReactionMS.P50 <= 0 ||
				c.ReactionMS.P50 > c.ReactionMS.P90 || c.ReactionMS.P90 > c.ReactionMS.P99 {
				t.Errorf("crowd figures %+v", c)
			}
			mine, err := svc.MyResult(ctx, d.ID, "u_alice")
			if err != nil {
				t.Fatal(err)
			}
			total := float64(crowd + 1)
			want := float64(int(1000*(total-float64(alice.Seq))/total+0.5)) / 10
			if mine.FalseStarts != 1 || mine.Percentile != want || mine.Position != alice.Position {
				t.Errorf("my result %+v; want 1 false start, percentile %v", mine, want)
			}
			ev, err := w.eng.Event(ctx, d.Event)
			if err != nil || !ev.Paused || ev.ClosesAt == nil || ev.ClosesAt.After(v.FinishedAt.Add(time.Second)) {
				t.Errorf("the finished drop's event is not paused and closed: %+v, %v", ev, err)
			}
		})
	}
}

// MustCode asserts err carries code.
func MustCode(tb testing.TB, err error, code queue.Code) {
	tb.Helper()
	var qe *queue.Error
	if !errors.As(err, &qe) || qe.Code != code {
		tb.Fatalf("error = %v, want code %s", err, code)
	}
}

// crowdJoins is a go-redis hook that counts the crowd join calls of its
// clients and the virtual users they join.
type crowdJoins struct{ calls, users atomic.Int64 }

func (c *crowdJoins) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *crowdJoins) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// A crowd join's last two arguments are its size and the prefix.
		if args := cmd.Args(); len(args) > 2 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") &&
			fmt.Sprint(args[len(args)-1]) == drop.CrowdPrefix {
			err := next(ctx, cmd)
			if err == nil { // not a NOSCRIPT that go-redis retries with EVAL
				n, _ := strconv.Atoi(fmt.Sprint(args[len(args)-2]))
				c.calls.Add(1)
				c.users.Add(int64(n))
			}
			return err
		}
		return next(ctx, cmd)
	}
}

func (c *crowdJoins) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestStragglersJoinInRuns: while fewer than a chunk of the crowd are due,
// the player lets them gather for up to 20 ms and joins them in one call,
// rather than one call per 2 ms step: the whole crowd still joins, in calls
// of several users, not of one or two.
func TestStragglersJoinInRuns(t *testing.T) {
	ctx := context.Background()
	w := MustWorld(t, storetest.Dialects[0])
	svc := w.MustService(t)
	const crowd = 2000
	d := w.MustCreate(t, svc, drop.LevelHard, crowd, 50).Drop
	joins := &crowdJoins{}
	w.hook = joins
	w.MustReplica(t, "r1")
	w.clk.Set(d.OpensAt)
	clockCtx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	// Real time: the tiny scenario's crowd arrives over half a second, and
	// the player steps every 2 ms.
	go w.clk.Run(clockCtx, 2*time.Millisecond, 2*time.Millisecond)
	// The hook counts a call once its answer is back, after Redis has
	// moved the cursor: wait on the hook.
	MustEventually(t, 60*time.Second, "the whole crowd's join calls answered", func() bool {
		return joins.users.Load() >= crowd
	})
	st, err := w.eng.CrowdState(ctx, d.Event)
	if err != nil {
		t.Fatal(err)
	}
	calls, users := joins.calls.Load(), joins.users.Load()
	t.Logf("%d users in %d crowd join calls", users, calls)
	if st.Cursor != crowd || users != crowd || users/calls < 15 {
		t.Fatalf("%d users joined (cursor %d) in %d calls; want all %d, at least 15 a call", users, st.Cursor, calls, crowd)
	}
}
