package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisDownFailsAfterFewDials: a call to a Redis that is away gives up
// after one dial per try (the first and maxRetries more), not go-redis's
// default five dials a try, so the API's 503 comes at once.
func TestRedisDownFailsAfterFewDials(t *testing.T) {
	// A socket path nothing listens on: unlike a loopback port let go, no
	// Redis another test starts can take it. Its folder is short, as a
	// socket path must be (104 bytes on macOS), which TempDir's may not be.
	dir, err := os.MkdirTemp("", "rl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := filepath.Join(dir, "none.sock")
	var dials atomic.Int64
	c := newClient(&redis.Options{Network: "unix", Addr: addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
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
