package testreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata files are `go test -json` runs of a throwaway module, recorded
// with go1.26: pass (a log line, subtests, a skip), fail (a failing subtest
// beside a passing one), panic, hang (killed by -timeout 500ms) and broken (a
// compile error).
func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		extra   string // a line that is not JSON, as go itself prints
		want    []string
		absent  []string
		failed  bool
		slowest []Result
	}{
		{
			name:   "pass prints only the ok line and ranks top-level tests",
			files:  []string{"pass"},
			want:   []string{"ok  \texample.com/m/pass\t0.215s", "slowest tests:", "0.21s  example.com/m/pass  TestSlow", "0.00s  example.com/m/pass  TestQuick"},
			absent: []string{"a log line of a passing test", "=== RUN", "PASS\n", "TestSkipped", "TestSlow/one"},
			slowest: []Result{
				{Package: "example.com/m/pass", Test: "TestSlow", Seconds: 0.21},
				{Package: "example.com/m/pass", Test: "TestQuick", Seconds: 0},
			},
		},
		{
			name:   "a failing subtest prints its output, its parent's and the FAIL lines",
			files:  []string{"fail"},
			want:   []string{"f_test.go:9: context", "f_test.go:9: got 2, want 3", "--- FAIL: TestTable/bad (0.00s)", "--- FAIL: TestTable (0.00s)", "FAIL\texample.com/m/fail\t0.006s", "TestTable (FAIL)"},
			absent: []string{"quiet", "TestTable/good"},
			failed: true,
			slowest: []Result{
				{Package: "example.com/m/fail", Test: "TestFine", Seconds: 0},
				{Package: "example.com/m/fail", Test: "TestTable", Seconds: 0, Failed: true},
			},
		},
		{
			name:   "a build failure prints the compiler's error",
			files:  []string{"broken"},
			want:   []string{"# example.com/m/broken [example.com/m/broken.test]", "broken/b_test.go:5:34: undefined: undefinedName", "FAIL\texample.com/m/broken [build failed]"},
			absent: []string{"slowest"},
			failed: true,
		},
		{
			name:   "a panic prints the panic and its stack",
			files:  []string{"panic"},
			want:   []string{"--- FAIL: TestBoom (0.00s)", "panic: assignment to entry in nil map", "p_test.go:7", "FAIL\texample.com/m/panic"},
			failed: true,
			slowest: []Result{
				{Package: "example.com/m/panic", Test: "TestBoom", Seconds: 0, Failed: true},
			},
		},
		{
			name:   "a test killed by the timeout has no event of its own; its output still shows",
			files:  []string{"hang"},
			want:   []string{"=== RUN   TestStuck", "h_test.go:9: waiting for something", "panic: test timed out after 500ms", "FAIL\texample.com/m/hang\t0.506s"},
			absent: []string{"slowest"},
			failed: true,
		},
		{
			name:   "several packages and go's own lines",
			files:  []string{"pass", "fail"},
			extra:  "go: downloading example.com/dep v1.0.0",
			want:   []string{"go: downloading example.com/dep v1.0.0", "ok  \texample.com/m/pass", "--- FAIL: TestTable/bad", "FAIL\texample.com/m/fail", "slowest tests:", "TestSlow", "TestQuick", "TestFine"},
			failed: true,
			slowest: []Result{
				{Package: "example.com/m/pass", Test: "TestSlow", Seconds: 0.21},
				{Package: "example.com/m/pass", Test: "TestQuick", Seconds: 0},
				{Package: "example.com/m/fail", Test: "TestFine", Seconds: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.extra + "\n"
			for _, f := range tt.files {
				in += mustRead(t, f)
			}
			var out strings.Builder
			failed, err := Run(strings.NewReader(in), &out, 3)
			if err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if failed != tt.failed {
				t.Errorf("failed = %v, want %v\noutput:\n%s", failed, tt.failed, got)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in this order)\noutput:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("output has %q\noutput:\n%s", a, got)
				}
			}

			s := New(&strings.Builder{})
			for _, line := range strings.Split(in, "\n") {
				s.Line(line)
			}
			slow := s.Slowest(3)
			if len(slow) != len(tt.slowest) {
				t.Fatalf("Slowest(3) = %+v, want %+v", slow, tt.slowest)
			}
			for i, r := range slow {
				w := tt.slowest[i]
				if r.Package != w.Package || r.Test != w.Test || r.Failed != w.Failed || r.Seconds < w.Seconds || r.Seconds > w.Seconds+0.01 {
					t.Errorf("Slowest(3)[%d] = %+v, want %+v", i, r, w)
				}
			}
		})
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
