package queue

import (
	"strings"
	"testing"
)

// TestTokenRoundTrip mints and opens tokens whose user ids fit Mint's stack
// buffer, just fill it, and outgrow it; a token opens only for its event and
// unchanged.
func TestTokenRoundTrip(t *testing.T) {
	c := newTokenCodec([]byte("token-key"))
	for _, tc := range []struct {
		name string
		seq  int64
		user string
	}{
		{"short id", 1, "VIRTUAL:j1"},
		{"id that fills the stack buffer", 1 << 40, strings.Repeat("u", 64)},
		{"id one byte past it", 7, strings.Repeat("u", 65)},
		{"long id", 1 << 53, strings.Repeat("ü", 40_000)},
		{"binary id", 99, "\x00\xff."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := c.Mint("e1", tc.seq, tc.user)
			seq, user, ok := c.Open("e1", tok)
			if len(tok) <= 512 && (!ok || seq != tc.seq || user != tc.user) {
				t.Fatalf("Open(Mint) = %d, %q, %v; want %d, %q, true", seq, user, ok, tc.seq, tc.user)
			}
			if len(tok) > 512 && ok {
				t.Fatalf("a token of %d bytes opened; Open takes at most 512", len(tok))
			}
			if _, _, ok := c.Open("e2", tok); ok {
				t.Fatal("a token opened for another event")
			}
			i := strings.IndexByte(tok, '.') - 1
			flip := byte('A')
			if tok[i] == 'A' {
				flip = 'B'
			}
			if _, _, ok := c.Open("e1", tok[:i]+string(flip)+tok[i+1:]); ok {
				t.Fatal("a token with a changed payload opened")
			}
			if again := c.Mint("e1", tc.seq, tc.user); again != tok {
				t.Fatalf("Mint is not deterministic: %q then %q", tok, again)
			}
		})
	}
}
