package push_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rushline/rushline/server/push"
)

// BenchmarkFanOut measures one promotion's trip to every subscriber: the
// admission tick, the hub reading the stream, and its tick pushing the new
// place to all n subscribers, which take it the way a connection would.
// ns/sub is that time shared out per subscriber.
func BenchmarkFanOut(b *testing.B) {
	addr := MustRedis(b)
	a := MustAdmin(b, addr)
	runs := 0
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			runs++
			ev := a.MustEvent(b, fmt.Sprintf("fan-%d", runs))
			// b.N unsubscribed users ahead of the subscribers: each op promotes one.
			a.MustJoinN(b, ev.ID, "head", b.N, 8)
			ens := a.MustJoinN(b, ev.ID, "sub", n, 8)
			// A tick after every stream read, pushing to every subscriber: a
			// tick skipped as too early would wait out a whole blocking read
			// (push.DefaultBlock), a subscriber skipped its turn.
			k := MustHub(b, addr, push.WithTick(time.Nanosecond), push.WithPositionEvery(time.Nanosecond),
				push.WithCorrections(push.DefaultCorrectBatch, time.Hour))
			defer k.Close()
			subs := k.MustSubscribeAll(b, ev.ID, ens, 8)
			k.spy.WaitPushed(b, ev.ID, a.MustLastID(b, ev.ID), 1)
			want := make([]int64, n)
			for i, en := range ens {
				want[i] = a.MustStatus(b, ev.ID, en).Position
				subs[i].Take()
			}
			ev.AdmitBatch, ev.Paused = 1, false
			ctx := context.Background()
			if err := a.eng.PutEvent(ctx, ev); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				a.clk.Advance(time.Second)
				if res, err := a.eng.Tick(ctx, ev.ID, "r1", time.Minute); err != nil || res.Promoted != 1 {
					b.Fatalf("tick: %+v, %v", res, err)
				}
				for i, s := range subs {
					want[i]--
					for {
						<-s.Notify()
						if u, _, _ := s.Take(); u != nil && u.Position == want[i] {
							break
						}
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sub")
		})
	}
}
