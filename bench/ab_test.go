package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

func TestABMarkdownGolden(t *testing.T) {
	res := &ABResult{
		Op: OpJoin, Date: time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC), Host: "golden", CPUs: 2, Go: "go1.26.8", RedisVersion: "7.0.15",
		Settings: Settings{DurationS: 6, Rounds: 3, Connections: 64}, Prefill: 100_000,
		Floor: []float64{28, 30, 29}, FloorP50: []float64{1.1, 1.2, 1.0}, FloorP99: []float64{4.0, 4.4, 3.9},
		Builds: []ABBuildFigures{
			{Name: "old", ServerCPU: []float64{40, 42, 39}, RedisCPU: []float64{6.5, 6.9, 6.4}, RPS: []float64{19000, 18500, 19500},
				P50: []float64{2.5, 2.7, 2.4}, P99: []float64{8.0, 9.5, 7.5},
				Requests: 340_000, RedisMicros: 340_000 * 6.6, Line: 112_345, LineEnd: 452_345,
				Commands: []CommandCost{{"evalsha", 1.0 / 40, 5.6}, {"zadd", 1.0 / 40, 2}, {"xreadgroup", 0.001, 0.1}}},
			{Name: "new", ServerCPU: []float64{37, 43, 36}, RedisCPU: []float64{6.0, 6.1, 6.2}, RPS: []float64{20000, 18000, 20500},
				P50: []float64{2.6, 2.9, 2.3}, P99: []float64{7.0, 9.9, 7.2},
				Requests: 350_000, Errors: 2, RedisMicros: 350_000 * 6.1, Line: 113_000, LineEnd: 463_000,
				Commands: []CommandCost{{"evalsha", 1.0 / 41, 5.2}, {"zadd", 1.0 / 41, 1.9}, {"xack", 0.001, 0.05}}},
		},
	}
	var b bytes.Buffer
	if err := ABMarkdown(&b, res); err != nil {
		t.Fatal(err)
	}
	MustMatchGolden(t, "ab.md.golden", b.Bytes())
}

