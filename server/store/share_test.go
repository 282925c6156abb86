package store_test

import (
	"testing"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store/storetest"
)

// TestPriorityShareColumnDefault: an event stored without a priority share
// gets the default, never 0 (which would put FAST TRACK behind everyone).
func TestPriorityShareColumnDefault(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			s := storetest.MustOpen(t, dialect)
			ev := testEvent("noshare", t0)
			ev.PriorityShare = 0
			if err := s.CreateEvent(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			got, err := s.Event(t.Context(), "noshare")
			if err != nil || got.PriorityShare != queue.DefaultPriorityShare {
				t.Fatalf("stored share %v (%v), want %v", got.PriorityShare, err, queue.DefaultPriorityShare)
			}
		})
	}
}
