// Package bench measures rushline on the machine it runs on: it starts its
// own redis-server and rushline-server processes, loads them over loopback
// and reports figures as ratios and percentiles.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a child server process: rushline-server or the naive baseline.
type Server struct {
	URL  string
	Keys Keys
	cmd  *exec.Cmd
}

// Keys are the fixed keys the bench starts servers with.
type Keys struct {
	Admin, Simulator, Service, JWT string
}

// DefaultKeys are used for every server a bench starts.
var DefaultKeys = Keys{Admin: "bench-admin", Simulator: "bench-sim", Service: "bench-service", JWT: "bench-jwt-secret"}

// workDir makes a temporary folder (named by pattern) holding an open log
// file; cleanup closes the log and removes the folder.
func workDir(pattern, logName string) (dir string, log *os.File, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, nil, err
	}
	log, err = os.Create(filepath.Join(dir, logName))
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, nil, err
	}
	return dir, log, func() { _ = log.Close(); _ = os.RemoveAll(dir) }, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// StartServer runs bin at redisURL with a fresh data dir and waits for /readyz.
func StartServer(ctx context.Context, bin, redisURL, dataDir string, log io.Writer) (*Server, error) {
	k := DefaultKeys
	s, err := startProcess(ctx, "/readyz", log, func(addr string) []string {
		return []string{bin, "--addr", addr, "--redis-url", redisURL, "--data", dataDir,
			"--admin-key", k.Admin, "--simulator-key", k.Simulator, "--service-key", k.Service, "--jwt-secret", k.JWT,
			"--log-format", "json", "--drops", "off"} // no practice drop's crowd in the measurements
	})
	if s != nil {
		s.Keys = k
	}
	return s, err
}

// startProcess runs the command argv(addr) on a free loopback address and
// waits until readyPath answers 200.
func startProcess(ctx context.Context, readyPath string, log io.Writer, argv func(addr string) []string) (*Server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := argv(addr)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", args[0], err)
	}
	s := &Server{URL: "http://" + addr, cmd: cmd}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(s.URL + readyPath)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("bench: %s not ready at %s", args[0], s.URL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RSS is the server's resident memory in bytes.
func (s *Server) RSS() int64 { return rss(s.cmd.Process.Pid) }

// saveProfile saves one /debug/pprof profile of the server into dir.
func (s *Server) saveProfile(ctx context.Context, client *http.Client, name, dir string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/debug/pprof/"+name, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Admin-Key", s.Keys.Admin)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file, _, _ := strings.Cut(name, "?")
	f, err := os.Create(filepath.Join(dir, file+".pb.gz"))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, res.Body)
	return err
}

// Stop ends the server.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// CPUTime is the CPU time the server has used so far (0 if unknown).
func (s *Server) CPUTime() time.Duration { return procCPU(s.cmd.Process.Pid) }

// procCPU is the user + system CPU time process pid has used so far (0 if
// unknown), from /proc/<pid>/stat.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// Fields after the command name's closing parenthesis; utime and stime are the 12th and 13th.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux).
const clockTicks = 100

// clientIdle is how long the bench's HTTP clients keep an idle connection:
// under the server's 2-minute IdleTimeout, so a request never goes out on a
// connection the server is closing at that moment. A POST that does gets
// EOF, and Go does not retry it (a drop's person ordering after waiting
// two minutes in line did, in 2 of 4 drop benches).
const clientIdle = 90 * time.Second

// Settle waits until the server uses under a tenth of a core (background
// work after a bulk fill done), or until limit passes.
func (s *Server) Settle(ctx context.Context, limit time.Duration) {
	const every = 500 * time.Millisecond
	deadline := time.Now().Add(limit)
	last := s.CPUTime()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(every)
		now := s.CPUTime()
		if now-last < every/10 {
			return
		}
		last = now
	}
}

// rss reads VmRSS of pid from /proc.
func rss(pid int) int64 {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// CommandCalls sums the calls of every command in Redis's INFO commandstats,
// commands run inside scripts included.
func CommandCalls(ctx context.Context, rdb *redis.Client) (int64, error) {
	return commandCalls(ctx, rdb, func(string) bool { return true })
}

// ScriptCalls sums the calls of EVAL and EVALSHA in Redis's INFO
// commandstats.
func ScriptCalls(ctx context.Context, rdb *redis.Client) (int64, error) {
	return commandCalls(ctx, rdb, func(cmd string) bool { return cmd == "eval" || cmd == "evalsha" })
}

// commandCalls sums the calls of the commands in INFO commandstats that
// count says to.
func commandCalls(ctx context.Context, rdb *redis.Client, count func(cmd string) bool) (int64, error) {
	stats, err := commandStats(ctx, rdb)
	if err != nil {
		return 0, err
	}
	var total int64
	for cmd, v := range stats {
		if count(cmd) {
			total += v[0]
		}
	}
	return total, nil
}

// Percentiles summarises durations.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Summarise returns the percentiles of ds in milliseconds.
func Summarise(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		i := int(q*float64(len(s)-1) + 0.5)
		return float64(s[i]) / float64(time.Millisecond)
	}
	return Percentiles{Count: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1)}
}

// call sends a JSON request to a server and decodes the answer into out.
func call(ctx context.Context, client *http.Client, method, url string, hdr map[string]string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, fmt.Errorf("bench: %s %s: %d %s", method, url, res.StatusCode, raw)
	}
	if out != nil {
		return res.StatusCode, json.Unmarshal(raw, out)
	}
	return res.StatusCode, nil
}
