package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a scenario file: where it is and which field.
type Error struct {
	// File is the file name; Load sets it, Parse leaves it empty.
	File string
	// Line is 1-based; 0 when the problem has no place (e.g. a scenario built in code).
	Line int
	// Field is the path of the field, e.g. "phases[1].rate"; empty for the whole file.
	Field   string
	Message string
}

// Error formats the problem as "scenario.yaml:12: phases[1].rate: must be > 0".
// Without a file name it reads "line 12: …".
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is every problem found in one file, sorted by line. Parse and Load
// return it as their error, so one run of `rushline-sim validate` shows them all.
type Errors []*Error

// Error lists the problems one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find a single *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es Errors) sort() {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}
