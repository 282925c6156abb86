// Package testreport turns the event stream of `go test -json` back into go
// test's quiet output (an ok line per passing package, the whole output of
// every failing test and package) and adds the slowest tests at the end, so
// a long run says where its time went.
package testreport

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Event is one line of `go test -json`, as cmd/test2json documents it.
type Event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// Result is how long one top-level test took.
type Result struct {
	Package string
	Test    string
	Seconds float64
	Failed  bool
}

type testKey struct{ pkg, test string }

// Summary reads events line by line and writes the quiet output as packages
// and tests end. The zero value is not usable; call New.
type Summary struct {
	w        io.Writer
	running  map[testKey][]string // output of tests that have not ended
	pkgOut   map[string][]string  // package-level output until the package ends
	results  []Result
	failures int
}

// New returns a Summary writing to w.
func New(w io.Writer) *Summary {
	return &Summary{w: w, running: map[testKey][]string{}, pkgOut: map[string][]string{}}
}

// Line takes one line of go test's output. Lines that are not JSON events
// (output of go itself) are written through unchanged.
func (s *Summary) Line(line string) {
	var e Event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		fmt.Fprintln(s.w, line)
		return
	}
	switch {
	case e.Action == "build-output":
		io.WriteString(s.w, e.Output)
	case e.Action == "build-fail":
		s.failures++
	case e.Test != "":
		s.testEvent(e)
	default:
		s.packageEvent(e)
	}
}

func (s *Summary) testEvent(e Event) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		s.running[k] = append(s.running[k], e.Output)
	case "pass", "fail", "skip":
		if e.Action == "fail" {
			s.failures++
			s.write(s.running[k])
		}
		delete(s.running, k)
		if !strings.Contains(e.Test, "/") && e.Action != "skip" {
			s.results = append(s.results, Result{e.Package, e.Test, e.Elapsed, e.Action == "fail"})
		}
	}
}

func (s *Summary) packageEvent(e Event) {
	switch e.Action {
	case "output":
		s.pkgOut[e.Package] = append(s.pkgOut[e.Package], e.Output)
	case "pass", "skip":
		// go test prints only the closing line of a package that passed.
		for _, out := range s.pkgOut[e.Package] {
			if strings.HasPrefix(out, "ok  ") || strings.HasPrefix(out, "?   ") {
				io.WriteString(s.w, out)
			}
		}
		delete(s.pkgOut, e.Package)
	case "fail":
		s.failures++
		// A test still running when its package failed (a timeout, os.Exit)
		// never gets an event of its own: its output is the evidence.
		var open []testKey
		for k := range s.running {
			if k.pkg == e.Package {
				open = append(open, k)
			}
		}
		slices.SortFunc(open, func(a, b testKey) int { return strings.Compare(a.test, b.test) })
		for _, k := range open {
			s.write(s.running[k])
			delete(s.running, k)
		}
		s.write(s.pkgOut[e.Package])
		delete(s.pkgOut, e.Package)
	}
}

func (s *Summary) write(lines []string) {
	for _, l := range lines {
		io.WriteString(s.w, l)
	}
}

// Failed reports whether any test, package or build failed.
func (s *Summary) Failed() bool { return s.failures > 0 }

// Slowest returns the n top-level tests that took longest, slowest first.
func (s *Summary) Slowest(n int) []Result {
	r := slices.Clone(s.results)
	slices.SortStableFunc(r, func(a, b Result) int { return cmp.Compare(b.Seconds, a.Seconds) })
	return r[:min(n, len(r))]
}

// WriteSlowest writes the n slowest top-level tests with their package and
// seconds.
func (s *Summary) WriteSlowest(n int) {
	slow := s.Slowest(n)
	if len(slow) == 0 {
		return
	}
	fmt.Fprintln(s.w, "\nslowest tests:")
	for _, r := range slow {
		mark := ""
		if r.Failed {
			mark = " (FAIL)"
		}
		fmt.Fprintf(s.w, "%8.2fs  %s  %s%s\n", r.Seconds, r.Package, r.Test, mark)
	}
}

// Run reads go test -json output from r to its end, writes the quiet output
// and then the n slowest tests to w, and reports whether anything failed.
func Run(r io.Reader, w io.Writer, n int) (failed bool, err error) {
	s := New(w)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		s.Line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	s.WriteSlowest(n)
	return s.Failed(), nil
}
