package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestRedisDown stops Redis under a running API: every call that needs it
// answers 503 UNAVAILABLE with Retry-After and no internals, nothing is left
// half-done, and after a restart the same calls work again.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	f := MustServer(t, redistest.AppendOnly)
	f.MustCreateEvent(t, EventBody("live"))
	aliceID, alice := f.MustSession(t, "alice")
	_, bob := f.MustSession(t, "bob")
	_, carol := f.MustSession(t, "carol")
	tokA := f.MustJoin(t, "live", Bearer(alice), actual).Str("token")
	tokB := f.MustJoin(t, "live", Bearer(bob), actual).Str("token")

	if err := f.Redis.Stop(); err != nil {
		t.Fatalf("stop redis: %v", err)
	}
	post, get, del, patch := http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPatch
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    any
	}{
		// a new join
		{"join new", post, "/api/v1/events/live/queue", Bearer(carol), actual},
		// a re-join
		{"join again", post, "/api/v1/events/live/queue", Bearer(bob), actual},
		// a VIRTUAL join
		{"join virtual", post, "/api/v1/events/live/queue", simH, map[string]any{"user_type": "VIRTUAL"}},
		// status of a waiting token
		{"status", get, qpath("live", tokB), nil, nil},
		// status of an active token
		{"status active", get, qpath("live", tokA), nil, nil},
		// the event
		{"event", get, "/api/v1/events/live", nil, nil},
		// the event list
		{"events", get, "/api/v1/events", nil, nil},
		// leave
		{"leave", del, qpath("live", tokB), Bearer(bob), nil},
		// verify
		{"verify", post, "/api/v1/events/live/verify", serviceH, map[string]any{"token": tokA, "user_id": aliceID}},
		// seats
		{"seats", get, "/api/v1/events/live/seats", H("X-Queue-Token", tokA), nil},
		// order
		{"order", post, "/api/v1/events/live/orders", Bearer(alice), map[string]any{"token": tokA, "seat": "A-1"}},
		// create an event: the SQL row must be undone
		{"create event", post, "/api/v1/admin/events", adminH, EventBody("during-outage")},
		// change an event: the SQL row must be restored
		{"patch event", patch, "/api/v1/admin/events/live", adminH, map[string]any{"capacity": 9}},
		// pause
		{"pause", post, "/api/v1/admin/events/live/pause", adminH, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, tc.method, tc.path, tc.headers, tc.body)
			MustError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
			if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("Retry-After = %q, want whole seconds >= 1", r.Header.Get("Retry-After"))
			}
		})
	}
	// Readiness names Redis; liveness does not depend on it.
	mustNotReady(t, f.MustDo(t, get, "/readyz", nil, nil), "redis")
	MustStatus(t, f.MustDo(t, get, "/healthz", nil, nil), http.StatusOK)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Redis.Restart(ctx); err != nil {
		t.Fatalf("restart redis: %v", err)
	}
	// The client reconnects on its own, as a load balancer would see it:
	// wait for /readyz. go-redis answers new dials with the outage's last
	// dial error until its background probe (every 1 s) gets through.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := f.MustDo(t, get, "/readyz", nil, nil)
		if r.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready 30 s after the restart: %d %s", r.Status, r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := f.MustDo(t, get, qpath("live", tokB), nil, nil)
	MustStatus(t, r, http.StatusOK)
	mustEntry(t, r, "WAITING", 1) // the leave during the outage did nothing

	again := f.MustJoin(t, "live", Bearer(bob), actual)
	MustStatus(t, again, http.StatusOK)
	if again.Str("token") != tokB {
		t.Errorf("re-join after restart: another token")
	}
	MustStatus(t, f.MustJoin(t, "live", Bearer(carol), actual), http.StatusCreated)

	// Nothing was half-done: no event from the outage, the PATCH and pause undone.
	ev := f.MustDo(t, get, "/api/v1/events/live", nil, nil)
	if c, _ := ev.Num("capacity"); c != 1 || ev.Body["paused"] != false {
		t.Errorf("event after outage = %s, want capacity 1, not paused", ev.Raw)
	}
	if stored, err := f.Store.Event(context.Background(), "live"); err != nil || stored.Capacity != 1 || stored.Paused {
		t.Errorf("stored event after outage = %+v, %v; want capacity 1, not paused", stored, err)
	}
	MustError(t, f.MustDo(t, get, "/api/v1/events/during-outage", nil, nil), http.StatusNotFound, "EVENT_NOT_FOUND")
	f.MustCreateEvent(t, EventBody("during-outage"))
	mustStatsEqual(t, f.mustStats(t, "live"), map[string]float64{"waiting": 2, "active": 1, "admitted_total": 1, "sold": 0})
}
