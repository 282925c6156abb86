package scenario_test

import (
	"testing"

	"github.com/rushline/rushline/simulator/scenario"
)

func TestValidSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []string
		ok    bool
	}{
		// no steps: one order call
		{"none", nil, true},
		// every step, in order
		{"all", []string{"date", "captcha", "grade", "seat", "confirm", "payment"}, true},
		// the least: pick, then buy
		{"seat and confirm", []string{"seat", "confirm"}, true},
		// nothing after the seat to buy it with
		{"seat last", []string{"captcha", "seat"}, false},
		// no seat at all
		{"no seat", []string{"date", "captcha", "payment"}, false},
		// out of order
		{"captcha after seat", []string{"seat", "captcha", "payment"}, false},
		// twice
		{"twice", []string{"seat", "confirm", "confirm"}, false},
		// unknown
		{"unknown", []string{"seat", "dance"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := scenario.ValidSteps(tc.steps); (err == nil) != tc.ok {
				t.Errorf("ValidSteps(%v) = %v, want ok %v", tc.steps, err, tc.ok)
			}
		})
	}
}

func TestParseSteps(t *testing.T) {
	base := "name: s\nevent: {create: {seats: 10, capacity: 5, admit_batch: 5}}\nphases: [{name: p, arrival: spike, users: 20, over: 1s}]\n" +
		"bots: [{name: b, reaction: 1s, think: 1s}]\n"
	sc, err := scenario.Parse([]byte(base + "steps: [captcha, seat, confirm]\n"))
	if err != nil || len(sc.Steps) != 3 || sc.Steps[0] != "captcha" {
		t.Fatalf("Parse: %+v %v", sc, err)
	}
	if _, err := scenario.Parse([]byte(base + "steps: [seat]\n")); err == nil {
		t.Error("Parse took steps with nothing after the seat")
	}
}
