package scenarios_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/simulator/scenario"
)

func TestEveryFileParsesAndIsNamedAfterItsFile(t *testing.T) {
	names := scenarios.Names()
	for _, want := range []string{"practice-small", "practice-2k", "concert-rush"} {
		if !slices.Contains(names, want) {
			t.Fatalf("Names() = %v, want it to hold %s", names, want)
		}
	}
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	for i, sc := range all {
		if sc.Name != names[i] {
			t.Errorf("file %s.yaml names its scenario %q", names[i], sc.Name)
		}
	}
}

func TestPractice2kIsTheIssueTarget(t *testing.T) {
	sc, err := scenarios.Load("practice-2k")
	if err != nil {
		t.Fatal(err)
	}
	var bots float64
	for _, p := range sc.Phases {
		bots += p.ExpectedArrivals()
	}
	if bots < 1900 || bots > 2100 || sc.Event.Create == nil || sc.Event.Create.Seats != 500 {
		t.Errorf("practice-2k: %.0f bots, event %+v; want about 2,000 bots for 500 seats", bots, sc.Event.Create)
	}
}

func TestLoadRefusesUnknownNames(t *testing.T) {
	for _, name := range []string{
		"no-such-scenario", // not a file
		"../go",            // outside the folder
		"",                 // empty
	} {
		if _, err := scenarios.Load(name); !errors.Is(err, scenarios.ErrUnknown) {
			t.Errorf("Load(%q) = %v, want ErrUnknown", name, err)
		}
	}
}

func TestLoadReturnsFreshCopies(t *testing.T) {
	a, err := scenarios.Load("practice-small")
	if err != nil {
		t.Fatal(err)
	}
	a.Event.Create.Seats = 1
	b, err := scenarios.Load("practice-small")
	if err != nil {
		t.Fatal(err)
	}
	if b.Event.Create.Seats == 1 {
		t.Error("a change to one loaded scenario showed in the next")
	}
}

// TestScenariosAreRaces: no scenario offers more seats than it has bots
// (a closed model's count depends on the run), and the practice scenarios
// ask for the order steps.
func TestScenariosAreRaces(t *testing.T) {
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		closed := slices.ContainsFunc(sc.Phases, func(p scenario.Phase) bool { return p.ExpectedArrivals() < 0 })
		if seats := sc.Event.Create.Seats; !closed && seats > sc.PlannedBots() {
			t.Errorf("%s: %d seats for %d bots: no race", sc.Name, seats, sc.PlannedBots())
		}
		if strings.HasPrefix(sc.Name, "practice") && len(sc.Steps) == 0 {
			t.Errorf("%s: a practice scenario without order steps", sc.Name)
		}
	}
}
