package engine

import (
	mrand "math/rand/v2"
	"testing"

	"github.com/rushline/rushline/simulator/scenario"
)

func TestPick(t *testing.T) {
	seats := func(taken ...bool) seatsAnswer {
		var m seatsAnswer
		for i, tk := range taken {
			m.Seats = append(m.Seats, struct {
				ID    string `json:"id"`
				Taken bool   `json:"taken"`
			}{ID: string(rune('a' + i)), Taken: tk})
		}
		return m
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	cases := []struct {
		name string
		how  string
		want string
		m    seatsAnswer
		got  string
	}{
		{"best takes the first free", scenario.SeatBest, "", seats(true, false, false), "b"},
		{"fixed takes its seat even when later", scenario.SeatFixed, "c", seats(false, false, false), "c"},
		{"fixed falls back to best when taken", scenario.SeatFixed, "a", seats(true, false, false), "b"},
		{"none free", scenario.SeatRandom, "", seats(true, true), ""},
		{"random with one free", scenario.SeatRandom, "", seats(true, false, true), "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pick(rng, tc.how, tc.want, tc.m); got != tc.got {
				t.Fatalf("pick = %q, want %q", got, tc.got)
			}
		})
	}
	// Random spreads over the free seats.
	counts := map[string]int{}
	for range 3000 {
		counts[pick(rng, scenario.SeatRandom, "", seats(false, true, false, false))]++
	}
	for _, id := range []string{"a", "c", "d"} {
		if counts[id] < 800 || counts[id] > 1200 {
			t.Fatalf("random picks %v: not spread evenly", counts)
		}
	}
}
