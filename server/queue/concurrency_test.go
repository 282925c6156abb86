package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

func TestParallelJoinsOneUser(t *testing.T) {
	eng, _, _ := MustEngine(t)
	ev := MustEvent(t, eng, "double-click", func(e *queue.Event) { e.Paused = true })
	MustJoin(t, eng, ev.ID, "u_first")
	var (
		wg      sync.WaitGroup
		created atomic.Int32
		mu      sync.Mutex
		tokens  = map[string]int{}
	)
	for range 50 {
		wg.Go(func() {
			en, isNew, err := eng.Join(context.Background(), ev.ID, "u_clicker")
			if err != nil {
				t.Error(err)
				return
			}
			if isNew {
				created.Add(1)
			}
			mu.Lock()
			tokens[en.Token]++
			mu.Unlock()
		})
	}
	wg.Wait()
	st, _ := eng.Stats(context.Background(), ev)
	if created.Load() != 1 || len(tokens) != 1 || st.Waiting != 2 {
		t.Fatalf("created %d, tokens %d, waiting %d; want 1, 1, 2", created.Load(), len(tokens), st.Waiting)
	}
}

func TestConcurrentJoinsKeepFIFO(t *testing.T) {
	const n = 5000
	eng, clk, _ := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "rush", func(e *queue.Event) {
		e.Policy, e.AdmitBatch, e.Paused = queue.PolicyBatch, 700, true
	})
	positions := make([]int64, n)
	seqs := make([]int64, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			en, _, err := eng.Join(ctx, ev.ID, fmt.Sprintf("u_%05d", i))
			if err != nil {
				t.Error(err)
				return
			}
			positions[i], seqs[i] = en.Position, en.Seq
		})
	}
	wg.Wait()
	seen := make([]bool, n+1)
	for i, p := range positions {
		if p < 1 || p > n || seen[p] {
			t.Fatalf("user %d got position %d (duplicate or out of range)", i, p)
		}
		seen[p] = true
	}
	// Positions follow the Redis-side arrival sequence exactly.
	for i := range n {
		for j := i + 1; j < min(i+50, n); j++ {
			if (seqs[i] < seqs[j]) != (positions[i] < positions[j]) {
				t.Fatalf("users %d and %d: seq order and position order disagree", i, j)
			}
		}
	}
	ev.Paused = false
	if err := eng.PutEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for {
		res := MustTick(t, eng, ev.ID)
		clk.Advance(100 * time.Millisecond)
		if res.Waiting == 0 {
			break
		}
	}
	var last int64
	admitted := 0
	for _, r := range MustRecords(t, eng, ev.ID) {
		if r.Kind != queue.RecordAdmitted {
			continue
		}
		if r.Seq <= last {
			t.Fatalf("FIFO inversion: seq %d admitted after %d", r.Seq, last)
		}
		last = r.Seq
		admitted++
	}
	if admitted != n {
		t.Fatalf("admitted %d, want %d", admitted, n)
	}
}

func TestBuyersRaceForSeats(t *testing.T) {
	const buyers, seats = 500, 20
	eng, _, _ := MustEngine(t)
	ctx := context.Background()
	ev := MustEvent(t, eng, "race", func(e *queue.Event) { e.Seats, e.Capacity = seats, buyers })
	tokens := make([]string, buyers)
	for i := range buyers {
		en := MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%03d", i))
		if en.Status != queue.StatusActive {
			t.Fatalf("buyer %d is %s", i, en.Status)
		}
		tokens[i] = en.Token
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sold = map[string]string{}
	)
	for i := range buyers {
		wg.Go(func() {
			actor := queue.Actor{UserID: fmt.Sprintf("u_%03d", i)}
			for s := range seats {
				seat := queue.SeatID(seats, (i+s)%seats)
				o, err := eng.Order(ctx, ev, tokens[i], seat, actor)
				var qe *queue.Error
				switch {
				case err == nil:
					mu.Lock()
					if prev, dup := sold[seat]; dup {
						t.Errorf("seat %s sold to %s and %s", seat, prev, o.UserID)
					}
					sold[seat] = o.UserID
					mu.Unlock()
					return
				case errors.As(err, &qe) && qe.Code == queue.CodeSeatTaken:
					continue
				case errors.As(err, &qe) && qe.Code == queue.CodeSoldOut:
					return
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st, _ := eng.Stats(ctx, ev)
	if len(sold) != seats || st.Sold != seats || st.SeatsLeft != 0 {
		t.Fatalf("sold %d orders, stats sold %d left %d; want %d", len(sold), st.Sold, st.SeatsLeft, seats)
	}
	done := 0
	for _, r := range MustRecords(t, eng, ev.ID) {
		if r.Kind == queue.RecordDone {
			done++
		}
	}
	if done != seats {
		t.Fatalf("%d done records, want %d", done, seats)
	}
}
