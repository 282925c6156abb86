// Package redistest starts real redis-server processes for tests, on free
// loopback ports, and stops them when the test ends. It never uses a Redis
// already running on the machine, and it fails (never skips) when
// redis-server is missing, so a green run always means Redis was exercised.
package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc"
)

// Timeout bounds starting a server or cluster and the first PING.
const Timeout = 30 * time.Second

// MustStart starts a redis-server with its data in tb.TempDir() and stops it
// in tb.Cleanup. opts adjust the Options before the start. It is safe for
// concurrent use by parallel tests.
func MustStart(tb testing.TB, opts ...func(*redisproc.Options)) *redisproc.Process {
	tb.Helper()
	// hz 100: Redis acts on SIGTERM in its next cron pass, 100 ms away at
	// the default hz 10, so each Stop would wait up to 100 ms; tests start
	// hundreds of servers. opts may set another hz.
	o := redisproc.Options{Dir: tb.TempDir(), Args: []string{"--hz", "100"}}
	for _, opt := range opts {
		opt(&o)
	}
	mustHave(tb, o.Binary)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	p, err := redisproc.Start(ctx, o)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("redistest: %v", err)
		}
	})
	return p
}

// AppendOnly is a MustStart option that turns on the AOF.
func AppendOnly(o *redisproc.Options) { o.AppendOnly = true }

// MustClient returns a client for addr that has answered PING and is closed
// in tb.Cleanup. opts adjust the Options first (e.g. FailFast). It is safe
// for concurrent use by parallel tests.
func MustClient(tb testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{Addr: addr}
	for _, opt := range opts {
		opt(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redistest: ping %s: %v", addr, err)
	}
	return c
}

// MustCPU is the CPU time, user and system, the Redis server behind rdb has
// used so far (INFO cpu): a benchmark reads it around its work to report
// Redis's share of each op.
func MustCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatalf("redistest: INFO cpu: %v", err)
	}
	cpu, err := redisproc.InfoCPU(info)
	if err != nil {
		tb.Fatal(err)
	}
	return cpu
}

// MustCluster starts a Redis Cluster of masters (at least 3) with its data in
// tb.TempDir() and stops it in tb.Cleanup. It is safe for concurrent use by
// parallel tests.
func MustCluster(tb testing.TB, masters int) *redisproc.Cluster {
	tb.Helper()
	mustHave(tb, "")
	mustHave(tb, redisproc.DefaultCLI)
	dir := tb.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c, err := redisproc.StartCluster(ctx, dir, masters)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("redistest: %v", err)
		}
	})
	return c
}

// FailFast is a MustClient option for tests that stop Redis under a client:
// the server's retries (two, at most 50 ms apart) with one dial per try, so
// a call to a stopped Redis fails in milliseconds rather than after
// go-redis's default five dials 100 ms apart on each of four tries.
func FailFast(o *redis.Options) {
	o.MaxRetries, o.MaxRetryBackoff, o.DialerRetries = 2, 50*time.Millisecond, 1
}

// MustClusterClient returns a cluster client for c that has answered PING on
// every master and is closed in tb.Cleanup.
func MustClusterClient(tb testing.TB, c *redisproc.Cluster) *redis.ClusterClient {
	tb.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Ping(ctx).Err()
	})
	if err != nil {
		tb.Fatalf("redistest: ping cluster %v: %v", c.Addrs(), err)
	}
	return cc
}

func mustHave(tb testing.TB, binary string) {
	tb.Helper()
	if binary == "" {
		binary = redisproc.DefaultBinary
	}
	if !redisproc.Available(binary) {
		tb.Fatalf("redistest: %s not found on PATH; install it with `apt-get install -y redis-server`", binary)
	}
}
