package practice

import (
	"slices"
	"testing"
)

func TestEmbeddedScenariosOffered(t *testing.T) {
	s, err := New(nil, nil, nil, "http://127.0.0.1:1", "key")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range s.Scenarios() {
		names = append(names, sc.Name)
		if sc.Bots > MaxBots || sc.Seats > MaxSeats || sc.OpensInS < int(DefaultOpensIn.Seconds()) {
			t.Errorf("%s is offered with %d bots, %d seats, opening after %d s", sc.Name, sc.Bots, sc.Seats, sc.OpensInS)
		}
	}
	for _, want := range []string{"practice-small", "practice-2k"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not offered: %v", want, names)
		}
	}
	// A million seats would make the person's seat map a 30 MB page.
	if slices.Contains(names, "closed-soak") {
		t.Errorf("closed-soak is offered: %v", names)
	}
	if !slices.IsSorted(names) {
		t.Errorf("not sorted by name: %v", names)
	}
}
