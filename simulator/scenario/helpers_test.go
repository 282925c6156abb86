package scenario_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rushline/rushline/simulator/scenario"
)

// MustParse parses doc and fails the test on any error.
func MustParse(tb testing.TB, doc string) *scenario.Scenario {
	tb.Helper()
	s, err := scenario.Parse([]byte(doc))
	if err != nil {
		tb.Fatalf("Parse: %v\n--- input ---\n%s", err, numbered(doc))
	}
	return s
}

// MustLoad loads a scenario file and fails the test on any error.
func MustLoad(tb testing.TB, path string) *scenario.Scenario {
	tb.Helper()
	s, err := scenario.Load(path)
	if err != nil {
		tb.Fatalf("Load(%s): %v", path, err)
	}
	return s
}

// MustErrors parses doc, which must be refused, and returns its problems.
func MustErrors(tb testing.TB, doc string) scenario.Errors {
	tb.Helper()
	s, err := scenario.Parse([]byte(doc))
	if err == nil {
		tb.Fatalf("Parse accepted a bad scenario:\n%s", numbered(doc))
	}
	if s != nil {
		tb.Errorf("Parse returned a scenario with its error")
	}
	var errs scenario.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		tb.Fatalf("Parse error is %T (%v), want non-empty scenario.Errors", err, err)
	}
	return errs
}

// MustEdit replaces the first old in doc with new; old must be there, so a
// stale test case fails loudly instead of testing the unchanged base.
func MustEdit(tb testing.TB, doc, old, new string) string {
	tb.Helper()
	if !strings.Contains(doc, old) {
		tb.Fatalf("edit: %q is not in the document", old)
	}
	return strings.Replace(doc, old, new, 1)
}

// numbered prefixes each line of doc with its number, for failure messages.
func numbered(doc string) string {
	var b strings.Builder
	for i, l := range strings.Split(doc, "\n") {
		fmt.Fprintf(&b, "%3d| %s\n", i+1, l)
	}
	return b.String()
}
