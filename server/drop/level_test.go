package drop_test

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/simulator/scenario"
)

// reactionQuantile inverts a level's reaction CDF by bisection.
func reactionQuantile(b drop.Behaviour, q float64) time.Duration {
	lo, hi := time.Duration(0), time.Hour
	for hi-lo > 10*time.Microsecond {
		m := (lo + hi) / 2
		if b.ReactionCDF(m) < q {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// TestLevelTable: the level table of scenarios/README.md gives each level's
// reaction p50 / p90 / p99 (seconds, two decimals) and macro share as the
// code has them.
func TestLevelTable(t *testing.T) {
	raw, err := os.ReadFile("../../scenarios/README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[drop.Level][]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) < 5 {
			continue
		}
		name := drop.Level(strings.Trim(strings.TrimSpace(cells[0]), "`"))
		if name.Valid() {
			rows[name] = cells
		}
	}
	for _, l := range drop.Levels {
		t.Run(string(l), func(t *testing.T) {
			cells, ok := rows[l]
			if !ok {
				t.Fatalf("scenarios/README.md has no table row for level %s", l)
			}
			b, _ := l.Behaviour()
			for i, q := range []float64{0.5, 0.9, 0.99} {
				want := fmt.Sprintf("%.2f s", reactionQuantile(b, q).Seconds())
				if got := strings.TrimSpace(cells[1+i]); got != want {
					t.Errorf("reaction p%g: README says %q, the code gives %q", q*100, got, want)
				}
			}
			share, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(cells[4]), "%"), 64)
			if err != nil || math.Abs(share/100-b.MacroShare) > 1e-9 {
				t.Errorf("macro share: README says %q, the code has %g", cells[4], b.MacroShare)
			}
		})
	}
}

// TestLevelsGetHarder: each level's crowd reacts faster than the one
// before it, at the median and at the fast end.
func TestLevelsGetHarder(t *testing.T) {
	for i := 1; i < len(drop.Levels); i++ {
		easier, _ := drop.Levels[i-1].Behaviour()
		harder, _ := drop.Levels[i].Behaviour()
		for _, q := range []float64{0.01, 0.5, 0.9} {
			if e, h := reactionQuantile(easier, q), reactionQuantile(harder, q); h >= e {
				t.Errorf("%s p%g = %v, not faster than %s's %v", drop.Levels[i], q*100, h, drop.Levels[i-1], e)
			}
		}
	}
	if drop.Level("expert").Valid() {
		t.Error(`Level("expert").Valid() = true`)
	}
	if _, ok := drop.Level("expert").Behaviour(); ok {
		t.Error(`Level("expert").Behaviour() found figures`)
	}
}

// TestStepTable: the step table of scenarios/README.md gives each level's
// person's and the macros' median / p90 at every order step as the code has
// them.
func TestStepTable(t *testing.T) {
	raw, err := os.ReadFile("../../scenarios/README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "| "), "|")
		if len(cells) == len(scenario.StepOrder)+1 {
			rows[strings.ReplaceAll(strings.TrimSpace(cells[0]), "`", "")] = cells[1:]
		}
	}
	secs := func(d scenario.Duration) string {
		return strconv.FormatFloat(time.Duration(d).Seconds(), 'f', -1, 64) + " s"
	}
	check := func(row string, figs map[string]scenario.Dist) {
		cells, ok := rows[row]
		if !ok {
			t.Fatalf("scenarios/README.md has no step table row %q", row)
		}
		for i, step := range scenario.StepOrder {
			d, ok := figs[step]
			if !ok {
				t.Errorf("%s: the code has no figure for step %s", row, step)
				continue
			}
			if want, got := secs(d.Median)+" / "+secs(d.P90), strings.TrimSpace(cells[i]); got != want {
				t.Errorf("%s, %s: README says %q, the code has %q", row, step, got, want)
			}
		}
	}
	for _, l := range drop.Levels {
		b, _ := l.Behaviour()
		check(string(l)+" person", b.Steps)
		if b.MacroShare > 0 {
			check("macro", b.MacroSteps)
		}
	}
}
