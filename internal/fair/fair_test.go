package fair_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"testing"

	"github.com/rushline/rushline/internal/fair"
)

// TestDrawOrderIsHexHMACOrder: the order is the hex HMAC-SHA256 ascending,
// computed here the plain way anyone checking a draw would.
func TestDrawOrderIsHexHMACOrder(t *testing.T) {
	seed, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	users := []string{"u_a", "u_b", "VIRTUAL:bot-1", "u_ä", "", "u_c", "VIRTUAL:bot-2"}
	hexOf := func(u string) string {
		m := hmac.New(sha256.New, seed)
		m.Write([]byte(u))
		return hex.EncodeToString(m.Sum(nil))
	}
	want := append([]string(nil), users...)
	sort.Slice(want, func(i, j int) bool { return hexOf(want[i]) < hexOf(want[j]) })
	got := fair.DrawOrder(seed, users)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if c := fair.DrawCommitment(hex.EncodeToString(seed)); c != "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd" {
		t.Errorf("commitment = %s", c)
	}
}

func TestSolvePow(t *testing.T) {
	for _, c := range []struct {
		name string
		bits int
	}{{"one bit", 1}, {"twelve bits", 12}, {"sixteen bits", 16}} {
		t.Run(c.name, func(t *testing.T) {
			sol, tried, err := fair.SolvePow(context.Background(), "challenge-"+c.name, c.bits)
			if err != nil || tried < 1 {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte("challenge-" + c.name + sol))
			if fair.LeadingZeros(sum) < c.bits || !fair.PowSolves("challenge-"+c.name, sol, c.bits) {
				t.Fatalf("solution %q gives %x", sol, sum)
			}
			if fair.PowSolves("challenge-"+c.name, sol+"x", 28) {
				t.Fatalf("a changed solution still solves 28 bits")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := fair.SolvePow(ctx, "x", 60); err == nil {
		t.Fatal("a cancelled search went on")
	}
}

// BenchmarkSolvePow20 is what a 20-bit challenge costs one core in Go (a
// bot farm's cost per join; the browser's worker is a few times slower).
func BenchmarkSolvePow20(b *testing.B) {
	for i := range b.N {
		if _, _, err := fair.SolvePow(context.Background(), "bench-challenge-"+strconv.Itoa(i), 20); err != nil {
			b.Fatal(err)
		}
	}
}
