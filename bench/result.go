package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Schema names the result file format; bump it on an incompatible change.
const Schema = "rushline-bench/v1"

// Result is one run of the harness: bench/results/<date>-<host>.json.
// Readers must tolerate missing sections (zero values).
type Result struct {
	Schema       string    `json:"schema"`
	Date         time.Time `json:"date"`
	Host         string    `json:"host"`
	CPUs         int       `json:"cpus"`
	Go           string    `json:"go"`
	RedisVersion string    `json:"redis_version"`
	// LoadAvg is the machine's 1-minute load average before and after the run:
	// how much else was running.
	LoadAvg        []float64        `json:"load_avg,omitempty"`
	Settings       Settings         `json:"settings"`
	RedisBenchmark []RedisBenchmark `json:"redis_benchmark"`
	HTTP           []HTTPFigures    `json:"http"`
	// Pinned are the floor's and rushline's joins at the first size once
	// more, each server on CPUs of its own (absent where the bench cannot
	// pin, and in older files).
	Pinned    []HTTPFigures `json:"pinned,omitempty"`
	Admission Admission     `json:"admission"`
	Push      PushFigures   `json:"push"`
	Memory    Memory        `json:"memory"`
	// Engine is the engine step's figures: joins and status reads with the
	// engine driven in process, no HTTP (absent in older files).
	Engine []EngineFigures `json:"engine,omitempty"`
	// LineFloor holds join.lua against the least a sorted-set line costs
	// Redis, at every size (absent in older files).
	LineFloor []LineFloorFigures `json:"line_floor,omitempty"`
	// Drop is the practice drop step's figures (absent when not run).
	Drop   *DropFigures `json:"drop,omitempty"`
	Ratios []Ratio      `json:"ratios"`
}

// Settings are the knobs a run used.
type Settings struct {
	// DurationS is one round of one HTTP load; Rounds of them are summed.
	DurationS   float64 `json:"duration_s"`
	Rounds      int     `json:"rounds,omitempty"`
	Connections int     `json:"connections"`
	// Rate, when set, is the requests a second of an open loop (ab --rate)
	// in place of Connections closed-loop clients.
	Rate  int   `json:"rate,omitempty"`
	Sizes []int `json:"sizes"`
}

// HTTP servers and operations measured.
const (
	ServerRushline = "rushline"
	ServerNaive    = "naive"
	// ServerFloor is the HTTP floor: the baseline's routes answered with a
	// constant, no Redis (see naive.Floor).
	ServerFloor = "floor"
	OpJoin      = "join"
	OpStatus    = "status"
)

// HTTPFigures are one server's figures for one operation at one line length.
type HTTPFigures struct {
	Server  string `json:"server"`
	Op      string `json:"op"`
	Waiting int    `json:"waiting"`
	LoadFigures
}

// Admission is promotion throughput for one event driven tick after tick.
type Admission struct {
	PromotionsPerS float64 `json:"promotions_per_s"`
	Batch          int     `json:"batch"`
	Promoted       int     `json:"promoted"`
}

// PushFigures are promotion latency with many open SSE streams.
type PushFigures struct {
	Streams        int     `json:"streams"`
	Connected      int     `json:"connected"`
	Admitted       int     `json:"admitted"`
	Duplicates     int     `json:"duplicates"`
	PromotionsPerS float64 `json:"promotions_per_s"`
	P50            float64 `json:"p50_ms"`
	P99            float64 `json:"p99_ms"`
	ServerRSSMB    float64 `json:"server_rss_mb"`
}

// Memory is Redis memory per waiting user and the servers' resident memory
// after the HTTP loads.
type Memory struct {
	RedisBytesPerWaiting float64 `json:"redis_bytes_per_waiting"`
	// MeasuredOver is how many joins through rushline the Redis figure spans.
	MeasuredOver int     `json:"measured_over"`
	ServerRSSMB  float64 `json:"server_rss_mb"`
	NaiveRSSMB   float64 `json:"naive_rss_mb"`
}

// Ratio is one derived figure, with its target when it has one (0: none).
type Ratio struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target float64 `json:"target,omitempty"`
	// LowerIsBetter makes the target a ceiling instead of a floor.
	LowerIsBetter bool `json:"lower_is_better,omitempty"`
}

