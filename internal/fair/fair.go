// Package fair holds the arithmetic of rushline's fair openings that both
// the server and its clients compute: the verifiable draw of a pre-queue
// and the proof-of-work challenge (API-next.md, "Opening order, queue modes
// and bot defence"). It depends on nothing but the standard library.
package fair

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/bits"
	"slices"
	"strconv"
)

// DrawCommitment is the commitment published for a seed (hex): the hex
// SHA-256 of its bytes.
func DrawCommitment(seed string) string {
	b, _ := hex.DecodeString(seed)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DrawKey is the key the draw orders userID by: HMAC-SHA256 keyed with the
// seed's bytes over the user id. Ascending keys (as bytes, or as their hex)
// are the drawn order.
func DrawKey(seed []byte, userID string) [sha256.Size]byte {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(userID))
	var k [sha256.Size]byte
	m.Sum(k[:0])
	return k
}

// DrawOrder returns users in drawn order: by hex HMAC-SHA256(seed, user id)
// ascending (DrawKey), which anyone who knows the seed can recompute.
func DrawOrder(seed []byte, users []string) []string {
	type keyed struct {
		k    [sha256.Size]byte
		user string
	}
	ks := make([]keyed, len(users))
	for i, u := range users {
		ks[i] = keyed{DrawKey(seed, u), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.k[:], b.k[:]) })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.user
	}
	return out
}

// PowSolves reports whether SHA-256(challenge + solution) starts with n
// zero bits.
func PowSolves(challenge, solution string, n int) bool {
	return LeadingZeros(sha256.Sum256([]byte(challenge+solution))) >= n
}

// LeadingZeros counts the leading zero bits of sum.
func LeadingZeros(sum [sha256.Size]byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// SolvePow finds a solution to challenge of n bits by trying the decimal
// counters 0, 1, 2, … in turn (what the web page's worker does); ctx stops
// it. It returns the solution and how many it tried.
func SolvePow(ctx context.Context, challenge string, n int) (string, int, error) {
	buf := []byte(challenge)
	for i := uint64(0); ; i++ {
		if i%65536 == 0 && ctx.Err() != nil {
			return "", int(i), ctx.Err()
		}
		buf = strconv.AppendUint(buf[:len(challenge)], i, 10)
		if LeadingZeros(sha256.Sum256(buf)) >= n {
			return string(buf[len(challenge):]), int(i + 1), nil
		}
	}
}
