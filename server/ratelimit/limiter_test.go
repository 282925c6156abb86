package ratelimit_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/ratelimit"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// MustRules parses spec or fails the test.
func MustRules(tb testing.TB, spec string) ratelimit.Rules {
	tb.Helper()
	r, err := ratelimit.Parse(spec)
	if err != nil {
		tb.Fatalf("parse %q: %v", spec, err)
	}
	return r
}

// MustAllow runs one check or fails the test.
func MustAllow(tb testing.TB, l *ratelimit.Limiter, route ratelimit.Route, client string) ratelimit.Result {
	tb.Helper()
	res, err := l.Allow(context.Background(), route, client)
	if err != nil {
		tb.Fatalf("allow %s %s: %v", route, client, err)
	}
	return res
}

func TestAllowBurstThenLimit(t *testing.T) {
	t.Parallel()
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	// One call per minute refills, so the test never sees a refill.
	l := ratelimit.New(rdb, MustRules(t, "join=1/m:3,status=2/m"))
	for i := range 3 {
		res := MustAllow(t, l, ratelimit.Join, "10.0.0.1")
		if !res.Allowed || res.RetryAfter != 0 || res.Remaining != 2-i {
			t.Fatalf("call %d = %+v, want allowed with %d left", i+1, res, 2-i)
		}
	}
	res := MustAllow(t, l, ratelimit.Join, "10.0.0.1")
	if res.Allowed || res.RetryAfter <= 50*time.Second || res.RetryAfter > time.Minute {
		t.Fatalf("4th call = %+v, want limited with a retry within a minute", res)
	}
	// Another client has a budget of its own.
	if res := MustAllow(t, l, ratelimit.Join, "10.0.0.2"); !res.Allowed {
		t.Fatalf("other client = %+v, want allowed", res)
	}
	// So does another route of the same client.
	if res := MustAllow(t, l, ratelimit.Status, "10.0.0.1"); !res.Allowed || res.Remaining != 1 {
		t.Fatalf("other route = %+v, want allowed with 1 left", res)
	}
	// A route without a limit is never counted.
	if l.Limits(ratelimit.Seats) {
		t.Fatal("seats is limited, want not")
	}
	for range 10 {
		if res := MustAllow(t, l, ratelimit.Seats, "10.0.0.1"); !res.Allowed {
			t.Fatalf("unlimited route = %+v", res)
		}
	}
	if n, err := rdb.Exists(context.Background(), ratelimit.KeyPrefix+"seats:10.0.0.1").Result(); err != nil || n != 0 {
		t.Fatalf("unlimited route left a key: %d, %v", n, err)
	}
	// Keys expire once the burst would be back.
	ttl, err := rdb.PTTL(context.Background(), ratelimit.KeyPrefix+"join:10.0.0.1").Result()
	if err != nil || ttl <= 0 || ttl > 3*time.Minute {
		t.Fatalf("key TTL = %s, %v; want within 3 minutes", ttl, err)
	}
}

func TestAllowRefills(t *testing.T) {
	t.Parallel()
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	l := ratelimit.New(rdb, MustRules(t, "status=1/200ms:1"))
	if res := MustAllow(t, l, ratelimit.Status, "c"); !res.Allowed {
		t.Fatalf("first = %+v", res)
	}
	res := MustAllow(t, l, ratelimit.Status, "c")
	if res.Allowed || res.RetryAfter <= 0 || res.RetryAfter > 200*time.Millisecond {
		t.Fatalf("second = %+v, want limited for at most 200ms", res)
	}
	// Limited calls do not count: after RetryAfter the next one passes.
	time.Sleep(res.RetryAfter + 5*time.Millisecond)
	if res := MustAllow(t, l, ratelimit.Status, "c"); !res.Allowed {
		t.Fatalf("after waiting = %+v, want allowed", res)
	}
}

// TestAllowShared: two limiters (two replicas) on one Redis share a budget.
func TestAllowShared(t *testing.T) {
	t.Parallel()
	p := redistest.MustStart(t)
	rules := MustRules(t, "join=1/m:4")
	a := ratelimit.New(redistest.MustClient(t, p.Addr()), rules)
	b := ratelimit.New(redistest.MustClient(t, p.Addr()), rules)
	for i, l := range []*ratelimit.Limiter{a, b, a, b} {
		if res := MustAllow(t, l, ratelimit.Join, "c"); !res.Allowed {
			t.Fatalf("call %d = %+v", i+1, res)
		}
	}
	for i, l := range []*ratelimit.Limiter{a, b} {
		if res := MustAllow(t, l, ratelimit.Join, "c"); res.Allowed {
			t.Fatalf("replica %d after the shared burst = %+v, want limited", i, res)
		}
	}
}

// TestAllowCluster: keys of different clients land on different slots.
func TestAllowCluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.MustClusterClient(t, redistest.MustCluster(t, 3))
	l := ratelimit.New(rdb, MustRules(t, "join=1/m:1"))
	for _, c := range []string{"10.0.0.1", "10.0.0.2", "::1", "2001:db8::7"} {
		if res := MustAllow(t, l, ratelimit.Join, c); !res.Allowed {
			t.Fatalf("%s first = %+v", c, res)
		}
		if res := MustAllow(t, l, ratelimit.Join, c); res.Allowed {
			t.Fatalf("%s second = %+v, want limited", c, res)
		}
	}
}

func TestAllowRedisDown(t *testing.T) {
	t.Parallel()
	// A socket path nothing listens on: unlike a loopback port let go, no
	// Redis another test starts can take it. Its folder is short, as a
	// socket path must be (104 bytes on macOS), which TempDir's may not be.
	dir, err := os.MkdirTemp("", "rl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: filepath.Join(dir, "none.sock"), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	l := ratelimit.New(rdb, MustRules(t, "join=1/s"), ratelimit.WithTimeout(time.Second))
	if res, err := l.Allow(context.Background(), ratelimit.Join, "c"); err == nil {
		t.Fatalf("allow with Redis down = %+v, nil; want an error", res)
	}
	// An unlimited route needs no Redis.
	if res, err := l.Allow(context.Background(), ratelimit.Seats, "c"); err != nil || !res.Allowed {
		t.Fatalf("unlimited route with Redis down = %+v, %v", res, err)
	}
}

// TestAllowTimeout: a Redis that does not answer fails within the timeout.
func TestAllowTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		// Accept and never answer.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ReadTimeout: time.Minute, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	l := ratelimit.New(rdb, MustRules(t, "join=1/s"), ratelimit.WithTimeout(100*time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := l.Allow(context.Background(), ratelimit.Join, "c")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("allow against a silent Redis succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("allow against a silent Redis did not return")
	}
}

// BenchmarkAllow: one check, from 1,000 clients, on a private real Redis.
func BenchmarkAllow(b *testing.B) {
	rdb := redistest.MustClient(b, redistest.MustStart(b).Addr())
	l := ratelimit.New(rdb, MustRules(b, "join=1000000/s:1000000"))
	clients := make([]string, 1000)
	for i := range clients {
		clients[i] = "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Allow(context.Background(), ratelimit.Join, clients[i%len(clients)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
