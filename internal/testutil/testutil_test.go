package testutil_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/testutil"
)

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

func TestEventually(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holdsAt int // the call on which cond first holds; 0: never
		timeout time.Duration
		wantMsg string
	}{
		{name: "holds at once", holdsAt: 1, timeout: time.Minute},
		{name: "holds after a few polls", holdsAt: 4, timeout: time.Minute},
		{name: "never holds", holdsAt: 0, timeout: 50 * time.Millisecond, wantMsg: "after 50ms still not: the thing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := &fatalTB{TB: t}
			calls := 0
			done := make(chan struct{})
			go func() {
				defer close(done)
				testutil.Eventually(tb, tc.timeout, "the thing", func() bool {
					calls++
					return tc.holdsAt > 0 && calls >= tc.holdsAt
				})
			}()
			<-done
			if tb.msg != tc.wantMsg {
				t.Errorf("failure %q, want %q", tb.msg, tc.wantMsg)
			}
			if tc.holdsAt > 0 && calls != tc.holdsAt {
				t.Errorf("cond called %d times, want %d: Eventually must stop once it holds", calls, tc.holdsAt)
			}
			if tc.holdsAt == 0 && !strings.Contains(tb.msg, "the thing") {
				t.Errorf("the failure does not name what was awaited: %q", tb.msg)
			}
		})
	}
}
