package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MustBuild builds the main package pkg into dir/name and returns its path.
func MustBuild(tb testing.TB, dir, name, pkg string) string {
	tb.Helper()
	out := filepath.Join(dir, name)
	// -s -w: no symbol table or DWARF, which halves the link.
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestRunSmoke runs the whole harness at tiny sizes and checks the result
// file's shape and counts. It asserts no timings.
func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("bench smoke test: runs in make test")
	}
	t.Parallel() // its own servers and Redis; it asserts no timings
	bin := t.TempDir()
	cfg := RunConfig{
		ServerBin:         MustBuild(t, bin, "rushline-server", "../server"),
		NaiveCmd:          []string{MustBuild(t, bin, "rushline-bench", "./cmd/rushline-bench"), "naive"},
		RedisBenchmarkBin: "redis-benchmark", Sizes: []int{100, 200}, Duration: 500 * time.Millisecond, Rounds: 2, Connections: 8,
		RedisBenchmarkRequests: 5000, AdmissionWaiting: 200, AdmissionBatch: 50, Streams: 100,
		PushQuiet: 200 * time.Millisecond, Warmup: 200 * time.Millisecond, Host: "smoke", Pin: true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := res.WriteFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jsonPath, mdPath := paths[0], paths[1]
	if want := res.Date.Format("2006-01-02") + "-smoke.json"; filepath.Base(jsonPath) != want {
		t.Errorf("result file %s, want %s", filepath.Base(jsonPath), want)
	}

	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "date", "host", "cpus", "go", "redis_version", "settings", "redis_benchmark",
		"http", "engine", "admission", "push", "memory", "ratios"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("result has no %q section", k)
		}
	}
	r, err := ReadResult(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if r.Schema != Schema || r.RedisVersion == "" || r.CPUs == 0 || len(r.LoadAvg) != 2 {
		t.Errorf("header: schema %q, redis %q, cpus %d, load %v", r.Schema, r.RedisVersion, r.CPUs, r.LoadAvg)
	}
	if len(r.RedisBenchmark) != 6 {
		t.Errorf("%d redis-benchmark rows, want 3 tests × 2 pipelines", len(r.RedisBenchmark))
	}
	for _, b := range r.RedisBenchmark {
		if b.RPS <= 0 {
			t.Errorf("redis-benchmark %s -P %d: rps %v", b.Name, b.Pipeline, b.RPS)
		}
	}
	if len(r.HTTP) != 2*2*len(cfg.Sizes)+2 {
		t.Errorf("%d HTTP rows, want 2 servers × 2 ops × %d sizes + the floor's 2 ops", len(r.HTTP), len(cfg.Sizes))
	}
	for _, h := range r.HTTP {
		if h.Requests == 0 || h.Errors != 0 || h.RPS <= 0 {
			t.Errorf("%s %s @%d: %d requests, %d errors, rps %v", h.Server, h.Op, h.Waiting, h.Requests, h.Errors, h.RPS)
		}
		// The servers work for every request, and so does the generator.
		if h.ServerCPU < 0 || h.RedisCPU < 0 || h.ClientCPU <= 0 || h.ServerCPU+h.RedisCPU <= 0 {
			t.Errorf("%s %s @%d: CPU µs/request server %v, Redis %v, client %v", h.Server, h.Op, h.Waiting,
				h.ServerCPU, h.RedisCPU, h.ClientCPU)
		}
		// The naive join is one script call (rushline's tickers, on the
		// same Redis, add a few); rushline's joins run in script calls.
		if h.Op == OpJoin && ((h.Server == ServerNaive && (h.PerScript <= 0.5 || h.PerScript > 1)) ||
			(h.Server == ServerRushline && h.PerScript <= 0)) {
			t.Errorf("%s join @%d: %v requests per script call", h.Server, h.Waiting, h.PerScript)
		}
	}
	// Pinned joins of the floor and rushline at the first size, where the
	// machine has CPUs to split.
	_, canPin := newPinning()
	if want := map[bool]int{true: 2, false: 0}[canPin]; len(r.Pinned) != want {
		t.Errorf("%d pinned rows, want %d (CPUs to split: %v)", len(r.Pinned), want, canPin)
	}
	for _, h := range r.Pinned {
		if h.Op != OpJoin || h.Waiting != cfg.Sizes[0] || h.Requests == 0 || h.Errors != 0 || h.ServerCPU <= 0 ||
			len(h.ServerCPURounds) != cfg.Rounds {
			t.Errorf("pinned %s %s @%d: %d requests, %d errors, server CPU %v, rounds %v", h.Server, h.Op, h.Waiting,
				h.Requests, h.Errors, h.ServerCPU, h.ServerCPURounds)
		}
	}
	if a := r.Admission; a.Promoted != cfg.AdmissionWaiting || a.PromotionsPerS <= 0 || a.Batch != cfg.AdmissionBatch {
		t.Errorf("admission %+v, want %d promoted", a, cfg.AdmissionWaiting)
	}
	if p := r.Push; p.Streams != cfg.Streams || p.Admitted != cfg.Streams || p.Duplicates != 0 || p.ServerRSSMB <= 0 {
		t.Errorf("push %+v, want all %d streams admitted once", p, cfg.Streams)
	}
	if m := r.Memory; m.RedisBytesPerWaiting <= 0 || m.MeasuredOver != 200 || m.ServerRSSMB <= 0 || m.NaiveRSSMB <= 0 {
		t.Errorf("memory %+v", m)
	}
	// The engine step: status reads, then joins, in process, each with
	// Redis CPU behind it, and a ceiling row each.
	if len(r.Engine) != 2 || r.Engine[0].Op != OpStatus || r.Engine[1].Op != OpJoin {
		t.Errorf("engine rows %+v, want status then join", r.Engine)
	}
	for _, e := range r.Engine {
		if e.Requests == 0 || e.PerS <= 0 || e.RedisCPU <= 0 || e.Callers != cfg.Connections || e.Waiting != cfg.Sizes[0] {
			t.Errorf("engine %s: %+v", e.Op, e)
		}
	}
	// The sorted-set floor: join.lua and the floor at every size, each
	// having put the same users in line with Redis CPU behind them.
	if len(r.LineFloor) != len(cfg.Sizes) {
		t.Errorf("%d sorted-set floor rows, want one a size", len(r.LineFloor))
	}
	for i, f := range r.LineFloor {
		if f.Waiting != cfg.Sizes[i] || f.Users <= 0 || f.Users%f.Batch != 0 || f.JoinCPU <= 0 || f.FloorCPU <= 0 {
			t.Errorf("sorted-set floor @%d: %+v", cfg.Sizes[i], f)
		}
	}
	vias := map[string]int{}
	for _, c := range r.Ceilings() {
		vias[c.Via]++
	}
	if vias[ViaHTTP] != 2*len(cfg.Sizes) || vias[ViaEngine] != 2 {
		t.Errorf("ceilings by how measured %v, want %d over HTTP and 2 by the engine", vias, 2*len(cfg.Sizes))
	}
	names := map[string]bool{}
	for _, x := range r.Ratios {
		names[x.Name] = true
	}
	if canPin && !names["join server CPU per request rushline/floor @100, servers pinned"] {
		t.Error("no pinned server CPU ratio")
	}
	for _, n := range []string{"join rushline/naive @100", "join p99 rushline/naive @200", "status rushline/naive @200",
		"join HTTP floor/naive @100", "join server+Redis CPU per request rushline/naive @200",
		"promotion p99 ms @100 streams", "admission promotions/s", "redis bytes per waiting user"} {
		if !names[n] {
			t.Errorf("no ratio %q", n)
		}
	}

	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Targets and ratios", "| join rushline/naive @200 |", "| join | 100 |", "| status | 200 |",
		"| join-script | 16 |", "100 SSE streams (100 admitted, 0 duplicates)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	page, err := os.ReadFile(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="bench-data"`) || !strings.Contains(string(page), "join rushline/naive @200") {
		t.Errorf("%s lacks the chart data or the targets", filepath.Base(paths[2]))
	}
}
