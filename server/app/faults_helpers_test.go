//go:build linux

package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rushline/rushline/server/auth"
)

// faultTimeout bounds each fault test as a whole.
const faultTimeout = 180 * time.Second

// binDir holds the rushline-server binary built once for the package's tests;
// TestMain removes it.
var binDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "rushline-faults-*") })

// buildServer builds rushline-server once per test binary run.
var buildServer = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "rushline-server")
	// -s -w: no symbol table or DWARF, which halves the link (stack traces
	// come from the runtime's own tables).
	out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "github.com/rushline/rushline/server").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build rushline-server: %w\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := binDir(); err == nil {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// MustServerBinary returns rushline-server built without -race: the replicas
// are the system under test; the test process is the race-checked client.
func MustServerBinary(tb testing.TB) string {
	tb.Helper()
	bin, err := buildServer()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// proc is a rushline-server child process.
type proc struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	log  *bytes.Buffer
	mu   *sync.Mutex
}

// Pid is the child's process id; the replica name it holds leases under
// contains it.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// Alive reports whether the child has not exited.
func (p *proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the child to exit: a crash, no shutdown.
func (p *proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Log returns what the child wrote so far.
func (p *proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// lockedWriter serializes writes into a buffer shared with Log.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// freeAddr picks a free loopback address.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// MustProc starts the binary as one replica on redisURL and databaseURL with
// keys, waits until it answers /readyz, and kills it in Cleanup. The child
// dies with the test process (Pdeathsig). It runs no drop schedule unless
// extra flags (added last, so they win) give one.
func MustProc(tb testing.TB, bin, redisURL, databaseURL string, keys auth.Keys, extra ...string) *proc {
	tb.Helper()
	return MustProcWith(tb, nil, bin, redisURL, databaseURL, keys, extra...)
}

// MustProcWith is MustProc with the command line run under wrap (e.g.
// prlimit and its options) and extra flags after the usual ones.
func MustProcWith(tb testing.TB, wrap []string, bin, redisURL, databaseURL string, keys auth.Keys, extra ...string) *proc {
	tb.Helper()
	addr := freeAddr(tb)
	args := slices.Concat(wrap, []string{bin, "--addr", addr, "--redis-url", redisURL, "--database-url", databaseURL,
		"--data", tb.TempDir(), "--admin-key", keys.Admin, "--simulator-key", keys.Simulator,
		"--service-key", keys.Service, "--jwt-secret", keys.JWTSecret, "--drops", "off"}, extra)
	cmd := exec.Command(args[0], args[1:]...)
	p := &proc{cmd: cmd, base: "http://" + addr, done: make(chan struct{}), log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stdout = lockedWriter{p.mu, p.log}
	cmd.Stderr = lockedWriter{p.mu, p.log}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		if p.Alive() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				p.Kill()
			}
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(p.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if !p.Alive() || time.Now().After(deadline) {
			tb.Fatalf("replica on %s not ready (%v):\n%s", addr, err, p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MustProcs starts n replicas with MustProc and returns them and their base URLs.
func MustProcs(tb testing.TB, n int, bin, redisURL, databaseURL string, keys auth.Keys, extra ...string) ([]*proc, []string) {
	tb.Helper()
	procs := make([]*proc, n)
	bases := make([]string, n)
	for i := range procs {
		procs[i] = MustProc(tb, bin, redisURL, databaseURL, keys, extra...)
		bases[i] = procs[i].base
	}
	return procs, bases
}

// holderPid reads the pid out of a lease holder's replica name
// ("host-pid-random", app.Start's default); 0 if none.
func holderPid(holder string) int {
	parts := strings.Split(holder, "-")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// tcpProxy forwards loopback connections to a target and can cut every
// connection and refuse new ones, to take a server away without stopping it.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// MustProxy starts a proxy to target, closed in Cleanup.
func MustProxy(tb testing.TB, target string) *tcpProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	tb.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is where the proxy listens.
func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c) })
	}
}

func (p *tcpProxy) pipe(c net.Conn) {
	defer p.forget(c)
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.forget(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (p *tcpProxy) forget(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut closes every connection and refuses new ones until Restore.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore accepts connections again.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// viaProxy rewrites a postgres:// URL to connect through addr.
func viaProxy(tb testing.TB, databaseURL, addr string) string {
	tb.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// eventually polls check every 20 ms until it returns nil or ctx ends, and
// fails with its last error then.
func eventually(ctx context.Context, tb testing.TB, what string, check func() error) {
	tb.Helper()
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("%s: %v (%v)", what, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// mustSettle waits until a paused event's admitted count has stood still
// for settleFor, so a tick under way when the pause came has ended.
func mustSettle(ctx context.Context, tb testing.TB, hc *http.Client, base, id string) {
	tb.Helper()
	last, since := int64(-1), time.Now()
	eventually(ctx, tb, "admissions stop", func() error {
		st, err := stats(ctx, hc, base, id)
		switch {
		case err != nil:
			return err
		case st.AdmittedTotal != last:
			last, since = st.AdmittedTotal, time.Now()
			return fmt.Errorf("%d admitted, still moving", last)
		case time.Since(since) < settleFor:
			return fmt.Errorf("%d admitted for %v", last, time.Since(since))
		}
		return nil
	})
}

// settleFor is two admit intervals of the fault tests' events.
const settleFor = 100 * time.Millisecond

// errStatus is an HTTP answer other than the one wanted.
var errStatus = errors.New("unexpected status")

// raw sends a request and returns the status, the Retry-After header and the body.
func raw(ctx context.Context, hc *http.Client, method, url string, hdr map[string]string, body string) (int, string, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Retry-After"), string(b), nil
}

// mustUnavailable checks an answer is 503 UNAVAILABLE with a Retry-After.
func mustUnavailable(ctx context.Context, hc *http.Client, method, url string, hdr map[string]string, body string) error {
	code, retry, b, err := raw(ctx, hc, method, url, hdr, body)
	if err != nil {
		return err
	}
	if n, _ := strconv.Atoi(retry); code != http.StatusServiceUnavailable || n < 1 || !strings.Contains(b, `"UNAVAILABLE"`) {
		return fmt.Errorf("%w: %s %s: %d, Retry-After %q: %s; want 503 UNAVAILABLE with Retry-After", errStatus, method, url, code, retry, b)
	}
	return nil
}
