package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc"
)

// poolSize is go-redis's connection pool per node: 64 concurrent callers
// gained 10–15% over the default on a 2-core machine.
const poolSize = 64

// Retry settings: a waiting room answers 503 with Retry-After quickly while
// Redis is away, rather than holding every request through long backoffs. A
// try dials once (go-redis would dial five times, 100 ms apart, per try).
const (
	maxRetries      = 2
	maxRetryBackoff = 50 * time.Millisecond
	dialTimeout     = time.Second
	dialerRetries   = 1
)

func newClient(opt *redis.Options) *redis.Client {
	opt.PoolSize, opt.MaxRetries, opt.MaxRetryBackoff, opt.DialTimeout = poolSize, maxRetries, maxRetryBackoff, dialTimeout
	opt.DialerRetries = dialerRetries
	return redis.NewClient(opt)
}

// connectRedis returns the Redis client the config asks for and a function
// that releases whatever was started for it. See DESIGN.md, "Embedded default".
func connectRedis(ctx context.Context, cfg Config, log *slog.Logger) (redis.UniversalClient, string, func(), error) {
	if cfg.RedisURL != "" {
		rdb, err := dialURL(cfg.RedisURL)
		if err != nil {
			return nil, "", nil, err
		}
		return rdb, "redis " + redact(cfg.RedisURL), func() { _ = rdb.Close() }, nil
	}
	switch cfg.Embedded {
	case "", "redis-server", "miniredis":
	default:
		return nil, "", nil, fmt.Errorf("--embedded must be redis-server or miniredis, got %q", cfg.Embedded)
	}
	if cfg.Embedded == "redis-server" && !redisproc.Available("") {
		return nil, "", nil, fmt.Errorf("--embedded redis-server: redis-server is not on PATH (apt-get install -y redis-server)")
	}
	if cfg.Embedded != "miniredis" && redisproc.Available("") {
		dir := filepath.Join(cfg.DataDir, "redis")
		unlock, err := lockDir(dir)
		if err != nil {
			return nil, "", nil, err
		}
		p, err := redisproc.Start(ctx, redisproc.Options{Dir: dir, AppendOnly: true})
		if err != nil {
			unlock()
			return nil, "", nil, fmt.Errorf("start private redis-server: %w", err)
		}
		rdb := newClient(&redis.Options{Addr: p.Addr()})
		stop := func() { _ = rdb.Close(); _ = p.Stop(); unlock() }
		return rdb, fmt.Sprintf("private redis-server on %s (AOF in %s)", p.Addr(), dir), stop, nil
	}
	m, err := miniredis.Run()
	if err != nil {
		return nil, "", nil, fmt.Errorf("start in-process miniredis: %w", err)
	}
	log.Warn("redis-server not found: using in-process miniredis. It suits a few thousand waiting users at most " +
		"(ZRANK costs O(N) there, about 8x slower than Redis), and keeps nothing across restarts. " +
		"Install redis-server or set REDIS_URL for real use.")
	// miniredis moves key TTLs only when told; keep its clock in step with ours.
	tick := time.NewTicker(time.Second)
	done := make(chan struct{})
	go func() {
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	rdb := newClient(&redis.Options{Addr: m.Addr()})
	stop := func() { tick.Stop(); close(done); _ = rdb.Close(); m.Close() }
	return rdb, "in-process miniredis on " + m.Addr(), stop, nil
}

// dialURL accepts redis://… or rediss://… for one server, or a comma-separated
// list of host:port seeds for a Redis Cluster.
func dialURL(u string) (redis.UniversalClient, error) {
	if strings.Contains(u, "://") && !strings.Contains(u, ",") {
		opt, err := redis.ParseURL(u)
		if err != nil {
			return nil, fmt.Errorf("--redis-url: %w", err)
		}
		return newClient(opt), nil
	}
	var addrs []string
	for _, a := range strings.Split(u, ",") {
		a = strings.TrimPrefix(strings.TrimSpace(a), "redis://")
		if a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("--redis-url: no address in %q", u)
	}
	if len(addrs) == 1 {
		return newClient(&redis.Options{Addr: addrs[0]}), nil
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: poolSize,
		MaxRetries: maxRetries, MaxRetryBackoff: maxRetryBackoff, DialTimeout: dialTimeout, DialerRetries: dialerRetries}), nil
}

// redact hides a password in a URL for logs.
func redact(u string) string {
	if i, j := strings.Index(u, "://"), strings.LastIndex(u, "@"); i >= 0 && j > i {
		return u[:i+3] + "…@" + u[j+1:]
	}
	return u
}

// tailPoolSize is the push hub's own pool: each event with subscribers holds
// one connection in a blocking stream read and uses another for its tick.
const tailPoolSize = 256

// tailClient returns a client on the same Redis as rdb, with a pool of its own
// for the push hub's blocking reads, so they never starve the API's pool.
func tailClient(rdb redis.UniversalClient) redis.UniversalClient {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		o := *c.Options()
		o.PoolSize = tailPoolSize
		return redis.NewClusterClient(&o)
	case *redis.Client:
		o := *c.Options()
		// NewClient stored rdb's push processor in its options; a shared one
		// refuses the copy's handlers ("cannot overwrite existing handler").
		o.PoolSize, o.PushNotificationProcessor = tailPoolSize, nil
		return redis.NewClient(&o)
	}
	return rdb
}

// lockDir takes an exclusive lock on dir (a lock file in it), so two
// processes never run a redis-server on one data directory: a second server,
// or `recover` while a server runs, is refused. The lock dies with its process.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "rushline.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("data dir %s is in use by another rushline-server process (stop it first): %w", dir, err)
	}
	return func() { _ = f.Close() }, nil
}
