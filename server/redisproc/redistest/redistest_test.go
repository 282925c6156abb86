package redistest_test

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

func TestMustStartStopsInCleanup(t *testing.T) {
	var addr string
	t.Run("use", func(t *testing.T) {
		p := redistest.MustStart(t)
		addr = p.Addr()
		c := redistest.MustClient(t, addr)
		if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still up after the test's cleanup", addr)
	}
}

// fatalTB records Fatalf instead of failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMustStartMissingBinaryFails(t *testing.T) {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.MustStart(tb, func(o *redisproc.Options) { o.Binary = "no-such-redis-server-xyz" })
	}()
	<-done
	if !strings.Contains(tb.msg, "apt-get install -y redis-server") {
		t.Fatalf("Fatalf message = %q, want the install hint", tb.msg)
	}
}
