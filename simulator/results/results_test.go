package results_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/results"
)

func TestParseShard(t *testing.T) {
	env := func(idx string) func(string) string {
		return func(k string) string {
			if k == "JOB_COMPLETION_INDEX" {
				return idx
			}
			return ""
		}
	}
	for _, c := range []struct {
		name  string
		spec  string
		count int
		idx   string
		i, n  int
		err   string
	}{
		// No shard, and the explicit form.
		{"none", "", 0, "", 0, 0, ""},
		{"explicit", "2/3", 0, "", 2, 3, ""},
		// auto: the Job's 0-based index, the count from the flag.
		{"auto first", "auto", 4, "0", 1, 4, ""},
		{"auto last", "auto", 4, "3", 4, 4, ""},
		{"auto without index", "auto", 4, "", 0, 0, "JOB_COMPLETION_INDEX"},
		{"auto without count", "auto", 0, "1", 0, 0, "shard count"},
		{"auto index beyond count", "auto", 2, "2", 0, 0, "above the index 2"},
		{"bad explicit", "3/2", 0, "", 0, 0, "1 ≤ i ≤ n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			i, n, err := results.ParseShard(c.spec, c.count, env(c.idx))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || i != c.i || n != c.n {
				t.Fatalf("= %d/%d, %v; want %d/%d", i, n, err, c.i, c.n)
			}
		})
	}
}

// MustShardReport builds shard i of n of one run with bots bots.
func MustShardReport(tb testing.TB, i, n, bots int) *report.Report {
	tb.Helper()
	opens := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	raw := report.Raw{Scenario: "s", Seed: 1, Target: "http://x", EventID: "ev", Started: opens, Finished: opens.Add(time.Minute),
		OpensAt: opens, Shard: report.FormatShard(i, n)}
	for k := range bots {
		at := opens.Add(time.Duration(k) * time.Millisecond)
		raw.Bots = append(raw.Bots, report.Bot{ID: "b", Behavior: "x", ArrivedAt: at, JoinedAt: at, Outcome: report.OutcomeBought})
	}
	r, err := report.Build(raw, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Shards stored in a folder merge back; a missing or failed shard is named,
// and refused unless partial.
func TestFolderRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := 1; i <= 3; i++ {
		s, err := results.NewSink(dir, "run-1", i, 4)
		if err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if err := s.Failed(ctx, os.ErrDeadlineExceeded); err == nil {
				t.Fatal("Failed must return its cause")
			}
			continue
		}
		if err := s.Done(ctx, MustShardReport(t, i, 4, 10*i)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := results.Collect(ctx, dir+"/run-1", 0, false)
	if err == nil || !strings.Contains(err.Error(), "missing shard(s) 4 of 4") || !strings.Contains(err.Error(), "shard 3 of 4 failed: i/o timeout") {
		t.Fatalf("err = %v", err)
	}
	reps, problem, err := results.Collect(ctx, dir+"/run-1", 0, true)
	if err != nil || len(reps) != 2 || !strings.Contains(problem, "missing shard(s) 4") {
		t.Fatalf("partial: %d reports, %q, %v", len(reps), problem, err)
	}
	m, err := report.Merge(reps...)
	if err != nil || m.Summary.Bots.Total != 30 {
		t.Fatalf("merged %v bots, %v", m.Summary.Bots.Total, err)
	}
	if err := results.StoreMerged(ctx, dir+"/run-1", m); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run-1", "report.html")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := results.Collect(ctx, dir+"/nothing", 0, false); err == nil {
		t.Fatal("an empty run merged")
	}
	if _, err := results.NewSink(dir, "", 1, 2); err == nil {
		t.Fatal("a sink without a run id")
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ in, loc, run string }{
		{"/mnt/results/run-7", "/mnt/results", "run-7"},
		{"s3://bucket/run-7/", "s3://bucket", "run-7"},
		{"s3://bucket/prefix/run-7", "s3://bucket/prefix", "run-7"},
		{"run-7", "", ""},
		{"s3://bucket", "", ""},
	} {
		loc, run, err := results.Split(c.in)
		if loc != c.loc || run != c.run || (err != nil) != (c.loc == "") {
			t.Errorf("Split(%q) = %q %q %v", c.in, loc, run, err)
		}
	}
}
