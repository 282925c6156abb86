//go:build linux

package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// TestStartWithoutSQL: PostgreSQL does not answer when the server starts
// (a proxy in front of it refuses every connection, and its schema is still
// empty). The server starts anyway and serves the queue of an event Redis
// knows; /readyz names the database; admin writes answer 503. Once the
// proxy lets connections through, the server makes the schema, the audit
// trail of the outage lands, and admin writes work.
func TestStartWithoutSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: runs in make test")
	}
	const (
		event  = "nosql"
		joined = 40
	)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	databaseURL := storetest.MustPostgresSchema(t)
	pg, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := MustProxy(t, pg.Host)
	proxy.Cut()
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	keys := newKeys(t)
	// An event from before the outage: Redis holds its definition.
	if err := queue.New(rdb, queueTokenKey(keys.JWTSecret)).CreateEvent(ctx, queue.Event{ID: event, Name: event, Seats: 100,
		Capacity: 1000, AdmitBatch: 100, AdmitIntervalMS: 100, ActiveTTLS: 600, Policy: queue.PolicyCapacity,
		CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}

	srv, _ := MustStartServer(t, app.Config{RedisURL: "redis://" + rp.Addr(), DatabaseURL: viaProxy(t, databaseURL, proxy.Addr()),
		DataDir: t.TempDir(), Keys: keys})
	base := "http://" + srv.Addr
	hc := newHTTPClient(t)
	admin := map[string]string{"X-Admin-Key": keys.Admin}
	code, retry, body, err := raw(ctx, hc, "GET", base+"/readyz", nil, "")
	if err != nil || code != http.StatusServiceUnavailable || retry == "" ||
		!strings.Contains(body, `"down":["database"]`) || !strings.Contains(body, `"status":"unavailable"`) {
		t.Fatalf("readyz without SQL: %d %q %s %v; want 503 naming the database", code, retry, body, err)
	}
	if err := call(ctx, hc, "GET", base+"/healthz", nil, nil, 200, nil); err != nil {
		t.Fatal(err)
	}

	tokens := mustJoinBots(ctx, t, hc, []string{base}, keys, event, "b", joined)
	for _, tok := range tokens {
		if tok.Status != "ACTIVE" {
			t.Fatalf("join without SQL: %+v, want ACTIVE at once", tok)
		}
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/api/v1/admin/events", `{"id":"later","seats":1,"capacity":1,"admit_batch":1,"admit_interval_ms":100,"active_ttl_s":60,"policy":"capacity"}`},
		{"PATCH", "/api/v1/admin/events/" + event, `{"capacity":5}`},
		{"POST", "/api/v1/admin/events/" + event + "/pause", ""},
	} {
		if err := mustUnavailable(ctx, hc, tc.method, base+tc.path, admin, tc.body); err != nil {
			t.Errorf("admin write without SQL: %v", err)
		}
	}

	proxy.Restore()
	eventually(ctx, t, "ready once SQL answers", func() error {
		return call(ctx, hc, "GET", base+"/readyz", nil, nil, 200, nil)
	})
	db, err := store.Open(ctx, databaseURL, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eventually(ctx, t, "the outage's audit trail in SQL", func() error {
		entries, err := db.Entries(ctx, event)
		if err == nil && len(entries) != joined {
			err = fmt.Errorf("%d entries, want %d", len(entries), joined)
		}
		for _, e := range entries {
			if err == nil && e.Status != queue.StatusActive {
				err = fmt.Errorf("entry %d is %s, want ACTIVE", e.Seq, e.Status)
			}
		}
		return err
	})
	if err := call(ctx, hc, "POST", base+"/api/v1/admin/events", admin, map[string]any{"id": "later", "seats": 1, "capacity": 1,
		"admit_batch": 1, "admit_interval_ms": 100, "active_ttl_s": 60, "policy": "capacity"}, 201, nil); err != nil {
		t.Errorf("admin write after SQL came back: %v", err)
	}
}
