package queue_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/queue"
)

// TestValidIDs: event ids, bot ids and priority codes are 1–64 bytes of
// their alphabets, checked byte by byte; a regexp of the same rule agrees on
// every case and on many random strings.
func TestValidIDs(t *testing.T) {
	checks := []struct {
		name  string
		valid func(string) bool
		rule  *regexp.Regexp
	}{
		{"event id", queue.ValidEventID, regexp.MustCompile(`^[a-z0-9-]{1,64}$`)},
		{"bot id", queue.ValidBotID, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)},
		{"priority code", queue.ValidPriorityCode, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)},
	}
	cases := []struct {
		name string
		s    string
	}{
		{"empty", ""},
		{"one letter", "a"},
		{"64 bytes", strings.Repeat("a", 64)},
		{"65 bytes", strings.Repeat("a", 65)},
		{"dash and digits", "drop-2026"},
		{"capitals", "Drop"},
		{"dot and underscore", "bot_1.x"},
		{"space", "a b"},
		{"line break", "a\n"},
		{"non-ASCII", "좌석"},
		{"NUL", "a\x00"},
	}
	for _, c := range checks {
		for _, tc := range cases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				if got, want := c.valid(tc.s), c.rule.MatchString(tc.s); got != want {
					t.Errorf("%q: %v, want %v", tc.s, got, want)
				}
			})
		}
		t.Run(c.name+"/random", func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			const alphabet = "azAZ09_.- \n\x00\xff-"
			for range 20_000 {
				b := make([]byte, r.IntN(67))
				for i := range b {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
				s := string(b)
				if got, want := c.valid(s), c.rule.MatchString(s); got != want {
					t.Fatalf("%q: %v, want %v", s, got, want)
				}
			}
		})
	}
}
