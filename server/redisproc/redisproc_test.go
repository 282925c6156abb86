package redisproc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartPingStop(t *testing.T) {
	ctx := testContext(t)
	var log syncBuffer
	p := redistest.MustStart(t, func(o *redisproc.Options) { o.Log = &log })

	host, _, err := net.SplitHostPort(p.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q, want 127.0.0.1:port", p.Addr())
	}
	c := redistest.MustClient(t, p.Addr())
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "Ready to accept connections") {
		t.Errorf("Log did not get the server's output; got:\n%s", log.String())
	}

	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill after Stop: %v", err)
	}
	if conn, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Stop", p.Addr())
	}
}

func TestStartTempDir(t *testing.T) {
	ctx := testContext(t)
	p, err := redisproc.Start(ctx, redisproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	if _, err := os.Stat(p.Dir()); err != nil {
		t.Fatalf("temporary dir: %v", err)
	}
	redistest.MustClient(t, p.Addr())
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stop left the temporary dir %s: %v", p.Dir(), err)
	}
}

// everySec turns on the AOF with appendfsync everysec.
func everySec(o *redisproc.Options) {
	o.AppendOnly = true
	o.AppendFsync = redisproc.FsyncEverySec
}

func TestRestart(t *testing.T) {
	tests := []struct {
		name     string
		opts     func(*redisproc.Options)
		down     func(*redisproc.Process) error
		wait     time.Duration // after the write, before going down
		wantKept bool
		// wantFsync is the appendfsync the server must run with ("no AOF" when off).
		wantFsync string
	}{
		{
			// The default fsyncs every write, so a crash right after it loses nothing.
			name:      "kill with the default appendfsync always",
			opts:      redistest.AppendOnly,
			down:      (*redisproc.Process).Kill,
			wantKept:  true,
			wantFsync: "always",
		},
		{
			// everysec loses at most the last second.
			name:      "kill with appendfsync everysec after 1.5s",
			opts:      everySec,
			down:      (*redisproc.Process).Kill,
			wait:      1500 * time.Millisecond,
			wantKept:  true,
			wantFsync: "everysec",
		},
		{
			// SIGTERM flushes the AOF.
			name:      "stop with appendfsync everysec",
			opts:      everySec,
			down:      (*redisproc.Process).Stop,
			wantKept:  true,
			wantFsync: "everysec",
		},
		{
			// Proves Restart really restarted: nothing persists.
			name:      "kill without AOF",
			opts:      func(*redisproc.Options) {},
			down:      (*redisproc.Process).Kill,
			wantKept:  false,
			wantFsync: "no AOF",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			p := redistest.MustStart(t, tt.opts)
			c := redistest.MustClient(t, p.Addr())
			cfg, err := c.ConfigGet(ctx, "append*").Result()
			if err != nil {
				t.Fatal(err)
			}
			fsync := cfg["appendfsync"]
			if cfg["appendonly"] != "yes" {
				fsync = "no AOF"
			}
			if fsync != tt.wantFsync {
				t.Fatalf("appendfsync %q, want %q", fsync, tt.wantFsync)
			}
			if err := c.Set(ctx, "before-down", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tt.wait)
			addr := p.Addr()
			if err := tt.down(p); err != nil {
				t.Fatalf("down: %v", err)
			}
			if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				conn.Close()
				t.Fatalf("%s accepts connections while down", addr)
			}
			if err := p.Restart(ctx); err != nil {
				t.Fatalf("Restart: %v", err)
			}
			if p.Addr() != addr {
				t.Fatalf("Restart moved from %s to %s", addr, p.Addr())
			}
			got, err := c.Get(ctx, "before-down").Result()
			switch {
			case tt.wantKept && err != nil:
				t.Fatalf("key lost: %v", err)
			case tt.wantKept && got != "v":
				t.Fatalf("key = %q, want v", got)
			case !tt.wantKept && !errors.Is(err, redis.Nil):
				t.Fatalf("key = %q, %v; want redis.Nil", got, err)
			}
			if err := p.Restart(ctx); !errors.Is(err, redisproc.ErrRunning) {
				t.Fatalf("Restart while running = %v, want ErrRunning", err)
			}
		})
	}
}

func TestDistinctPorts(t *testing.T) {
	const n = 4
	procs := make([]*redisproc.Process, n)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			procs[i] = redistest.MustStart(t)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	seen := map[string]bool{}
	for _, p := range procs {
		if seen[p.Addr()] {
			t.Fatalf("two processes on %s", p.Addr())
		}
		seen[p.Addr()] = true
		redistest.MustClient(t, p.Addr())
	}
}

func TestStartErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		opts    redisproc.Options
		wantErr error  // checked with errors.Is when set
		wantMsg string // substring of the error
	}{
		{
			// No such binary on PATH.
			name:    "missing binary",
			opts:    redisproc.Options{Binary: "no-such-redis-server-xyz"},
			wantErr: exec.ErrNotFound,
		},
		{
			// AOF without a dir would be lost.
			name:    "append only without dir",
			opts:    redisproc.Options{AppendOnly: true},
			wantErr: redisproc.ErrNoDir,
		},
		{
			// The child dies; its output is quoted.
			name:    "bad argument",
			opts:    redisproc.Options{Args: []string{"--no-such-directive", "1"}},
			wantMsg: "Bad directive",
		},
		{
			// Addr would lie.
			name:    "port in Args",
			opts:    redisproc.Options{Args: []string{"--port", "6379"}},
			wantMsg: "managed by Options",
		},
		{
			// A fixed port is not retried.
			name:    "port in use",
			opts:    redisproc.Options{Port: busyPort},
			wantMsg: "Address already in use",
		},
		{
			// Start is bounded by ctx.
			name:    "canceled context",
			ctx:     canceled,
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = testContext(t)
			}
			p, err := redisproc.Start(ctx, tt.opts)
			if err == nil {
				p.Stop()
				t.Fatal("Start succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %v, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	tests := []struct {
		name   string
		binary string
		want   bool
	}{
		// Empty means redis-server, which the tests need.
		{name: "default", binary: "", want: true},
		{name: "missing", binary: "no-such-redis-server-xyz", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redisproc.Available(tt.binary); got != tt.want {
				t.Errorf("Available(%q) = %v, want %v", tt.binary, got, tt.want)
			}
		})
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-master Redis Cluster: runs in make test")
	}
	ctx := testContext(t)
	cl := redistest.MustCluster(t, 3)
	if n := len(cl.Addrs()); n != 3 {
		t.Fatalf("%d addrs, want 3", n)
	}
	cc := redistest.MustClusterClient(t, cl)

	// Enough keys to land on every master.
	for i := range 30 {
		k := fmt.Sprintf("key-%d", i)
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	for i := range 30 {
		k := fmt.Sprintf("key-%d", i)
		if got, err := cc.Get(ctx, k).Int(); err != nil || got != i {
			t.Fatalf("GET %s = %d, %v; want %d", k, got, err, i)
		}
	}
	for _, addr := range cl.Addrs() {
		c := redistest.MustClient(t, addr)
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			t.Errorf("%s: CLUSTER INFO:\n%s", addr, info)
		}
		if n, err := c.DBSize(ctx).Result(); err != nil || n == 0 {
			t.Errorf("%s holds %d keys (%v); want some on every master", addr, n, err)
		}
	}

	if err := cl.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStartClusterTooFewMasters(t *testing.T) {
	if _, err := redisproc.StartCluster(testContext(t), t.TempDir(), 2); err == nil {
		t.Fatal("StartCluster with 2 masters succeeded")
	}
}

// TestChildDiesWithParent runs a helper process that starts a server and
// exits without stopping it; the server must go with it.
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	if os.Getenv("REDISPROC_ORPHAN_HELPER") == "1" {
		p, err := redisproc.Start(context.Background(), redisproc.Options{Dir: os.Getenv("REDISPROC_ORPHAN_DIR")})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(p.Addr())
		os.Exit(0) // no Stop
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	cmd.Env = append(os.Environ(), "REDISPROC_ORPHAN_HELPER=1", "REDISPROC_ORPHAN_DIR="+filepath.Join(t.TempDir(), "orphan"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	addr := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("helper printed %q", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return // gone
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("server on %s outlived its parent", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A relative data dir (the server's default is ./data) works with AOF on,
// although the child runs inside that dir.
func TestRelativeDir(t *testing.T) {
	t.Chdir(t.TempDir())
	p, err := redisproc.Start(context.Background(), redisproc.Options{Dir: "data/redis", AppendOnly: true})
	if err != nil {
		t.Fatalf("start with a relative dir: %v", err)
	}
	defer p.Stop()
	if !filepath.IsAbs(p.Dir()) {
		t.Fatalf("Dir() = %q, want absolute", p.Dir())
	}
	if _, err := os.Stat(filepath.Join("data", "redis")); err != nil {
		t.Fatalf("relative dir not made: %v", err)
	}
}
