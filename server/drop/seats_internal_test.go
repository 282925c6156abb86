package drop

import (
	"math/rand/v2"
	"testing"

	"github.com/rushline/rushline/server/queue"
)

// TestSeatMapUnmark: a seat a run marked and then did not sell is free
// again, the best free seat once more, and counts as unsold.
func TestSeatMapUnmark(t *testing.T) {
	const n = 100
	m := newSeatMap(n)
	r := rand.New(rand.NewPCG(1, 2))
	var picked []string
	for range n {
		seat, ok := m.pick(r)
		if !ok {
			t.Fatalf("no free seat after %d picks of %d", len(picked), n)
		}
		m.mark(seat)
		picked = append(picked, seat)
	}
	if !m.full() {
		t.Fatal("every seat marked, map not full")
	}
	if _, ok := m.pick(r); ok {
		t.Fatal("picked a seat from a full map")
	}
	first := queue.SeatID(n, 0)
	m.unmark(first)
	m.unmark(first) // twice counts once
	m.unmark("Z-999")
	if m.full() || m.sold != n-1 {
		t.Fatalf("after one unmark: full %v, sold %d; want %d", m.full(), m.sold, n-1)
	}
	if seat, ok := m.pick(r); !ok || seat != first {
		t.Fatalf("pick after unmark = %q, %v; want %q", seat, ok, first)
	}
}
