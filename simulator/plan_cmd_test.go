package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MustPlan runs `rushline-sim plan args…` and returns its stdout and error.
func MustPlan(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	out, _, err := MustSim(tb, append([]string{"plan"}, args...)...)
	return out, err
}

func TestPlanCmdErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no limit", []string{"--total", "1000"}, "--limit (orders/s the shop takes) must be > 0"},
		{"no crowd", []string{"--limit", "10"}, "--total must be 1–"},
		{"bad shape", []string{"--total", "10", "--shape", "wave", "--limit", "10"}, "--shape must be spike, ramp or constant"},
		{"file and flags", []string{"../scenarios/concert-200k.yaml", "--total", "10", "--limit", "10"}, "either a scenario file or --total"},
		{"bad conversion", []string{"--total", "10", "--limit", "10", "--conversion", "2"}, "conversion must be 0–1"},
		{"bad abandon", []string{"--total", "10", "--limit", "10", "--abandon", "3"}, "--abandon must be 0–1"},
		{"bad think", []string{"--total", "10", "--limit", "10", "--think", "2m", "--think-p90", "1m"}, "--think-p90 (1m0s) must be >= --think (2m0s)"},
		{"bad policy", []string{"--total", "10", "--limit", "10", "--policies", "fifo"}, `unknown policy "fifo"`},
		{"bad interval", []string{"--total", "10", "--limit", "10", "--intervals", "10ms"}, "interval must be 50ms–1h"},
		{"not a number", []string{"--total", "many"}, `invalid argument "many" for "--total"`},
		{"missing bench", []string{"--total", "10", "--limit", "10", "--bench", "nope.json"}, "no such file"},
		{"missing scenario", []string{"nope.yaml", "--limit", "10"}, "nope.yaml"},
		{"bad scale", []string{"--total", "10", "--limit", "10", "--validate", "--validate-scale", "2",
			"--target", "http://127.0.0.1:1"}, "--validate-scale must be in (0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MustPlan(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPlanCmd plans a flag-described crowd and writes both reports.
func TestPlanCmd(t *testing.T) {
	dir := t.TempDir()
	out, err := MustPlan(t, "--total", "20000", "--shape", "ramp", "--over", "2m", "--limit", "100", "--think", "30s",
		"--think-p90", "90s", "--abandon", "0.1", "--poll-share", "0.3", "--seats", "5000", "--window", "3m",
		"--conversion", "0.8", "--bench", filepath.Join("plan", "testdata", "bench", "bench.json"), "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rushline plan: crowd", "Recommendation: ", "20.0k users", "bench.json (host fixture)",
		"5000 seats, 3m00s active window", "100 orders/s at most; 80% of admitted users buy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"plan-crowd.md", "plan-crowd.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestPlanShardsCommand(t *testing.T) {
	out, _, err := MustSim(t, "plan", "shards", "--users", "300000", "--over", "1m", "--stream-bots", "10000")
	if err != nil || !strings.Contains(out, "shards: 30 ") || !strings.Contains(out, "RUSHLINE_SHARDS=30") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := MustSim(t, "plan", "shards"); err == nil {
		t.Fatal("plan shards without --users succeeded")
	}
}