// Verdict is PASS or MISS against the target, or "" without one.
func (r Ratio) Verdict() string {
	switch {
	case r.Target == 0:
		return ""
	case r.LowerIsBetter && r.Value <= r.Target, !r.LowerIsBetter && r.Value >= r.Target:
		return "PASS"
	}
	return "MISS"
}

// HTTPFor returns the figures of server doing op at waiting, if measured.
func (r *Result) HTTPFor(server, op string, waiting int) (HTTPFigures, bool) {
	return figuresFor(r.HTTP, server, op, waiting)
}

// PinnedFor is HTTPFor over the pinned loads.
func (r *Result) PinnedFor(server, op string, waiting int) (HTTPFigures, bool) {
	return figuresFor(r.Pinned, server, op, waiting)
}

func figuresFor(hs []HTTPFigures, server, op string, waiting int) (HTTPFigures, bool) {
	for _, h := range hs {
		if h.Server == server && h.Op == op && h.Waiting == waiting {
			return h, true
		}
	}
	return HTTPFigures{}, false
}

func (r *Result) redisBenchmarkFor(name string, pipeline int) (RedisBenchmark, bool) {
	for _, b := range r.RedisBenchmark {
		if b.Name == name && b.Pipeline == pipeline {
			return b, true
		}
	}
	return RedisBenchmark{}, false
}

// Targets from DESIGN.md and issue 6.
const (
	TargetJoinRatio      = 1.3
	TargetStatusRatio    = 1.0
	TargetStatusP99Ratio = 1.2
	TargetPromotionP99MS = 50
	TargetPromotionsPerS = 20_000
	TargetBytesPerWait   = 200
	TargetPushRSSMB      = 200
	// TargetPushStreams is the stream count the push targets are set for.
	TargetPushStreams = 10_000
	// TargetRedisCPUJoinUS and TargetRedisCPUStatusUS cap the Redis CPU per
	// join and per status read through the HTTP API (issue 15).
	TargetRedisCPUJoinUS   = 6
	TargetRedisCPUStatusUS = 3
	// TargetServerFloorRatio caps rushline's server CPU per join over the
	// HTTP floor's (issue 15).
	TargetServerFloorRatio = 1.3
)

// Ceiling is what one event can take of one operation: an event's keys
// live on one Redis core (they share a hash tag), so whatever the
// replicas, one event takes at most 1 s ÷ (Redis CPU per request).
type Ceiling struct {
	Op      string
	Waiting int
	// Via says how it was measured: over HTTP, or with the engine in
	// process (no HTTP: Redis is the bottleneck, batches are large).
	Via      string
	RedisCPU float64 // µs per request
	PerS     float64
}

// How a ceiling was measured (Ceiling.Via).
const (
	ViaHTTP   = "HTTP"
	ViaEngine = "engine"
)

// Ceilings lists one event's ceiling for rushline's joins and status reads
// at every line length measured over HTTP, then with the engine in process.
func (r *Result) Ceilings() []Ceiling {
	var out []Ceiling
	for _, op := range []string{OpJoin, OpStatus} {
		for _, n := range r.Settings.Sizes {
			if h, ok := r.HTTPFor(ServerRushline, op, n); ok && h.RedisCPUMedian() > 0 {
				us := h.RedisCPUMedian()
				out = append(out, Ceiling{Op: op, Waiting: n, Via: ViaHTTP, RedisCPU: us, PerS: 1e6 / us})
			}
		}
	}
	for _, e := range r.Engine {
		if e.RedisCPU > 0 {
			out = append(out, Ceiling{Op: e.Op, Waiting: e.Waiting, Via: ViaEngine, RedisCPU: e.RedisCPU, PerS: 1e6 / e.RedisCPU})
		}
	}
	return out
}

