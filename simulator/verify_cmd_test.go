package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/simulator/internal/simtest"
)

// post sends a JSON POST and fails the test unless it answers want.
func post(tb testing.TB, url string, hdr map[string]string, body any, want int) {
	tb.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != want {
		tb.Fatalf("POST %s: %d, want %d", url, res.StatusCode, want)
	}
}

// TestVerifyDraw pre-queues bots for an opening a few seconds away, and
// verify-draw finds the draw matching once the audit trail holds it.
func TestVerifyDraw(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a real opening")
	}
	base, data := simtest.MustServerData(t)
	// Room for 40 joins and a verify-draw before it, under -race on a busy machine.
	opens := time.Now().Add(6 * time.Second).UTC()
	post(t, base+"/api/v1/admin/events", map[string]string{"X-Admin-Key": simtest.Keys.Admin}, map[string]any{
		"id": "fair-verify", "seats": 10, "capacity": 5, "admit_batch": 5, "admit_interval_ms": 100, "active_ttl_s": 60,
		"policy": "capacity", "queue_mode": "random_start", "opens_at": opens.Format(time.RFC3339Nano),
	}, http.StatusCreated)
	for i := range 40 {
		post(t, base+"/api/v1/events/fair-verify/queue", map[string]string{"X-Simulator-Key": simtest.Keys.Simulator},
			map[string]any{"user_type": "VIRTUAL", "bot_id": fmt.Sprintf("early-%d", i)}, http.StatusCreated)
	}
	_, _, err := MustSim(t, "verify-draw", "fair-verify", "--target", base, "--data", data)
	if err == nil || !strings.Contains(err.Error(), "EVENT_NOT_OPEN") {
		t.Fatalf("verify-draw before the opening: %v, want EVENT_NOT_OPEN", err)
	}
	var out string
	testutil.Eventually(t, 30*time.Second, "verify-draw finds the draw matching", func() bool {
		out, _, err = MustSim(t, "verify-draw", "fair-verify", "--target", base, "--data", data)
		return err == nil
	})
	if !strings.Contains(out, "MATCH") || !strings.Contains(out, "40 drawn users") {
		t.Fatalf("verify-draw said %q", out)
	}
}
