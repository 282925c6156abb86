package store_test

import (
	"testing"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store/storetest"
)

func TestMaxSeq(t *testing.T) {
	tests := []struct {
		name    string
		records []queue.Record
		event   string
		want    int64
	}{
		{"no entries", nil, "ev1", 0},
		{"highest seq of the event", lifecycle(), "ev1", 4},
		{"other events do not count", lifecycle(), "ev2", 0},
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := t.Context()
					s := storetest.MustOpen(t, dialect)
					mustWrite(t, ctx, s, tt.records)
					got, err := s.MaxSeq(ctx, tt.event)
					if err != nil {
						t.Fatalf("MaxSeq(%s): %v", tt.event, err)
					}
					if got != tt.want {
						t.Errorf("MaxSeq(%s) = %d, want %d", tt.event, got, tt.want)
					}
				})
			}
		})
	}
}
