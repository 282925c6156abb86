package didyoumean_test

import (
	"testing"

	"github.com/rushline/rushline/internal/didyoumean"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want int
	}{
		{"same", "target", "target", 0},
		{"one replaced", "targat", "target", 1},
		{"one missing", "trget", "target", 1},
		{"one extra", "targett", "target", 1},
		{"neighbours swapped", "tagret", "target", 1},
		{"empty", "", "abc", 3},
		{"unrelated", "port", "addr", 4},
		{"too long to bother", string(make([]byte, 65)), "a", 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := didyoumean.Distance(tc.a, tc.b); got != tc.want {
				t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typed      string
		candidates []string
		want       string
	}{
		{"nearest wins", "seet", []string{"seed", "seats", "set"}, "seed"},
		{"ties go to the first name", "ab", []string{"ac", "aa"}, "aa"},
		{"two edits still count", "concrt-rsh", []string{"concert-rush"}, "concert-rush"},
		{"three edits are too many", "cncrt-rsh", []string{"concert-rush"}, ""},
		{"no candidates", "x", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := didyoumean.Closest(tc.typed, tc.candidates...); got != tc.want {
				t.Errorf("Closest(%q, %v) = %q, want %q", tc.typed, tc.candidates, got, tc.want)
			}
		})
	}
}
