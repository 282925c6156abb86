package drop_test

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/simulator/scenario"
)

// instant is a scenario whose whole crowd is there at the opening (a spike
// over 1 ms), so join times are the level's reactions alone.
func instant() *scenario.Scenario {
	return &scenario.Scenario{Name: "instant", Seed: 1, Phases: []scenario.Phase{
		{Name: "all", Arrival: scenario.ArrivalSpike, Users: 100, Over: scenario.Duration(time.Millisecond),
			Duration: scenario.Duration(time.Millisecond)},
	}}
}

// MustPlan plans a crowd or fails the test.
func MustPlan(tb testing.TB, sc *scenario.Scenario, level drop.Level, size int, seed uint64) *drop.Plan {
	tb.Helper()
	p, err := drop.NewPlan(sc, level, size, seed)
	if err != nil {
		tb.Fatalf("NewPlan(%s, %s, %d): %v", sc.Name, level, size, err)
	}
	return p
}

// TestPlanFollowsTheLevel: with everyone there at the opening, the crowd's
// join times have the level's reaction quantiles, its macro share, and its
// people's think median.
func TestPlanFollowsTheLevel(t *testing.T) {
	const n = 20_000
	for _, l := range drop.Levels {
		t.Run(string(l), func(t *testing.T) {
			b, _ := l.Behaviour()
			p := MustPlan(t, instant(), l, n, 7)
			for _, q := range []float64{0.1, 0.5, 0.9, 0.99} {
				got, want := p.Offset(int(q*n)), reactionQuantile(b, q)
				if math.Abs(float64(got-want)) > 0.02*float64(want)+float64(time.Millisecond) {
					t.Errorf("p%g join at %v, level's reaction p%g is %v", q*100, got, q*100, want)
				}
			}
			macros := 0
			var thinks []time.Duration
			for k := range n {
				u := p.User(k)
				if u.Macro {
					macros++
				} else {
					thinks = append(thinks, u.Think)
				}
			}
			if got := float64(macros) / n; math.Abs(got-b.MacroShare) > 0.004 {
				t.Errorf("macro share %.4f, level says %.4f", got, b.MacroShare)
			}
			slices.Sort(thinks)
			med, want := thinks[len(thinks)/2], time.Duration(b.Think.Median)
			if math.Abs(float64(med-want)) > 0.05*float64(want) {
				t.Errorf("people's think median %v, level says %v", med, want)
			}
		})
	}
}

// TestPlanOrder: join times never go down with the index, Due counts the
// users joined by a time, and the last user joins within the plan.
func TestPlanOrder(t *testing.T) {
	sc, err := scenarios.Load("concert-rush")
	if err != nil {
		t.Fatal(err)
	}
	const n = 50_000
	p := MustPlan(t, sc, drop.LevelHard, n, 42)
	prev := time.Duration(-1)
	for k := range n {
		at := p.Offset(k)
		if at < prev {
			t.Fatalf("user %d joins at %v, before user %d at %v", k, at, k-1, prev)
		}
		prev = at
	}
	if prev < sc.TotalDuration()/2 {
		t.Errorf("the last user joins at %v: the arrival curve (%v) is lost", prev, sc.TotalDuration())
	}
	for _, k := range []int{0, 1, 999, 25_000, n - 1} {
		at := p.Offset(k)
		if due := p.Due(at); due < k+1 {
			t.Errorf("Due(%v) = %d, but user %d joins then", at, due, k)
		}
		if at > 0 {
			if due := p.Due(at - 1); due > k {
				t.Errorf("Due(just before user %d's %v) = %d, want at most %d", k, at, due, k)
			}
		}
	}
	if got := p.Due(-time.Second); got != 0 {
		t.Errorf("Due before the opening = %d", got)
	}
	if got := p.Due(time.Hour); got != n {
		t.Errorf("Due after an hour = %d, want %d", got, n)
	}
	// The opening spike holds 4,000 of 5,000 expected arrivals over 3 s.
	if got := float64(p.Due(3*time.Second+time.Second)) / n; got < 0.6 || got > 0.95 {
		t.Errorf("%.2f joined by 4 s; the spike brings 80%% by 3 s plus reactions", got)
	}
	if got, want := p.ReactionQuantile(n, 0.5), p.Offset(n/2); got != want {
		t.Errorf("ReactionQuantile(all, 0.5) = %v, want user %d's %v", got, n/2, want)
	}
	if got := p.ReactionQuantile(0, 0.5); got != 0 {
		t.Errorf("ReactionQuantile with none joined = %v", got)
	}
}

// TestPlanDeterministic: the same drop gives the same users on every
// replica; another seed gives others.
func TestPlanDeterministic(t *testing.T) {
	sc, err := scenarios.Load("concert-rush")
	if err != nil {
		t.Fatal(err)
	}
	a := MustPlan(t, sc, drop.LevelNormal, 1000, 9)
	b := MustPlan(t, sc, drop.LevelNormal, 1000, 9)
	c := MustPlan(t, sc, drop.LevelNormal, 1000, 10)
	differ := 0
	for k := range 1000 {
		if !reflect.DeepEqual(a.User(k), b.User(k)) {
			t.Fatalf("user %d: %+v vs %+v from the same plan", k, a.User(k), b.User(k))
		}
		if a.User(k).Think != c.User(k).Think {
			differ++
		}
	}
	if differ < 900 {
		t.Errorf("only %d of 1000 think times differ under another seed", differ)
	}
}

// TestPlanNeedsArrivals: a closed-model scenario has no arrival curve.
func TestPlanNeedsArrivals(t *testing.T) {
	sc := &scenario.Scenario{Name: "closed", Phases: []scenario.Phase{
		{Arrival: scenario.ArrivalClosed, Concurrency: 10, Duration: scenario.Duration(time.Minute)}}}
	if _, err := drop.NewPlan(sc, drop.LevelEasy, 10, 1); !errors.Is(err, drop.ErrNoArrivals) {
		t.Errorf("NewPlan(closed) = %v, want ErrNoArrivals", err)
	}
	if _, err := drop.NewPlan(instant(), "expert", 10, 1); err == nil {
		t.Error("NewPlan with an unknown level succeeded")
	}
}
