package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// BenchSchema is the bench result file format Rates reads (bench/README.md).
const BenchSchema = "rushline-bench/v1"

// Rates are what one server and one Redis manage, as a bench run measured them.
type Rates struct {
	// JoinRPS and StatusRPS are joins and status reads per second per server.
	JoinRPS, StatusRPS float64
	// PromotionsPerS is the admission ceiling of one event (one Redis slot).
	PromotionsPerS float64
	// RedisBytesPerWaiting is Redis memory per user in line.
	RedisBytesPerWaiting float64
	// StreamBytes is server memory per open SSE stream.
	StreamBytes float64
	// Source says where the figures come from.
	Source string
}

// DefaultRates were measured in session 1 on the 2-core build machine.
var DefaultRates = Rates{JoinRPS: 16_000, StatusRPS: 20_000, PromotionsPerS: 141_000, RedisBytesPerWaiting: 150,
	StreamBytes: 17_000, Source: "built-in defaults (session 1, 2 cores)"}

// benchFile is the part of a rushline-bench/v1 result the planner reads.
type benchFile struct {
	Schema string `json:"schema"`
	Host   string `json:"host"`
	HTTP   []struct {
		Server  string  `json:"server"`
		Op      string  `json:"op"`
		Waiting int     `json:"waiting"`
		RPS     float64 `json:"rps"`
	} `json:"http"`
	Admission struct {
		PromotionsPerS float64 `json:"promotions_per_s"`
	} `json:"admission"`
	Push struct {
		Streams     int     `json:"streams"`
		ServerRSSMB float64 `json:"server_rss_mb"`
	} `json:"push"`
	Memory struct {
		RedisBytesPerWaiting float64 `json:"redis_bytes_per_waiting"`
	} `json:"memory"`
}

// LoadRates reads a bench result file: the best rushline join rate, the
// rushline status rate at the largest line measured, the admission rate,
// Redis bytes per waiting user and server RSS per SSE stream (MiB ÷
// streams). A figure the file lacks keeps its default.
func LoadRates(path string) (Rates, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Rates{}, fmt.Errorf("plan: bench file: %w", err)
	}
	var f benchFile
	if err := json.Unmarshal(data, &f); err != nil {
		return Rates{}, fmt.Errorf("plan: bench file %s: %w", path, err)
	}
	if f.Schema != BenchSchema {
		return Rates{}, fmt.Errorf("plan: bench file %s: schema %q, want %q", path, f.Schema, BenchSchema)
	}
	r := DefaultRates
	var missing []string
	statusAt := -1
	join := 0.0
	for _, h := range f.HTTP {
		if h.Server != "rushline" {
			continue
		}
		switch {
		case h.Op == "join":
			join = max(join, h.RPS)
		case h.Op == "status" && h.Waiting > statusAt && h.RPS > 0:
			r.StatusRPS, statusAt = h.RPS, h.Waiting
		}
	}
	set := func(dst *float64, v float64, name string) {
		if v > 0 {
			*dst = v
		} else {
			missing = append(missing, name)
		}
	}
	set(&r.JoinRPS, join, "join")
	if statusAt < 0 {
		missing = append(missing, "status")
	}
	set(&r.PromotionsPerS, f.Admission.PromotionsPerS, "admission")
	set(&r.RedisBytesPerWaiting, f.Memory.RedisBytesPerWaiting, "memory")
	perStream := 0.0
	if f.Push.Streams > 0 {
		perStream = f.Push.ServerRSSMB * (1 << 20) / float64(f.Push.Streams)
	}
	set(&r.StreamBytes, perStream, "push")
	r.Source = filepath.Base(path)
	if f.Host != "" {
		r.Source += " (host " + f.Host + ")"
	}
	if len(missing) > 0 {
		r.Source += "; defaults for " + strings.Join(missing, ", ")
	}
	return r, nil
}

// NewestBench is the newest bench/results/*.json under dir by name (the
// files are named <date>-<host>.json), or "" when there is none.
func NewestBench(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		return ""
	}
	slices.Sort(files)
	return files[len(files)-1]
}

// RatesFor reads the bench file at path; without one, the newest in dir;
// without any, DefaultRates.
func RatesFor(path, dir string) (Rates, error) {
	if path == "" {
		path = NewestBench(dir)
	}
	if path == "" {
		return DefaultRates, nil
	}
	return LoadRates(path)
}
