package queue

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestVerifyBatchMatchesSingle holds a batch of lookups in verify.lua to
// lookups made one at a time (which rank with ZRANK): the batch ranks the
// normal lane without a ZRANK while its seqs run on, and must give the same
// places when they do and when they have gaps.
func TestVerifyBatchMatchesSingle(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	eng := New(rdb, []byte("k"), WithBatching(Batching{}), WithClock(func() time.Time { return now }))
	for n, tc := range []struct {
		name string
		// leave and priority pick, by index, who leaves and who joins the
		// priority lane; admit is how many the event admits first.
		leave, priority []int
		admit           int
	}{
		// Seqs 1..10 in the normal lane.
		{name: "no gaps"},
		// The 4th leaves: a gap in the middle.
		{name: "a leave from the middle", leave: []int{3}},
		// The head leaves: no gap, the line starts later.
		{name: "the head leaves", leave: []int{0}},
		// Priority seqs among the normal ones.
		{name: "priority seqs among them", priority: []int{2, 6}},
		// The head admitted by a tick: no gap.
		{name: "the head admitted", admit: 3},
		// Everything at once.
		{name: "all of it", leave: []int{5, 8}, priority: []int{1}, admit: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("ev-%d", n)
			ev := Event{ID: id, Name: id, Seats: 10, Capacity: 100, AdmitBatch: max(tc.admit, 1), AdmitIntervalMS: 100,
				ActiveTTLS: 60, Policy: PolicyBatch, PriorityShare: 0.01, Paused: tc.admit == 0}
			if err := eng.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			var users []string
			var seqs []int64
			var tokens []string
			for i := range 10 {
				user := fmt.Sprintf("u%d", i)
				en, _, err := eng.JoinWith(ctx, id, user, JoinOptions{Priority: slices.Contains(tc.priority, i), Proven: true})
				if err != nil {
					t.Fatal(err)
				}
				users, seqs, tokens = append(users, user), append(seqs, en.Seq), append(tokens, en.Token)
			}
			for _, i := range tc.leave {
				if _, err := eng.Leave(ctx, id, tokens[i], Actor{UserID: users[i]}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.admit > 0 {
				if _, err := eng.Tick(ctx, id, "r", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			var lookups []byte
			for i := range users {
				lookups = append(lookups, lookupArg(users[i], seqs[i])...)
			}
			args := []any{now.UnixMilli(), int64(0), lookups}
			batch := mustSplit(t, splitVerify, len(users), scriptVerify.Run(ctx, rdb, scriptVerify.keysOf(id), args...))
			waiting := 0
			for i := range users {
				one := mustSplit(t, splitVerify, 1,
					scriptVerify.Run(ctx, rdb, scriptVerify.keysOf(id), now.UnixMilli(), int64(0), lookupArg(users[i], seqs[i])))[0]
				got := fmt.Sprint(batch[i])
				if want := fmt.Sprint(one); got != want {
					t.Errorf("%s (seq %d): the batch answered %s, alone %s", users[i], seqs[i], got, want)
				}
				if one[0] == valWaiting {
					waiting++
				}
			}
			if want := 10 - len(tc.leave) - tc.admit; waiting != want {
				t.Errorf("%d waiting, want %d", waiting, want)
			}
		})
	}
}
