package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestRecoverAfterRestartSync: Redis loses its data and a server starts
// before `recover` runs. The server's Sync resumes the seq counter from the
// audit trail, so a new join never reuses an audited seq; recover then
// puts the old line back, without force, in front of the new join, and the
// old tokens answer as before.
func TestRecoverAfterRestartSync(t *testing.T) {
	const event = "resync"
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	cfg := app.Config{Addr: "127.0.0.1:0", RedisURL: "redis://" + rp.Addr(), DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := client{tb: t, base: "http://" + srv.Addr}
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	sim := map[string]string{"X-Simulator-Key": srv.Keys.Simulator}
	c.MustCall("POST", "/api/v1/admin/events", admin, map[string]any{
		"id": event, "seats": 10, "capacity": 1, "admit_batch": 1, "admit_interval_ms": 50, "active_ttl_s": 60, "policy": "capacity",
	}, 201, nil)
	c.MustCall("POST", "/api/v1/admin/events/"+event+"/pause", admin, nil, 200, nil)
	old := make([]entry, 3)
	for i := range old {
		c.MustCall("POST", "/api/v1/events/"+event+"/queue", sim,
			map[string]string{"user_type": "VIRTUAL", "bot_id": fmt.Sprintf("old-%d", i)}, 201, &old[i])
	}
	MustAuditWhere(t, cfg.DataDir, event, len(old), nil)
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}

	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	_, c2 := MustStartServer(t, cfg) // Sync re-mirrors the event
	var fresh entry
	c2.MustCall("POST", "/api/v1/events/"+event+"/queue", sim,
		map[string]string{"user_type": "VIRTUAL", "bot_id": "new"}, 201, &fresh)
	if seq := rdb.Get(context.Background(), queue.Keys(event)[1]).Val(); seq != "4" {
		t.Fatalf("seq counter after the new join %q, want 4: the audited seqs 1..3 must not be reused", seq)
	}

	if _, err := app.Recover(context.Background(), cfg, event, false); err != nil {
		t.Fatalf("recover after a restart, without force: %v", err)
	}
	if _, err := app.Recover(context.Background(), cfg, event, false); queue.ErrorCode(err) != queue.CodeEventExists {
		t.Fatalf("a second recover without force: %v, want %s", err, queue.CodeEventExists)
	}
	for i, en := range append(old, fresh) {
		var got entry
		c2.MustCall("GET", "/api/v1/events/"+event+"/queue/"+en.Token, nil, nil, 200, &got)
		if got.Status != "WAITING" || got.Position != i+1 {
			t.Errorf("token %d after recovery: %+v, want WAITING at %d", i, got, i+1)
		}
	}
}