func TestAddCommands(t *testing.T) {
	stats := func(kv ...any) map[string][2]int64 {
		m := map[string][2]int64{}
		for i := 0; i < len(kv); i += 3 {
			m[kv[i].(string)] = [2]int64{int64(kv[i+1].(int)), int64(kv[i+2].(int))}
		}
		return m
	}
	for _, tc := range []struct {
		name          string
		costs         []CommandCost
		before, after map[string][2]int64
		prev, ok      int
		want          []CommandCost
	}{
		{
			name:   "first load, info left out, unchanged commands left out, costliest first",
			before: stats("evalsha", 10, 1000, "info", 5, 50, "get", 3, 9),
			after:  stats("evalsha", 20, 3000, "info", 9, 90, "get", 3, 9, "zadd", 10, 800),
			ok:     400,
			want:   []CommandCost{{"evalsha", 10.0 / 400, 2000.0 / 400}, {"zadd", 10.0 / 400, 800.0 / 400}},
		},
		{
			name:   "a second load folds in by joins",
			costs:  []CommandCost{{"evalsha", 0.025, 5}, {"zadd", 0.025, 2}},
			before: stats("evalsha", 20, 3000, "zadd", 10, 800, "xack", 0, 0),
			after:  stats("evalsha", 60, 6000, "zadd", 50, 2000, "xack", 2, 300),
			prev:   400, ok: 600,
			want: []CommandCost{{"evalsha", (10 + 40.0) / 1000, (2000 + 3000.0) / 1000}, {"zadd", (10 + 40.0) / 1000, (800 + 1200.0) / 1000},
				{"xack", 2.0 / 1000, 300.0 / 1000}},
		},
		{name: "no joins, nothing to divide by", costs: nil, before: stats(), after: stats("evalsha", 1, 1), want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := addCommands(tc.costs, tc.before, tc.after, tc.prev, tc.ok)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				w := tc.want[i]
				if got[i].Command != w.Command || !near(got[i].Calls, w.Calls) || !near(got[i].Micros, w.Micros) {
					t.Errorf("[%d] = %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestABRefusesABadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ABConfig
		want string
	}{
		{"no build", ABConfig{}, "at least one build"},
		{"an unknown op", ABConfig{Builds: []ABBuild{{"a", "bin/rushline-server"}}, Op: "leave"}, `not "leave"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := AB(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AB = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestABSmoke runs two builds (the same binary) against the floor for two
// short rounds and checks every round of every server is there, with
// Redis's commands per join. It asserts no timings.
func TestABSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("bench smoke test: runs in make test")
	}
	t.Parallel() // its own servers and Redis; it asserts no timings
	bin := t.TempDir()
	server := MustBuild(t, bin, "rushline-server", "../server")
	var progress bytes.Buffer
	cfg := ABConfig{
		Builds:   []ABBuild{{"a", server}, {"b", server}},
		NaiveCmd: []string{MustBuild(t, bin, "rushline-bench", "./cmd/rushline-bench"), "naive"},
		Rounds:   2, Duration: 400 * time.Millisecond, Connections: 4, Warmup: 200 * time.Millisecond,
		ProfileDir: t.TempDir(), Host: "smoke", Progress: &progress,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := AB(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Floor) != 2 || len(res.FloorP50) != 2 || len(res.FloorP99) != 2 || res.RedisVersion == "" {
		t.Errorf("floor rounds %v, p50 %v, p99 %v, redis %q", res.Floor, res.FloorP50, res.FloorP99, res.RedisVersion)
	}
	if len(res.Builds) != 2 {
		t.Fatalf("%d builds, want 2", len(res.Builds))
	}
	for _, b := range res.Builds {
		if len(b.ServerCPU) != 2 || len(b.RedisCPU) != 2 || len(b.RPS) != 2 || b.Requests == 0 || b.Errors != 0 {
			t.Errorf("%s: server %v, redis %v, rps %v, %d joins, %d errors", b.Name, b.ServerCPU, b.RedisCPU, b.RPS, b.Requests, b.Errors)
		}
		// Each round's latency, a request's p50 no later than its p99.
		if len(b.P50) != 2 || len(b.P99) != 2 || b.P50[0] <= 0 || b.P50[0] > b.P99[0] || b.P50[1] > b.P99[1] {
			t.Errorf("%s: p50 %v, p99 %v ms", b.Name, b.P50, b.P99)
		}
		// Every join of a paused event runs join.lua: at most one script
		// call a join, at least one for every 128.
		if s := b.perScript(); s < 1 || s > queue.MaxBatchSize {
			t.Errorf("%s: %.1f joins per script call", b.Name, s)
		}
		if c, ok := b.command("zadd"); !ok || c.Calls <= 0 {
			t.Errorf("%s: no zadd in %v", b.Name, b.Commands)
		}
		// The warm-up's joins wait in the line, and each round's join it.
		if b.Line <= 0 || b.LineEnd < b.Line+int64(b.Requests) {
			t.Errorf("%s: line %d at the first round, %d at the end, after %d joins", b.Name, b.Line, b.LineEnd, b.Requests)
		}
		if _, ok := b.command("info"); ok {
			t.Errorf("%s: the bench's own INFO counted", b.Name)
		}
		if st, err := os.Stat(filepath.Join(cfg.ProfileDir, b.Name, "profile.pb.gz")); err != nil || st.Size() == 0 {
			t.Errorf("%s: no CPU profile of the last round (%v)", b.Name, err)
		}
	}
	if n := strings.Count(progress.String(), "[round "); n != 6 || !strings.HasSuffix(progress.String(), "(about 0s left)\n") {
		t.Errorf("%d progress lines, want 2 rounds × 3 servers, the last with nothing left:\n%s", n, progress.String())
	}
	paths, err := WriteABFiles(res, t.TempDir(), "smoke")
	if err != nil || len(paths) != 2 {
		t.Fatalf("WriteABFiles: %v %v", paths, err)
	}
}

// TestABStatusSmoke reads the status of a build's last users to join
// against the floor for one short round, in an open loop, and checks the
// figures are status reads' and the loads sent what the rate asks for. It
// asserts no timings.
func TestABStatusSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("bench smoke test: runs in make test")
	}
	t.Parallel() // its own servers and Redis; it asserts no timings
	bin := t.TempDir()
	cfg := ABConfig{
		Builds:   []ABBuild{{"a", MustBuild(t, bin, "rushline-server", "../server")}},
		NaiveCmd: []string{MustBuild(t, bin, "rushline-bench", "./cmd/rushline-bench"), "naive"},
		Op:       OpStatus, Tokens: 50, Rounds: 1, Duration: 400 * time.Millisecond, Connections: 4, Rate: 250,
		Warmup: 200 * time.Millisecond, Host: "smoke", Waiting: 500,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := AB(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := res.Builds[0]
	if res.Op != OpStatus || len(res.Floor) != 1 || len(b.ServerCPU) != 1 || b.Requests == 0 || b.Errors != 0 {
		t.Fatalf("op %q, floor %v, server %v, %d reads, %d errors", res.Op, res.Floor, b.ServerCPU, b.Requests, b.Errors)
	}
	// 250 a second for 0.4 s is 100 reads, however fast they are answered
	// (a closed loop of 4 clients sends thousands).
	if b.Requests < 99 || b.Requests > 101 || res.Settings.Rate != cfg.Rate {
		t.Errorf("%d reads in one load at a rate of %d (settings %d), want 100", b.Requests, cfg.Rate, res.Settings.Rate)
	}
	// Status reads rank the line and add nobody to it: the prefill's
	// users, the warm-up's and the tokens' wait there throughout.
	if c, ok := b.command("zadd"); ok {
		t.Errorf("status reads added to the line: %+v", c)
	}
	if b.Line < int64(cfg.Waiting+cfg.Tokens) || b.LineEnd != b.Line || res.Prefill != cfg.Waiting {
		t.Errorf("line %d at the first round, %d at the end, prefill %d; want at least %d, unchanged", b.Line, b.LineEnd,
			res.Prefill, cfg.Waiting+cfg.Tokens)
	}
	var md strings.Builder
	if err := ABMarkdown(&md, res); err != nil || !strings.Contains(md.String(), "| a |") ||
		!strings.Contains(md.String(), "status reads/s") || !strings.Contains(md.String(), "Each line got 500 users") ||
		!strings.Contains(md.String(), "at 250 a second, an open loop") {
		t.Errorf("Markdown (%v):\n%s", err, md.String())
	}
}
