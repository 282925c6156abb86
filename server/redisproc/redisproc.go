// Package redisproc runs redis-server as a child process.
//
// The server's zero-config default uses it to start a private Redis, and tests
// use it (through package redistest) to get a real Redis on a free loopback
// port that they may kill, restart or group into a cluster. Children are put
// in their own process group and, on Linux, are sent SIGKILL when the parent
// dies, so a crashed test run leaves no strays.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults used by Start, Stop and Restart.
const (
	// DefaultBinary is the redis-server executable looked up on PATH.
	DefaultBinary = "redis-server"
	// DefaultStartTimeout bounds Start and Restart when ctx has no deadline.
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	DefaultStopTimeout = 10 * time.Second
	// portAttempts is how often Start retries when a picked free port was
	// taken before redis-server could bind it.
	portAttempts = 5
	// tailLines is how many lines of child output an error quotes.
	tailLines = 20
)

// AOF fsync policies for Options.AppendFsync.
const (
	// FsyncAlways fsyncs before acknowledging: Redis groups the writes of
	// one event-loop pass into one fsync, so concurrent clients share it.
	FsyncAlways = "always"
	// FsyncEverySec fsyncs once a second in the background.
	FsyncEverySec = "everysec"
)

// Sentinel errors.
var (
	// ErrRunning is returned by Restart when the process is still running.
	ErrRunning = errors.New("redisproc: process is running")
	// ErrNoDir is returned by Start when AppendOnly is set without Dir.
	ErrNoDir = errors.New("redisproc: AppendOnly needs Dir")
)

// Options configure Start. The zero value starts a non-persistent Redis on a
// free loopback port with a private temporary data dir.
type Options struct {
	// Binary is the redis-server executable; default DefaultBinary on PATH.
	Binary string
	// Dir is the data dir, created if missing. Required for AppendOnly. If
	// empty, a temporary dir is used and removed by Stop.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// AppendOnly turns on the AOF, fsynced as AppendFsync says. Without it
	// nothing persists: RDB snapshots are off (--save "") either way.
	AppendOnly bool
	// AppendFsync is the AOF's fsync policy: FsyncAlways (the default) makes
	// every acknowledged write survive a kill; FsyncEverySec may lose the
	// last second of writes to a kill (not to Stop, which fsyncs).
	AppendFsync string
	// Args are extra redis-server arguments, appended after the defaults so
	// they win, e.g. "--cluster-enabled", "yes". They must not set --port,
	// --bind, --dir or --daemonize.
	Args []string
	// Log receives the child's stdout and stderr; nil discards them.
	Log io.Writer
}

// Available reports whether binary (DefaultBinary if empty) can be found on
// PATH or, if it contains a slash, exists as an executable. It is safe for
// concurrent use.
func Available(binary string) bool {
	if binary == "" {
		binary = DefaultBinary
	}
	_, err := exec.LookPath(binary)
	return err == nil
}

// Process is a running (or stopped) redis-server child. Its methods are safe
// for concurrent use; Stop, Kill and Restart are serialised.
type Process struct {
	opts    Options
	binary  string
	dir     string
	ownsDir bool // dir was made by Start and is removed by Stop
	port    int
	addr    string
	cluster bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been waited for
	waitErr error         // valid after done is closed
	tail    *tailWriter
}

// Start starts redis-server and waits until it answers PING. It gives up when
// ctx ends (or after DefaultStartTimeout if ctx has no deadline); if the child
// exits first, the error quotes its last lines of output. The returned
// process keeps running after ctx ends; call Stop to end it.
func Start(ctx context.Context, o Options) (*Process, error) {
	return start(ctx, o, freePort)
}

