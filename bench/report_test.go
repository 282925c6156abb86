package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// MustReadResult reads a fixture result and derives its ratios.
func MustReadResult(tb testing.TB, name string) *Result {
	tb.Helper()
	r, err := ReadResult(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	r.ComputeRatios()
	return r
}

// MustMatchGolden compares got with testdata/name, or rewrites it with -update.
func MustMatchGolden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs (run go test -update):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, MustReadResult(t, "new.json")); err != nil {
		t.Fatal(err)
	}
	MustMatchGolden(t, "new.md.golden", b.Bytes())
}

func TestCompareGolden(t *testing.T) {
	var b bytes.Buffer
	n, err := Compare(&b, MustReadResult(t, "old.json"), MustReadResult(t, "new.json"), 10)
	if err != nil {
		t.Fatal(err)
	}
	MustMatchGolden(t, "compare.golden", b.Bytes())
	// rushline throughput -15% everywhere (each rps, admission, the rps ratios
	// at 10% or more down), promotion p99 +18%, and a join's error count 0 → 3.
	if n == 0 {
		t.Errorf("Compare found no regression between old.json and new.json")
	}
}

func TestCompareThreshold(t *testing.T) {
	old, new := MustReadResult(t, "old.json"), MustReadResult(t, "new.json")
	for _, tc := range []struct {
		name      string
		old, new  *Result
		threshold float64
		want      int
	}{
		// a result compared with itself never regresses
		{name: "same", old: old, new: old, threshold: 10, want: 0},
		// improvements are not regressions: new → old has only the error-free join and faster figures
		{name: "improved", old: new, new: old, threshold: 10, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			n, err := Compare(&b, tc.old, tc.new, tc.threshold)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want {
				t.Errorf("regressions = %d, want %d\n%s", n, tc.want, b.String())
			}
		})
	}
	var b bytes.Buffer
	strict, _ := Compare(&b, old, new, 1)
	loose, _ := Compare(&b, old, new, 50)
	if strict <= loose {
		t.Errorf("regressions at 1%% = %d, at 50%% = %d: a looser threshold must flag fewer", strict, loose)
	}
	if loose != 1 {
		t.Errorf("regressions at 50%% = %d, want 1 (the join error count rises whatever the threshold)", loose)
	}
}

func TestComputeRatios(t *testing.T) {
	r := MustReadResult(t, "new.json")
	by := map[string]Ratio{}
	for _, x := range r.Ratios {
		by[x.Name] = x
	}
	for _, tc := range []struct {
		name    string
		value   float64
		verdict string
	}{
		// 21500×0.85 / 16000
		{name: "join rushline/naive @1k", value: 18275.0 / 16000, verdict: "MISS"},
		// p99 11.5 vs 12: no worse
		{name: "join p99 rushline/naive @1k", value: 11.5 / 12, verdict: "PASS"},
		// the status target holds at the largest size only
		{name: "status rushline/naive @1M", value: 15400 * 0.85 / 15000, verdict: "MISS"},
		{name: "status rushline/naive @1k", value: 18500 * 0.85 / 17000, verdict: ""},
		// O(log N): p99 at 1M within 1.2× of p99 at 1k
		{name: "status p99 rushline @1M / @1k", value: 12.6 / 10.5, verdict: "PASS"},
		{name: "promotion p99 ms @10000 streams", value: 30.6 / 0.85, verdict: "PASS"},
		// the sorted-set floor: shown, with no target of its own
		{name: "join Redis CPU µs per user, sorted-set floor, in process @1M", value: 5, verdict: ""},
		{name: "join Redis CPU rushline/sorted-set floor, in process @1k", value: 3.6 / 3, verdict: ""},
		{name: "redis bytes per waiting user", value: 187.5, verdict: "PASS"},
		{name: "join rushline/redis-benchmark join-script -P 1 @1k", value: 18275.0 / 45000, verdict: ""},
		// Redis CPU per request, ours over naive's in the same run: no
		// target; the median of the rounds' ratios (26/36, 29.5/38.5, 36/39.5)
		{name: "join Redis CPU per request rushline/naive @1k", value: 29.5 / 38.5, verdict: ""},
		// the rounds' median, not the sum's 30
		{name: "join Redis CPU µs per request @1k", value: 29.5, verdict: "MISS"},
		// the median of 62/35, 70/36, 75/37, not the sums' 69/36
		{name: "join server CPU per request rushline/floor @1k", value: 70.0 / 36, verdict: "MISS"},
		// pinned, the median of 29/22, 31/23, 27/21: shown, no verdict
		{name: "join server CPU per request rushline/floor @1k, servers pinned", value: 29.0 / 22, verdict: ""},
		{name: "status Redis CPU per request rushline/naive @1M", value: 20.0 / 24, verdict: ""},
		// The engine in process: shown, with no target of its own
		{name: "join Redis CPU µs per request, engine in process @1k", value: 4.9, verdict: ""},
		{name: "one event's ceiling, status reads/s, engine in process @1k", value: 1e6 / 1.6, verdict: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := by[tc.name]
			if !ok {
				t.Fatalf("no ratio %q in %v", tc.name, r.Ratios)
			}
			if d := got.Value - tc.value; d > 1e-9 || d < -1e-9 {
				t.Errorf("value = %v, want %v", got.Value, tc.value)
			}
			if got.Verdict() != tc.verdict {
				t.Errorf("verdict = %q, want %q", got.Verdict(), tc.verdict)
			}
		})
	}
}

// TestLoadLine: the report calls a run noisy only when the machine's load
// passed its CPU count before it (the load after is mostly the run's own).
func TestLoadLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		load []float64
		want string
	}{
		{"quiet", []float64{1.13, 0.17}, "at most the CPU count before it, a quiet machine."},
		{"busy before", []float64{9.5, 1}, "above the CPU count"},
		{"busy only with the run itself", []float64{0.5, 3.3}, "a quiet machine"},
		{"unknown", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loadLine(&Result{CPUs: 2, LoadAvg: tc.load})
			if !strings.Contains(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("loadLine(%v) = %q, want it to say %q", tc.load, got, tc.want)
			}
		})
	}
}
