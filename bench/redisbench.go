package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
)

// RedisBenchmark is one redis-benchmark test: a raw ceiling with no HTTP.
type RedisBenchmark struct {
	Name     string  `json:"name"`
	Pipeline int     `json:"pipeline"`
	RPS      float64 `json:"rps"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
}

// redisBenchmark runs one command through redis-benchmark against addr
// (host:port) and returns its figures. args is the command, with
// __rand_int__ standing for a random number below keyspace.
func redisBenchmark(ctx context.Context, binary, addr string, requests, clients, pipeline, keyspace int, args ...string) (RedisBenchmark, error) {
	host, port, _ := strings.Cut(addr, ":")
	cmdArgs := []string{"-h", host, "-p", port, "-n", strconv.Itoa(requests), "-c", strconv.Itoa(clients),
		"-P", strconv.Itoa(pipeline), "-r", strconv.Itoa(max(keyspace, 1)), "--csv"}
	cmd := exec.CommandContext(ctx, binary, append(cmdArgs, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return RedisBenchmark{}, fmt.Errorf("bench: redis-benchmark %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	rb, err := parseRedisBenchmarkCSV(out)
	rb.Pipeline = pipeline
	return rb, err
}

// parseRedisBenchmarkCSV reads the one test row of redis-benchmark --csv.
func parseRedisBenchmarkCSV(out []byte) (RedisBenchmark, error) {
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return RedisBenchmark{}, fmt.Errorf("bench: redis-benchmark output: %w", err)
	}
	if len(rows) < 2 {
		return RedisBenchmark{}, fmt.Errorf("bench: redis-benchmark printed no result: %q", out)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(name string) (float64, error) {
		i, ok := col[name]
		if !ok || i >= len(rows[1]) {
			return 0, fmt.Errorf("bench: redis-benchmark output has no %q column", name)
		}
		v, err := strconv.ParseFloat(rows[1][i], 64)
		if err == nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
			// A run too short to time prints "inf", which JSON cannot hold.
			err = fmt.Errorf("bench: redis-benchmark %s is %q: the run was too short to time", name, rows[1][i])
		}
		return v, err
	}
	var rb RedisBenchmark
	rb.Name = rows[1][0]
	for _, f := range []struct {
		col string
		v   *float64
	}{{"rps", &rb.RPS}, {"p50_latency_ms", &rb.P50}, {"p99_latency_ms", &rb.P99}} {
		if *f.v, err = num(f.col); err != nil {
			return rb, err
		}
	}
	return rb, nil
}