// start is Start with the free-port picker passed in, for tests.
func start(ctx context.Context, o Options, pickPort func(cluster bool) (int, error)) (*Process, error) {
	binary := o.Binary
	if binary == "" {
		binary = DefaultBinary
	}
	path, err := exec.LookPath(binary)
	if err != nil {
		return nil, fmt.Errorf("redisproc: find %s: %w", binary, err)
	}
	if o.AppendOnly && o.Dir == "" {
		return nil, ErrNoDir
	}
	switch o.AppendFsync {
	case "", FsyncAlways, FsyncEverySec:
	default:
		return nil, fmt.Errorf("redisproc: AppendFsync must be %s or %s, got %q", FsyncAlways, FsyncEverySec, o.AppendFsync)
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, fmt.Errorf("redisproc: bad port %d", o.Port)
	}
	for _, a := range o.Args {
		switch strings.ToLower(a) {
		case "--port", "--bind", "--dir", "--daemonize":
			// Addr, Stop and Restart rely on these.
			return nil, fmt.Errorf("redisproc: %s is managed by Options, not Args", a)
		}
	}
	p := &Process{opts: o, binary: path, dir: o.Dir, cluster: clusterEnabled(o.Args)}
	if p.dir == "" {
		if p.dir, err = os.MkdirTemp("", "redisproc-*"); err != nil {
			return nil, fmt.Errorf("redisproc: %w", err)
		}
		p.ownsDir = true
	} else {
		// The child runs in its dir, so a relative dir would not resolve there.
		if p.dir, err = filepath.Abs(p.dir); err != nil {
			return nil, fmt.Errorf("redisproc: %w", err)
		}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return nil, fmt.Errorf("redisproc: %w", err)
		}
	}

	ctx, cancel := withDefaultTimeout(ctx, DefaultStartTimeout)
	defer cancel()

	attempts := 1
	if o.Port == 0 {
		attempts = portAttempts
	}
	for i := 0; ; i++ {
		port := o.Port
		if port == 0 {
			if port, err = pickPort(p.cluster); err != nil {
				break
			}
		}
		p.setPort(port)
		p.mu.Lock()
		err = p.startLocked(ctx)
		p.mu.Unlock()
		// A picked port can be grabbed by someone else before the child
		// binds it; pick another.
		if err == nil || i+1 >= attempts || !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		if p.ownsDir {
			os.RemoveAll(p.dir)
		}
		return nil, err
	}
	return p, nil
}

// Addr returns the "127.0.0.1:port" address. It is safe for concurrent use
// and stays the same across Restart.
func (p *Process) Addr() string { return p.addr }

// Pid is the process id of the running redis-server (0 when stopped).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Dir returns the data dir. It is safe for concurrent use.
func (p *Process) Dir() string { return p.dir }

// Stop shuts the server down gracefully with SIGTERM (which fsyncs the AOF
// when AppendOnly is set; with the default --save "" no RDB is written) and
// waits for it to exit, sending SIGKILL after DefaultStopTimeout. It also
// removes a temporary data dir made by Start. Stop is idempotent, may follow
// Kill, and is safe for concurrent use.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	if p.runningLocked() {
		_ = signalTerm(p.cmd.Process)
		select {
		case <-p.done:
			if p.waitErr != nil {
				err = fmt.Errorf("redisproc: stop %s: %w%s", p.addr, p.waitErr, p.tail.quote())
			}
		case <-time.After(DefaultStopTimeout):
			_ = killGroup(p.cmd.Process)
			<-p.done
			err = fmt.Errorf("redisproc: stop %s: no exit %v after SIGTERM; killed", p.addr, DefaultStopTimeout)
		}
	}
	if p.cmd != nil {
		// Reap forked children (AOF rewrite) the server may have left.
		_ = killGroup(p.cmd.Process)
	}
	if p.ownsDir {
		if rerr := os.RemoveAll(p.dir); rerr != nil && err == nil {
			err = fmt.Errorf("redisproc: %w", rerr)
		}
	}
	return err
}

// Kill sends SIGKILL to the server's process group and waits for it to exit,
// simulating a crash: whatever was not yet fsynced is lost. Killing a stopped
// process is a no-op. It is safe for concurrent use.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return nil
	}
	if err := killGroup(p.cmd.Process); err != nil {
		return fmt.Errorf("redisproc: kill %s: %w", p.addr, err)
	}
	<-p.done
	return nil
}

// Restart starts the server again on the same port and dir after Stop or
// Kill, and waits until it answers PING and has loaded its data. It returns
// ErrRunning if the server is still running. It is bounded like Start and is
// safe for concurrent use.
func (p *Process) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return ErrRunning
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil { // Stop removes a temporary dir
		return fmt.Errorf("redisproc: %w", err)
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	return p.startLocked(ctx)
}

func (p *Process) setPort(port int) {
	p.port = port
	p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// runningLocked reports whether the child has been started and not yet
// reaped. p.mu must be held.
func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *Process) args() []string {
	aof := []string{"--appendonly", "no"}
	if p.opts.AppendOnly {
		fsync := p.opts.AppendFsync
		if fsync == "" {
			fsync = FsyncAlways
		}
		aof = []string{"--appendonly", "yes", "--appendfsync", fsync}
	}
	a := []string{
		"--port", strconv.Itoa(p.port),
		"--bind", "127.0.0.1",
		"--dir", p.dir,
		"--logfile", "",
		"--daemonize", "no",
		// No RDB snapshots even with AOF: the AOF is the persistence, and
		// snapshot forks would only cost time. Args may add save points.
		"--save", "",
	}
	a = append(a, aof...)
	return append(a, p.opts.Args...)
}

