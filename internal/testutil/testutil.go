// Package testutil holds small helpers the tests of every package share.
package testutil

import (
	"testing"
	"time"
)

// Poll is how often Eventually checks its condition.
const Poll = 10 * time.Millisecond

// Eventually checks cond every Poll until it holds, and fails tb (naming
// what) if it still does not after timeout. Tests wait with it for
// something to happen instead of sleeping for as long as it usually takes.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("after %v still not: %s", timeout, what)
		}
		time.Sleep(Poll)
	}
}
