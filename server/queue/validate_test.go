package queue_test

import (
	"iter"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/queue"
)

// TestValidIDs: event ids, bot ids and priority codes are 1–64 bytes of
// their alphabets, checked byte by byte; a regexp of the same rule agrees on
// every case, on every byte value in every place of short strings and of
// strings at and just past the longest, and on many random strings.
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
		for _, g := range byteStrings() {
			t.Run(c.name+"/"+g.name, func(t *testing.T) {
				for s := range g.strings {
					if got, want := c.valid(s), c.rule.MatchString(s); got != want {
						t.Fatalf("%q: %v, want %v", s, got, want)
					}
				}
			})
		}
	}
}

// byteStrings are sets of strings over all 256 byte values: every string of
// one and of two bytes, every byte in every place of a 64- and a 65-byte
// string of an otherwise valid letter, random strings of random bytes, and
// random valid strings with one random byte put in.
func byteStrings() []struct {
	name    string
	strings iter.Seq[string]
} {
	const longest = 64
	// placed yields each byte value in each place of n bytes of 'a'.
	placed := func(n int) iter.Seq[string] {
		return func(yield func(string) bool) {
			b := []byte(strings.Repeat("a", n))
			for i := range b {
				for v := range 256 {
					b[i] = byte(v)
					if !yield(string(b)) {
						return
					}
				}
				b[i] = 'a'
			}
		}
	}
	return []struct {
		name    string
		strings iter.Seq[string]
	}{
		{"every byte", placed(1)},
		{"every two bytes", func(yield func(string) bool) {
			for v := range 256 * 256 {
				if !yield(string([]byte{byte(v >> 8), byte(v)})) {
					return
				}
			}
		}},
		{"every byte in 64 bytes", placed(longest)},
		{"every byte in 65 bytes", placed(longest + 1)},
		{"random bytes", func(yield func(string) bool) {
			r := rand.New(rand.NewPCG(1, 2))
			for range 20_000 {
				b := make([]byte, r.IntN(longest+3))
				for i := range b {
					b[i] = byte(r.IntN(256))
				}
				if !yield(string(b)) {
					return
				}
			}
		}},
		{"a random byte among valid ones", func(yield func(string) bool) {
			r := rand.New(rand.NewPCG(3, 4))
			const valid = "az09-"
			for range 20_000 {
				b := make([]byte, 1+r.IntN(longest+2))
				for i := range b {
					b[i] = valid[r.IntN(len(valid))]
				}
				b[r.IntN(len(b))] = byte(r.IntN(256))
				if !yield(string(b)) {
					return
				}
			}
		}},
	}
}

// TestUserIDLength: the longest user id joins and its token opens; one byte
// more is refused at the door instead of joining with a token that could
// never be read.
func TestUserIDLength(t *testing.T) {
	eng, _, _ := MustEngine(t)
	MustEvent(t, eng, "ids", nil)
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
	}{
		{"the longest", strings.Repeat("u", queue.MaxUserID), true},
		{"multibyte, a byte short of it", strings.Repeat("좌", queue.MaxUserID/3), true},
		{"one byte past it", strings.Repeat("u", queue.MaxUserID+1), false},
		{"a line break", "a\nb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			en, _, err := eng.Join(t.Context(), "ids", tc.id)
			if !tc.ok {
				if queue.ErrorCode(err) != queue.CodeBadRequest {
					t.Fatalf("Join = %v, want %s", err, queue.CodeBadRequest)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st := MustStatus(t, eng, "ids", en.Token); st.UserID != tc.id || st.Seq != en.Seq {
				t.Errorf("status of the token: user %d bytes, seq %d; want %d bytes, seq %d", len(st.UserID), st.Seq, len(tc.id), en.Seq)
			}
		})
	}
}
