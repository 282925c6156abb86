package scenario_test

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/rushline/rushline/simulator/scenario"
)

// FuzzParse checks that no input makes Parse panic, that every refusal is a
// sorted Errors with lines, and that every accepted scenario can be run.
// Seeds: the example scenarios, base, and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenario.Parse(data)
		if err != nil {
			var errs scenario.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T %v, want scenario.Errors", err, err)
			}
			for i, e := range errs {
				if e.Line < 1 || e.Message == "" || i > 0 && e.Line < errs[i-1].Line {
					t.Fatalf("problem %d malformed or out of order: %v", i, errs)
				}
			}
			_ = err.Error()
			return
		}
		if s == nil || s.Name == "" || len(s.Phases) == 0 || len(s.Bots) == 0 {
			t.Fatalf("accepted an incomplete scenario: %+v", s)
		}
		r := rand.New(rand.NewPCG(uint64(s.Seed), 0))
		for range 3 {
			b := s.PickBot(r)
			if b == nil {
				t.Fatal("PickBot returned nil")
			}
			if b.Reaction.Sample(r) < 0 || b.Patience.Sample(r) < 0 || b.Think.Sample(r) < 0 {
				t.Fatal("negative sample")
			}
		}
		if s.TotalDuration() < 0 {
			t.Fatal("negative total duration")
		}
		for _, p := range s.Phases {
			_ = p.ExpectedArrivals()
		}
	})
}
