package app

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisDownFailsAfterFewDials: a call to a Redis that is away gives up
// after one dial per try (the first and maxRetries more), not go-redis's
// default five dials a try, so the API's 503 comes at once.
func TestRedisDownFailsAfterFewDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	var dials atomic.Int64
	c := newClient(&redis.Options{Addr: addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("ping to a closed port succeeded")
	}
	if n := dials.Load(); n < 1 || n > maxRetries+1 {
		t.Errorf("%d dials for one call, want 1 to %d", n, maxRetries+1)
	}
}
