package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/steps"
	"github.com/rushline/rushline/server/store/storetest"
)

// TestPressesKeptPerPerson: a person's presses past steps.MaxPressesKept
// drop off oldest first, even saved at once from many goroutines, and
// another person's standing counts only the kept ones.
func TestPressesKeptPerPerson(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			s := storetest.MustOpen(t, dialect)
			ctx := context.Background()
			t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
			press := func(user string, i int, off time.Duration) {
				t.Helper()
				p := steps.Press{UserID: user, Target: t0.Add(time.Duration(i) * time.Second), Offset: off,
					At: t0.Add(time.Duration(i)*time.Second + off)}
				if err := s.SavePress(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			// u1's first five presses are nearly perfect, the rest far off:
			// once they drop off, every kept press of u1 is worse than 100 ms.
			for i := range 5 {
				press("u1", i, time.Millisecond)
			}
			var wg sync.WaitGroup
			for g := range 5 {
				wg.Go(func() {
					for i := range steps.MaxPressesKept / 5 {
						press("u1", 5+g*1000+i, 4*time.Second)
					}
				})
			}
			wg.Wait()
			press("u2", 0, 100*time.Millisecond)
			st, err := s.PressStanding(ctx, "u2", 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if want := (steps.PressStanding{Others: steps.MaxPressesKept, Worse: steps.MaxPressesKept}); st != want {
				t.Errorf("u2's standing %+v, want %+v: u1's oldest presses kept", st, want)
			}
			st, err = s.PressStanding(ctx, "u1", 4*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(st) != fmt.Sprint(steps.PressStanding{Others: 1, Worse: 0}) {
				t.Errorf("u1's standing %+v, want u2's one press, not worse", st)
			}
		})
	}
}
