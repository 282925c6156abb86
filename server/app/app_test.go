package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
)

// client walks the API like a user would.
type client struct {
	tb   testing.TB
	base string
}

// MustCall sends a JSON request and decodes the JSON answer into out (if not nil).
func (c client) MustCall(method, path string, hdr map[string]string, body any, want int, out any) {
	c.tb.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		c.tb.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.tb.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// MustStartServer starts a rushline server on a free port and stops it in
// Cleanup. Its logs go nowhere unless cfg has a Logger.
func MustStartServer(tb testing.TB, cfg app.Config) (*app.Server, client) {
	tb.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		cancel()
		tb.Fatalf("start server: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		_ = srv.Wait()
	})
	return srv, client{tb: tb, base: "http://" + srv.Addr}
}

type entry struct {
	Token    string `json:"token"`
	UserID   string `json:"user_id"`
	Status   string `json:"status"`
	Position int    `json:"position"`
	Pass     string `json:"pass"`
	Seq      int64  `json:"seq"`
}

// walk runs the whole user flow of issue 2 against a running server.
func walk(t *testing.T, srv *app.Server, c client) {
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	c.MustCall("POST", "/api/v1/admin/events", admin, map[string]any{
		"id": "e2e", "name": "End to end", "seats": 3, "capacity": 1, "admit_batch": 1,
		"admit_interval_ms": 50, "active_ttl_s": 30, "policy": "capacity",
	}, 201, nil)

	type session struct {
		UserID string `json:"user_id"`
		Token  string `json:"access_token"`
	}
	var alice, bob session
	c.MustCall("POST", "/api/v1/sessions", nil, map[string]string{"nickname": "alice"}, 201, &alice)
	c.MustCall("POST", "/api/v1/sessions", nil, map[string]string{"nickname": "bob"}, 201, &bob)
	aliceAuth := map[string]string{"Authorization": "Bearer " + alice.Token}
	bobAuth := map[string]string{"Authorization": "Bearer " + bob.Token}

	// A bot takes the only active slot, so alice has to wait.
	var bot, first entry
	c.MustCall("POST", "/api/v1/events/e2e/queue", map[string]string{"X-Simulator-Key": srv.Keys.Simulator},
		map[string]string{"user_type": "VIRTUAL", "bot_id": "b1"}, 201, &bot)
	c.MustCall("POST", "/api/v1/events/e2e/queue", aliceAuth, map[string]string{"user_type": "ACTUAL"}, 201, &first)
	if bot.Status != "ACTIVE" || bot.UserID != "VIRTUAL:b1" || first.Status != "WAITING" || first.Position != 1 {
		t.Fatalf("bot %+v, alice %+v", bot, first)
	}
	// The bot leaves; the ticker promotes alice.
	c.MustCall("DELETE", "/api/v1/events/e2e/queue/"+bot.Token, map[string]string{"X-Simulator-Key": srv.Keys.Simulator}, nil, 204, nil)
	var st entry
	deadline := time.Now().Add(10 * time.Second)
	for st.Status != "ACTIVE" {
		if time.Now().After(deadline) {
			t.Fatalf("alice not promoted: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
		c.MustCall("GET", "/api/v1/events/e2e/queue/"+first.Token, nil, nil, 200, &st)
	}
	if st.Pass == "" {
		t.Fatal("ACTIVE status without a pass")
	}
	var ver struct{ Status string }
	c.MustCall("POST", "/api/v1/events/e2e/verify", map[string]string{"X-Service-Key": srv.Keys.Service},
		map[string]string{"token": first.Token, "user_id": alice.UserID}, 200, &ver)
	var seats struct {
		Seats []struct {
			ID    string `json:"id"`
			Taken bool   `json:"taken"`
		} `json:"seats"`
	}
	c.MustCall("GET", "/api/v1/events/e2e/seats", map[string]string{"X-Queue-Token": first.Token}, nil, 200, &seats)
	if ver.Status != "ACTIVE" || len(seats.Seats) != 3 {
		t.Fatalf("verify %+v, %d seats", ver, len(seats.Seats))
	}
	c.MustCall("POST", "/api/v1/events/e2e/orders", bobAuth, map[string]string{"token": first.Token, "seat": "A-1"}, 403, nil)
	var order struct {
		OrderID string `json:"order_id"`
		Seat    string `json:"seat"`
	}
	c.MustCall("POST", "/api/v1/events/e2e/orders", aliceAuth, map[string]string{"token": first.Token, "seat": "A-1"}, 201, &order)
	c.MustCall("GET", "/api/v1/events/e2e/queue/"+first.Token, nil, nil, 200, &st)
	if st.Status != "DONE" || order.Seat != "A-1" {
		t.Fatalf("after order: %+v %+v", st, order)
	}
	var again entry
	c.MustCall("POST", "/api/v1/events/e2e/queue", aliceAuth, map[string]string{"user_type": "ACTUAL"}, 201, &again)
	if again.Token == first.Token || again.Status != "ACTIVE" {
		t.Fatalf("join again: %+v", again)
	}
	var ev struct {
		Stats struct {
			Sold          int `json:"sold"`
			AdmittedTotal int `json:"admitted_total"`
		} `json:"stats"`
	}
	c.MustCall("GET", "/api/v1/events/e2e", nil, nil, 200, &ev)
	if ev.Stats.Sold != 1 || ev.Stats.AdmittedTotal != 3 {
		t.Fatalf("stats %+v", ev.Stats)
	}
}

// MustAudit waits until the SQL audit trail holds want entries of event,
// the last of them no longer WAITING.
func MustAudit(tb testing.TB, dataDir, event string, want int) []store.Entry {
	tb.Helper()
	return MustAuditWhere(tb, dataDir, event, want, func(es []store.Entry) bool { return es[want-1].Status != "WAITING" })
}

// MustAuditWhere waits until the SQL audit trail in dataDir holds want
// entries of event and ok (nil: always) accepts them.
func MustAuditWhere(tb testing.TB, dataDir, event string, want int, ok func([]store.Entry) bool) []store.Entry {
	tb.Helper()
	db, err := store.Open(context.Background(), "", dataDir)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, err := db.Entries(context.Background(), event)
		if err == nil && len(entries) == want && (ok == nil || ok(entries)) {
			return entries
		}
		if time.Now().After(deadline) {
			tb.Fatalf("audit trail has %d entries (%v), want %d", len(entries), err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEndToEnd(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(t *testing.T) app.Config
		// chdir cases change the process's working directory: they run
		// alone, the others in parallel once they are done.
		chdir bool
	}{
		// Exactly what `make run` does: nothing configured, data in ./data.
		{"zero config", func(t *testing.T) app.Config {
			t.Chdir(t.TempDir())
			return app.Config{DataDir: "./data"}
		}, true},
		// The embedded default with redis-server on PATH: a private child process.
		{"embedded redis-server", func(t *testing.T) app.Config { return app.Config{Embedded: "redis-server"} }, false},
		// The embedded fallback without redis-server: in-process miniredis.
		{"embedded miniredis", func(t *testing.T) app.Config { return app.Config{Embedded: "miniredis"} }, false},
		// A real Redis given by URL.
		{"real redis by url", func(t *testing.T) app.Config {
			return app.Config{RedisURL: "redis://" + redistest.MustStart(t).Addr()}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.chdir {
				t.Parallel()
			}
			cfg := tc.cfg(t)
			if cfg.DataDir == "" {
				cfg.DataDir = t.TempDir()
			}
			srv, c := MustStartServer(t, cfg)
			walk(t, srv, c)
			entries := MustAudit(t, cfg.DataDir, "e2e", 3)
			if entries[1].Status != "DONE" || entries[0].Status != "LEFT" {
				t.Fatalf("audit: %+v", entries)
			}
		})
	}
}

func TestEventsSurviveRestart(t *testing.T) {
	t.Parallel()
	for _, embedded := range []string{"redis-server", "miniredis"} {
		t.Run(embedded, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			cfg := app.Config{Addr: "127.0.0.1:0", DataDir: dir, Embedded: embedded, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			srv, err := app.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := client{tb: t, base: "http://" + srv.Addr}
			c.MustCall("POST", "/api/v1/admin/events", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
				"id": "kept", "seats": 10, "capacity": 5, "admit_batch": 5, "admit_interval_ms": 1000, "active_ttl_s": 60, "policy": "batch",
			}, 201, nil)
			adminKey := srv.Keys.Admin
			cancel()
			if err := srv.Wait(); err != nil {
				t.Fatal(err)
			}
			srv2, c2 := MustStartServer(t, cfg)
			if srv2.Keys.Admin != adminKey {
				t.Fatal("keys changed across a restart")
			}
			var ev struct {
				ID     string `json:"id"`
				Policy string `json:"policy"`
			}
			// Without persistence (miniredis) the event comes back by a
			// rebuild from SQL, answering 503 (never 404) meanwhile.
			deadline := time.Now().Add(10 * time.Second)
			for {
				res, err := http.Get(c2.base + "/api/v1/events/kept")
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode == http.StatusOK || time.Now().After(deadline) {
					break
				}
				if res.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("after restart: %d, want 200 or 503 while rebuilt", res.StatusCode)
				}
				time.Sleep(20 * time.Millisecond)
			}
			c2.MustCall("GET", "/api/v1/events/kept", nil, nil, 200, &ev)
			if ev.ID != "kept" || ev.Policy != "batch" {
				t.Fatalf("after restart: %+v", ev)
			}
		})
	}
}