// startLocked spawns the child and waits until it is ready. On failure the
// child is gone. p.mu must be held.
func (p *Process) startLocked(ctx context.Context) error {
	cmd := exec.Command(p.binary, p.args()...)
	cmd.Dir = p.dir
	p.tail = newTailWriter(p.opts.Log)
	cmd.Stdout = p.tail // same writer for both: one pipe, one copier
	cmd.Stderr = p.tail
	cmd.SysProcAttr = sysProcAttr()
	// A forked child (AOF rewrite) may hold the pipe after the server dies.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisproc: start %s: %w", p.binary, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.waitErr = cmd, done, nil
	go func() {
		err := cmd.Wait()
		p.waitErr = err // published by close(done)
		close(done)
	}()
	if err := waitReady(ctx, p.addr, cmd.Process.Pid, done); err != nil {
		_ = killGroup(cmd.Process)
		<-done
		if errors.Is(err, errExited) && p.waitErr != nil {
			err = fmt.Errorf("%w: %w", err, p.waitErr)
		}
		if p.tail.contains("Address already in use") {
			err = fmt.Errorf("%w: %w", errAddrInUse, err)
		}
		return fmt.Errorf("redisproc: start %s on %s: %w%s", p.binary, p.addr, err, p.tail.quote())
	}
	return nil
}

var (
	errAddrInUse = errors.New("address already in use")
	errExited    = errors.New("exited before ready")
)

// waitReady polls addr until it answers PING as the process with pid (so a
// stranger that grabbed the port does not count) and has loaded its data.
func waitReady(ctx context.Context, addr string, pid int, exited <-chan struct{}) error {
	// Cancel a probe stuck on a port that is not ours once the child dies.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		last = probe(ctx, addr, pid)
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return errExited
		default:
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, addr string, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := dial(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	// PING fails with -LOADING while the AOF is being read.
	if pong, err := c.do("PING"); err != nil {
		return err
	} else if pong != "PONG" {
		return fmt.Errorf("PING answered %q", pong)
	}
	info, err := c.do("INFO", "server")
	if err != nil {
		return err
	}
	if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
		return fmt.Errorf("port answered by process_id %q, not %d", got, pid)
	}
	return nil
}

// infoField returns the value of key in INFO or CLUSTER INFO output.
func infoField(info, key string) string {
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}

// freePort picks a free loopback port. With cluster it also checks the
// cluster bus port, port+10000. Where the kernel says which ports it hands
// to outgoing connections, both are picked below that range, so that no
// connection takes the port while the server is down between Stop and
// Restart, which binds the same port again.
func freePort(cluster bool) (int, error) {
	lo, hi := stablePorts(ephemeralRange())
	for range 50 {
		port := 0
		if hi > lo {
			port = lo + rand.IntN(hi-lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			if port != 0 {
				continue // taken: try another
			}
			return 0, fmt.Errorf("redisproc: pick port: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	if cluster {
		return 0, errors.New("redisproc: pick port: no free port with a free cluster bus port")
	}
	return 0, errors.New("redisproc: pick port: no free port")
}

// ephemeralRange is the text of Linux's ip_local_port_range ("" elsewhere).
func ephemeralRange() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ""
	}
	return string(b)
}

// stablePorts is the range [lo, hi) freePort picks from, given the
// ephemeral range's text: the 12,000 ports whose cluster bus ports end
// just below it. It is empty (0, 0) when the text does not parse or too
// few ports are left above 1024; freePort then takes any the kernel gives.
func stablePorts(ephemeral string) (lo, hi int) {
	f := strings.Fields(ephemeral)
	if len(f) != 2 {
		return 0, 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0
	}
	hi = low - 10000
	lo = max(1024, hi-12000)
	if hi-lo < 1000 {
		return 0, 0
	}
	return lo, hi
}

// clusterEnabled reports whether args turn on cluster mode.
func clusterEnabled(args []string) bool {
	on := false
	for i := 0; i+1 < len(args); i++ {
		if strings.EqualFold(args[i], "--cluster-enabled") {
			on = strings.EqualFold(args[i+1], "yes")
		}
	}
	return on
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
