package queue_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
)

// zranks returns how many ZRANKs the server has run, those inside scripts
// included.
func zranks(tb testing.TB, rdb *redis.Client) int64 { return MustCommandCalls(tb, rdb, "zrank") }

// TestLeaveRanksOnce: leaving a waiting place finds the attempt's lane with
// the one lookup that also checks the token, not a second one, and gives up
// the place in that lane.
func TestLeaveRanksOnce(t *testing.T) {
	eng, _, rdb := MustEngine(t)
	ev := MustEvent(t, eng, "leave-once", func(e *queue.Event) { e.Capacity = 0 })
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		user string
		opts queue.JoinOptions
	}{
		{"normal lane", "u_normal", queue.JoinOptions{}},
		{"priority lane", "VIRTUAL:fast", queue.JoinOptions{Priority: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			en := MustJoinWith(t, eng, ev.ID, tc.user, tc.opts)
			if en.Status != queue.StatusWaiting {
				t.Fatalf("joined %s, want WAITING", en.Status)
			}
			before := zranks(t, rdb)
			st, err := eng.Leave(ctx, ev.ID, en.Token, queue.Actor{UserID: tc.user, Simulator: tc.opts.Priority})
			if err != nil || st != queue.StatusWaiting {
				t.Fatalf("leave = %s, %v; want WAITING", st, err)
			}
			if n := zranks(t, rdb) - before; n != 1 {
				t.Errorf("leave ran %d ZRANKs, want 1", n)
			}
			if got := MustStatus(t, eng, ev.ID, en.Token).Status; got != queue.StatusLeft {
				t.Errorf("status after leave = %s, want LEFT", got)
			}
			if st, err := eng.Stats(ctx, ev); err != nil || st.Waiting != 0 {
				t.Errorf("stats after leave = %+v, %v; want nobody waiting in either lane", st, err)
			}
		})
	}
}
