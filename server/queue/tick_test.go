package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestTickInChunks: a tick promotes its room in calls of at most the
// engine's chunk, each popping the head of the line, so a tick cut short
// after its first call ends as the cases say, and admission numbers always
// follow arrival.
func TestTickInChunks(t *testing.T) {
	const users, batch, chunk = 8, 5, 2
	ctx := context.Background()
	cases := []struct {
		name string
		// policy and capacity of the event.
		policy   queue.Policy
		capacity int
		// between runs after the tick's first call, as replica r1.
		between func(t *testing.T, eng *queue.Engine, ev queue.Event)
		// replica finishes the tick; its lease is short, so another replica
		// can take it over.
		replica string
		// wantPaused is the finishing Tick's answer; want is how many the
		// whole tick admitted.
		wantPaused bool
		want       int
	}{
		{
			// Nothing happens between the calls: the tick goes on to its room.
			name: "finished by the same replica", policy: queue.PolicyBatch, capacity: 100, replica: "r1", want: batch,
		},
		{
			// r1 stops after one call (a crash): r2 takes the lease over and
			// finishes the tick r1 began before anything else.
			name: "finished by the next lease holder", policy: queue.PolicyBatch, capacity: 100, replica: "r2", want: batch,
		},
		{
			// Pausing between the calls drops what is left of the tick.
			name: "paused in the middle", policy: queue.PolicyBatch, capacity: 100, replica: "r1",
			between: func(t *testing.T, eng *queue.Engine, ev queue.Event) {
				ev.Paused = true
				if err := eng.PutEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			},
			wantPaused: true, want: chunk,
		},
		{
			// Capacity shrinks to 3 between the calls: the rest of the tick
			// admits only up to it.
			name: "capacity lowered in the middle", policy: queue.PolicyCapacity, capacity: 100, replica: "r1",
			between: func(t *testing.T, eng *queue.Engine, ev queue.Event) {
				ev.Capacity = 3
				if err := eng.PutEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			},
			want: 3,
		},
	}
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now), queue.WithChunk(chunk))
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := MustEvent(t, eng, fmt.Sprintf("chunks-%d", i), func(e *queue.Event) {
				e.Policy, e.Capacity, e.AdmitBatch, e.Paused = tc.policy, tc.capacity, batch, true
			})
			tokens := make([]string, users)
			for j := range tokens {
				tokens[j] = MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%d", j+1)).Token
			}
			ev.Paused = false
			if err := eng.PutEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			const lease = 50 * time.Millisecond
			first, left, err := eng.TickStep(ctx, ev.ID, "r1", lease)
			if err != nil || !first.Ran || first.Promoted != chunk || first.Room != batch || left != batch-chunk {
				t.Fatalf("first call %+v, %d left, %v", first, left, err)
			}
			// The sweep asks for the rest of the tick at once.
			sw, err := eng.Expire(ctx, ev.ID, "r1", lease)
			if err != nil || !sw.Leader || sw.Wait != 0 {
				t.Fatalf("sweep with a tick left: %+v, %v", sw, err)
			}
			if tc.between != nil {
				tc.between(t, eng, ev)
			}
			var res queue.TickResult
			for deadline := time.Now().Add(10 * time.Second); ; {
				if res, err = eng.Tick(ctx, ev.ID, tc.replica, lease); err != nil {
					t.Fatal(err)
				}
				if res.Leader || time.Now().After(deadline) {
					break
				}
				time.Sleep(lease / 5) // r1's lease runs out in real time
			}
			if res.Paused != tc.wantPaused || (!tc.wantPaused && res.Promoted != tc.want-chunk) {
				t.Fatalf("finishing tick %+v, want %d more", res, tc.want-chunk)
			}
			// A tick finished is not run again before its interval.
			if again, _, err := eng.TickStep(ctx, ev.ID, tc.replica, lease); err != nil || again.Ran {
				t.Fatalf("tick ran again: %+v, %v", again, err)
			}
			for j, tok := range tokens {
				en := MustStatus(t, eng, ev.ID, tok)
				switch {
				case j < tc.want && (en.Status != queue.StatusActive || en.AdmissionNo != int64(j+1)):
					t.Fatalf("u_%d: %s, admission %d; want ACTIVE, %d", j+1, en.Status, en.AdmissionNo, j+1)
				case j >= tc.want && (en.Status != queue.StatusWaiting || en.Position != int64(j+1-tc.want)):
					t.Fatalf("u_%d: %s at %d; want WAITING at %d", j+1, en.Status, en.Position, j+1-tc.want)
				}
			}
		})
	}
}

// TestTickInChunksStaysWithinReservedNumbers: a tick chunked over several
// calls numbers no admission past the cap SQL has reserved (adm_cap), and
// the next tick after Reserve raised the cap goes on in order.
func TestTickInChunksStaysWithinReservedNumbers(t *testing.T) {
	const users, batch, chunk, admitCap = 8, 5, 2, 3
	ctx := context.Background()
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now), queue.WithChunk(chunk))
	ev := queue.Event{ID: "capped-chunks", Name: "capped-chunks", Seats: 100, Capacity: 100, AdmitBatch: batch,
		AdmitIntervalMS: 100, ActiveTTLS: 60, Policy: queue.PolicyBatch, CreatedAt: eng.Now(), Paused: true}
	if err := eng.CreateMarked(ctx, ev, queue.Incarnation{Mark: "m1", SeqCap: 100, AdmitCap: admitCap}); err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, users)
	for j := range tokens {
		tokens[j] = MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%d", j+1)).Token
	}
	ev.Paused = false
	if err := eng.PutEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	const lease = time.Minute
	res, err := eng.Tick(ctx, ev.ID, "r1", lease)
	if err != nil || !res.Ran || res.Promoted != admitCap {
		t.Fatalf("capped tick %+v, %v; want %d promoted", res, err, admitCap)
	}
	if err := eng.Reserve(ctx, ev.ID, queue.Incarnation{SeqCap: 100, AdmitCap: 100}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if res, err = eng.Tick(ctx, ev.ID, "r1", lease); err != nil || !res.Ran || res.Promoted != batch {
		t.Fatalf("tick after reserve %+v, %v; want %d promoted", res, err, batch)
	}
	for j, tok := range tokens {
		if en := MustStatus(t, eng, ev.ID, tok); en.Status != queue.StatusActive || en.AdmissionNo != int64(j+1) {
			t.Fatalf("u_%d: %s, admission %d; want ACTIVE, %d", j+1, en.Status, en.AdmissionNo, j+1)
		}
	}
}
