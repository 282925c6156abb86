package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// TestAdaptiveLoadFromOwnOrders: with no figure ever reported, the adaptive
// batch follows the orders per second rushline's own order endpoint took
// since the last tick.
func TestAdaptiveLoadFromOwnOrders(t *testing.T) {
	eng, clk, _ := MustEngine(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		orders int // completed in the one-second interval before the tick
		want   int
	}{
		// No orders: the full batch of 11.
		{name: "idle", orders: 0, want: 11},
		// 5 orders/s of max_tps 10: halfway, 6.
		{name: "half", orders: 5, want: 6},
		// 10 orders/s: saturated, 1.
		{name: "at max_tps", orders: 10, want: 1},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := MustEvent(t, eng, fmt.Sprintf("own-%d", i), func(e *queue.Event) {
				e.Policy, e.MaxTPS, e.AdmitBatch, e.Capacity, e.AdmitIntervalMS, e.Seats = queue.PolicyAdaptive, 10, 11, 1000, 1000, 100
			})
			for j := range 40 {
				MustJoin(t, eng, ev.ID, fmt.Sprintf("u_%d", j))
			}
			// The first tick admits a full batch and sets the order baseline.
			first := MustTick(t, eng, ev.ID)
			if first.Promoted != 11 || first.Load != 0 {
				t.Fatalf("first tick %+v", first)
			}
			recs := MustRecords(t, eng, ev.ID)
			n := 0
			for _, r := range recs {
				if r.Kind != queue.RecordAdmitted || n == tc.orders {
					continue
				}
				tok := MustJoin(t, eng, ev.ID, r.UserID).Token // the live attempt's token
				if _, err := eng.Order(ctx, ev, tok, queue.SeatID(ev.Seats, n), queue.Actor{UserID: r.UserID}); err != nil {
					t.Fatal(err)
				}
				n++
			}
			clk.Advance(time.Second)
			res := MustTick(t, eng, ev.ID)
			if res.Load != float64(tc.orders) || res.Room != tc.want || res.Promoted != tc.want {
				t.Fatalf("tick %+v, want load %d and %d promoted", res, tc.orders, tc.want)
			}
		})
	}
}
