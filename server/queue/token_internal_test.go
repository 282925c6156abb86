package queue

import (
	"bytes"
	"encoding/base64"
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
			if again := c.Mint("e1", tc.seq, tc.user); again != tok {
				t.Fatalf("Mint is not deterministic: %q then %q", tok, again)
			}
			seq, user, ok := c.Open("e1", tok)
			if len(tok) > 512 {
				if ok {
					t.Fatalf("a token of %d bytes opened; Open takes at most 512", len(tok))
				}
				return
			}
			if !ok || seq != tc.seq || user != tc.user {
				t.Fatalf("Open(Mint) = %d, %q, %v; want %d, %q, true", seq, user, ok, tc.seq, tc.user)
			}
			if _, _, ok := c.Open("e2", tok); ok {
				t.Fatal("a token opened for another event")
			}
			// The first character carries six bits of the payload's first byte.
			flip := byte('A')
			if tok[0] == 'A' {
				flip = 'B'
			}
			if _, _, ok := c.Open("e1", string(flip)+tok[1:]); ok {
				t.Fatal("a token with a changed payload opened")
			}
		})
	}
}

// TestTokenHasOneSpelling: a token whose payload's last character differs
// only in bits base64 leaves unused decodes to the same bytes, and Open
// refuses it all the same.
func TestTokenHasOneSpelling(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	c := newTokenCodec([]byte("token-key"))
	tok := c.Mint("e1", 1, "VIRTUAL:j1") // 11 payload bytes: the last character has 2 unused bits
	p, sig, _ := strings.Cut(tok, ".")
	last := strings.IndexByte(alphabet, p[len(p)-1])
	other := p[:len(p)-1] + string(alphabet[last^1]) + "." + sig
	a, errA := base64.RawURLEncoding.DecodeString(p)
	b, errB := base64.RawURLEncoding.DecodeString(other[:len(p)])
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("%q and %q should decode alike when not strict: %x %v, %x %v", p, other[:len(p)], a, errA, b, errB)
	}
	if _, _, ok := c.Open("e1", tok); !ok {
		t.Fatal("the token does not open")
	}
	if _, _, ok := c.Open("e1", other); ok {
		t.Fatalf("%q, another spelling of %q, opened", other, tok)
	}
}