// ComputeRatios derives the ratios and targets from the figures.
func (r *Result) ComputeRatios() {
	r.Ratios = nil
	add := func(name string, num, den, target float64, lower bool) {
		if num > 0 && den > 0 {
			r.Ratios = append(r.Ratios, Ratio{Name: name, Value: num / den, Target: target, LowerIsBetter: lower})
		}
	}
	sizes := r.Settings.Sizes
	for _, n := range sizes {
		at := " @" + SizeLabel(n)
		ours, ok1 := r.HTTPFor(ServerRushline, OpJoin, n)
		base, ok2 := r.HTTPFor(ServerNaive, OpJoin, n)
		if ok1 && ok2 {
			add("join rushline/naive"+at, ours.RPS, base.RPS, TargetJoinRatio, false)
			add("join p99 rushline/naive"+at, ours.P99, base.P99, 1, true)
			add("join server+Redis CPU per request rushline/naive"+at, ours.ServerRedisCPUOver(base.LoadFigures), 1, 0, true)
			// The same Redis, the same run: steadier than the µs, which
			// follow the machine's speed.
			add("join Redis CPU per request rushline/naive"+at, ours.RedisCPUOver(base.LoadFigures), 1, 0, true)
		}
		if ok1 {
			add("join Redis CPU µs per request"+at, ours.RedisCPUMedian(), 1, TargetRedisCPUJoinUS, true)
			add("one event's ceiling, joins/s"+at, 1e6, ours.RedisCPUMedian(), 0, false)
		}
		ours, ok1 = r.HTTPFor(ServerRushline, OpStatus, n)
		base, ok2 = r.HTTPFor(ServerNaive, OpStatus, n)
		if ok1 {
			add("status Redis CPU µs per request"+at, ours.RedisCPUMedian(), 1, TargetRedisCPUStatusUS, true)
			add("one event's ceiling, status reads/s"+at, 1e6, ours.RedisCPUMedian(), 0, false)
		}
		if ok1 && ok2 {
			target := 0.0
			if n == sizes[len(sizes)-1] {
				target = TargetStatusRatio
			}
			add("status rushline/naive"+at, ours.RPS, base.RPS, target, false)
			add("status p99 rushline/naive"+at, ours.P99, base.P99, 0, true)
			add("status server+Redis CPU per request rushline/naive"+at, ours.ServerRedisCPUOver(base.LoadFigures), 1, 0, true)
			add("status Redis CPU per request rushline/naive"+at, ours.RedisCPUOver(base.LoadFigures), 1, 0, true)
		}
	}
	// The engine in process, no HTTP: no target of its own (the targets are
	// measured over HTTP), shown beside them as the bound Redis sets.
	for _, e := range r.Engine {
		if e.RedisCPU <= 0 {
			continue
		}
		at, unit := ", engine in process @"+SizeLabel(e.Waiting), "joins/s"
		if e.Op == OpStatus {
			unit = "status reads/s"
		}
		add(e.Op+" Redis CPU µs per request"+at, e.RedisCPU, 1, 0, true)
		add("one event's ceiling, "+unit+at, 1e6, e.RedisCPU, 0, false)
	}
	// The sorted-set floor, in process: what any line held in a sorted set
	// costs this Redis, beside the targets measured over HTTP.
	for _, f := range r.LineFloor {
		at := ", in process @" + SizeLabel(f.Waiting)
		add("join Redis CPU µs per user, sorted-set floor"+at, f.FloorCPU, 1, 0, true)
		add("join Redis CPU rushline/sorted-set floor"+at, f.JoinCPU, f.FloorCPU, 0, true)
	}
	if len(sizes) > 0 {
		// The most any server can gain on naive with this client on this machine.
		for _, op := range []string{OpJoin, OpStatus} {
			floor, ok1 := r.HTTPFor(ServerFloor, op, sizes[0])
			base, ok2 := r.HTTPFor(ServerNaive, op, sizes[0])
			if ok1 && ok2 {
				add(op+" HTTP floor/naive @"+SizeLabel(sizes[0]), floor.RPS, base.RPS, 0, false)
			}
			if op != OpJoin {
				continue
			}
			if ours, ok := r.HTTPFor(ServerRushline, op, sizes[0]); ok1 && ok {
				add("join server CPU per request rushline/floor @"+SizeLabel(sizes[0]), ours.ServerCPUOver(floor.LoadFigures), 1,
					TargetServerFloorRatio, true)
			}
			// The same ratio with the servers pinned: a second view, no verdict.
			pinnedFloor, ok3 := r.PinnedFor(ServerFloor, op, sizes[0])
			pinnedOurs, ok4 := r.PinnedFor(ServerRushline, op, sizes[0])
			if ok3 && ok4 {
				add("join server CPU per request rushline/floor @"+SizeLabel(sizes[0])+", servers pinned",
					pinnedOurs.ServerCPUOver(pinnedFloor.LoadFigures), 1, 0, true)
			}
		}
	}
	if len(sizes) > 1 {
		lo, ok1 := r.HTTPFor(ServerRushline, OpStatus, sizes[0])
		hi, ok2 := r.HTTPFor(ServerRushline, OpStatus, sizes[len(sizes)-1])
		if ok1 && ok2 {
			add(fmt.Sprintf("status p99 rushline @%s / @%s", SizeLabel(sizes[len(sizes)-1]), SizeLabel(sizes[0])),
				hi.P99, lo.P99, TargetStatusP99Ratio, true)
		}
	}
	if len(sizes) > 0 {
		at := " @" + SizeLabel(sizes[0])
		for _, c := range []struct{ op, bench string }{{OpJoin, "join-script"}, {OpStatus, "ZRANK"}} {
			ours, _ := r.HTTPFor(ServerRushline, c.op, sizes[0])
			for _, p := range []int{1, 16} {
				if rb, ok := r.redisBenchmarkFor(c.bench, p); ok {
					add(fmt.Sprintf("%s rushline/redis-benchmark %s -P %d%s", c.op, c.bench, p, at), ours.RPS, rb.RPS, 0, false)
				}
			}
		}
	}
	if r.Push.Admitted > 0 {
		// The push targets are set for TargetPushStreams; fewer streams are informational.
		p99Target, rssTarget := 0.0, 0.0
		if r.Push.Streams >= TargetPushStreams {
			p99Target, rssTarget = TargetPromotionP99MS, TargetPushRSSMB
		}
		r.Ratios = append(r.Ratios, Ratio{Name: fmt.Sprintf("promotion p99 ms @%d streams", r.Push.Streams),
			Value: r.Push.P99, Target: p99Target, LowerIsBetter: true})
		add(fmt.Sprintf("server RSS MB @%d streams", r.Push.Streams), r.Push.ServerRSSMB, 1, rssTarget, true)
	}
	r.dropRatios()
	add("admission promotions/s", r.Admission.PromotionsPerS, 1, TargetPromotionsPerS, false)
	add("redis bytes per waiting user", r.Memory.RedisBytesPerWaiting, 1, TargetBytesPerWait, true)
}

