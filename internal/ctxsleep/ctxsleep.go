// Package ctxsleep waits for a duration unless a context ends first: the one
// copy of the timer-and-select every background loop of rushline uses.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d and reports true, or reports false as soon as ctx ends. A d
// of zero or less does not wait: it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until waits until t, as Sleep.
func Until(ctx context.Context, t time.Time) bool { return Sleep(ctx, time.Until(t)) }
