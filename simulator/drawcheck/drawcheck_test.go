package drawcheck_test

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/simulator/drawcheck"
)

func TestCheck(t *testing.T) {
	seed := strings.Repeat("ab", 32)
	raw, _ := hex.DecodeString(seed)
	users := []string{"u_1", "u_2", "u_3", "VIRTUAL:x", "VIRTUAL:y"}
	line := fair.DrawOrder(raw, users)
	good := drawcheck.Reveal{Published: fair.DrawCommitment(seed), Seed: seed, Commitment: fair.DrawCommitment(seed), Drawn: len(users)}
	swapped := slices.Clone(line)
	swapped[1], swapped[3] = swapped[3], swapped[1]
	wrongSeed := good
	wrongSeed.Published = fair.DrawCommitment(strings.Repeat("cd", 32))
	for _, c := range []struct {
		name   string
		reveal drawcheck.Reveal
		line   []string
		match  bool
		says   string
	}{
		{"the drawn order", good, line, true, "MATCH: the seed fits"},
		{"two swapped", good, swapped, false, "place 2 holds"},
		{"one missing", good, line[:4], false, "5 pre-queued, 4 placed"},
		{"another seed than committed", wrongSeed, line, false, "does not fit the published commitment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := drawcheck.Check(c.reveal, drawcheck.Trail{Prequeued: users, Line: c.line})
			if err != nil {
				t.Fatal(err)
			}
			if res.Matches != c.match || !strings.Contains(res.String(), c.says) {
				t.Errorf("matches=%v %q; want %v and %q", res.Matches, res, c.match, c.says)
			}
		})
	}
	if _, err := drawcheck.Check(drawcheck.Reveal{Seed: "zz"}, drawcheck.Trail{}); err == nil {
		t.Error("a seed that is not hex passed")
	}
}