// dropRatios adds the drop's figures with their targets, which are set for
// a TargetDropCrowd crowd and TargetDropPeople people: smaller drops are
// informational.
func (r *Result) dropRatios() {
	d := r.Drop
	if d == nil || d.CrowdJoined == 0 {
		return
	}
	full := d.Crowd >= TargetDropCrowd && d.People >= TargetDropPeople
	target := func(t float64) float64 {
		if full {
			return t
		}
		return 0
	}
	at := fmt.Sprintf(" @%s crowd, %d people", SizeLabel(d.Crowd), d.People)
	r.Ratios = append(r.Ratios,
		Ratio{Name: "drop crowd Redis CPU µs per virtual user" + at, Value: d.RedisCPUPerCrowdUS, Target: target(TargetDropRedisCPUUS), LowerIsBetter: true},
		Ratio{Name: "drop people promotion p99 ms" + at, Value: d.Latency.P99, Target: target(TargetDropPromotionP99), LowerIsBetter: true},
		Ratio{Name: "drop server RSS peak MB" + at, Value: d.ServerRSSPeakMB, Target: target(TargetDropRSSMB), LowerIsBetter: true})
}

// SizeLabel writes a line length the short way: 1k, 100k, 1M, 250.
func SizeLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// ReadResult loads a result file.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

// BaseName is the file name, without extension, of a result: <date>-<host>.
func (r *Result) BaseName() string { return r.Date.UTC().Format("2006-01-02") + "-" + r.Host }

// WriteFiles writes <dir>/<date>-<host>.json, .md and .html and returns
// their paths in that order.
func (r *Result) WriteFiles(dir string) ([]string, error) {
	return r.WriteFilesNamed(dir, r.BaseName())
}

// WriteFilesNamed writes <dir>/<base>.json, .md and .html and returns their
// paths in that order.
func (r *Result) WriteFilesNamed(dir, base string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	base = filepath.Join(dir, base)
	paths := []string{base + ".json", base + ".md", base + ".html"}
	if err := os.WriteFile(paths[0], append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	for i, write := range []func(io.Writer, *Result) error{Markdown, HTML} {
		if err := writeFile(paths[i+1], func(w io.Writer) error { return write(w, r) }); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
