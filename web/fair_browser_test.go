package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageSolvesChallengeAndWaitsForDraw: the waiting room solves a 20-bit
// proof-of-work challenge in its Web Worker (a join without one is refused),
// shows the pre-queue state of a random_start event, and once the draw has
// run at the opening shows the place it gave.
func TestPageSolvesChallengeAndWaitsForDraw(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	srv, base := MustStartServer(t)
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	// The join must come before the opening: a 20-bit challenge takes a
	// second or two alone, and tens of seconds in a Chromium starved by
	// the rest of make test (a 12 s lead ran out in this machine's runs).
	opens := time.Now().Add(30 * time.Second).UTC().Truncate(time.Second)
	MustCall(t, "POST", base+"/api/v1/admin/events", admin, map[string]any{
		"id": "web-fair", "name": "Fair opening", "seats": 30, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 60, "policy": "capacity",
		"queue_mode": "random_start", "opens_at": opens.Format(time.RFC3339),
		"challenge": "pow", "pow_bits": 20,
	}, nil)
	b := MustBrowser(t, 120*time.Second, 1280, 900)
	b.MustRun(t, "opening the waiting room",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("nickname")),
	)
	b.MustWait(t, "the event in the table", `!!document.querySelector('#events-body tr[data-id="web-fair"]')`, 20*time.Second)
	b.MustRun(t, "starting a session and joining",
		chromedp.SendKeys(chromedp.ID("nickname"), "fair-fan"),
		chromedp.Click(chromedp.ID("start-session")),
		chromedp.WaitVisible(chromedp.ID("session-info")),
		chromedp.SetValue(chromedp.ID("event-select"), "web-fair"),
	)
	b.MustWait(t, "the join button", `!document.getElementById("join").disabled`, 10*time.Second)
	clicked := time.Now()
	b.MustRun(t, "joining", chromedp.Click(chromedp.ID("join")))
	b.MustWait(t, "the challenge's progress", visible("#pow-progress"), 10*time.Second)
	b.MustWait(t, "the pre-queue state", visible("#prequeue"), 60*time.Second)
	t.Logf("a 20-bit challenge fetched, solved and the join answered in %v", time.Since(clicked).Round(time.Millisecond))
	if got := MustEval[string](t, b, `document.getElementById("prequeue-text").textContent`); !strings.Contains(got, "the order is drawn at") {
		t.Fatalf("pre-queue text = %q", got)
	}
	if got := MustEval[float64](t, b, `document.getElementById("pow-progress").value`); got != 100 {
		t.Errorf("progress after solving = %v, want 100", got)
	}
	b.MustShot(t, "fair-prequeue.png")
	b.MustPhone(t)
	b.MustShot(t, "fair-prequeue-phone.png")
	// The page joins again at the opening and shows the drawn place (capacity
	// 5: the only pre-queued user is admitted by the first tick).
	b.MustWait(t, "the ticket after the draw", visible("#ticket")+` && document.getElementById("status").textContent === "ACTIVE"`, 40*time.Second)
	if visibleNow := MustEval[bool](t, b, visible("#prequeue")); visibleNow {
		t.Error("the pre-queue box is still shown next to the ticket")
	}
	var draw struct {
		Drawn int  `json:"drawn"`
		Done  bool `json:"done"`
	}
	MustCall(t, "GET", base+"/api/v1/events/web-fair/draw", nil, nil, &draw)
	if draw.Drawn != 1 || !draw.Done {
		t.Errorf("draw = %+v, want the page's user drawn", draw)
	}
	assertNoProblems(t, b)
}

// TestDashboardSteersFairness: the dashboard switches an event's queue mode
// and challenge live, grants FAST TRACK users and codes, and offers no Pause
// on a closed event.
func TestDashboardSteersFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	srv, base := MustStartServer(t)
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	MustCall(t, "POST", base+"/api/v1/admin/events", admin, map[string]any{
		"id": "dash-fair", "name": "Steered", "seats": 30, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 60, "policy": "capacity",
	}, nil)
	MustCall(t, "POST", base+"/api/v1/admin/events", admin, map[string]any{
		"id": "dash-closing", "name": "Closing", "seats": 30, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 60, "policy": "capacity",
		"closes_at": time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano),
	}, nil)
	b := MustBrowser(t, 90*time.Second, 1280, 900)
	b.MustRun(t, "opening the event's view",
		chromedp.Navigate(base+"/dashboard.html#/event/dash-fair"),
		chromedp.WaitVisible(chromedp.ID("d-admin-key")),
		chromedp.SendKeys(chromedp.ID("d-admin-key"), srv.Keys.Admin),
		chromedp.Click(chromedp.ID("d-key-save")),
	)
	b.MustWait(t, "the steering form filled", `document.getElementById("d-p-mode").value === "fifo"`, 20*time.Second)
	b.MustWait(t, "the admissions read with the key", `document.getElementById("d-admissions-empty").textContent === "Nobody admitted yet."`, 20*time.Second)
	// Six bots join (five admitted at once): inflow and outflow show per minute.
	for i := range 6 {
		MustCall(t, "POST", base+"/api/v1/events/dash-fair/queue", map[string]string{"X-Simulator-Key": srv.Keys.Simulator},
			map[string]any{"user_type": "VIRTUAL", "bot_id": fmt.Sprintf("bot-%d", i)}, nil)
	}
	b.MustWait(t, "inflow and outflow per minute",
		`Number(document.getElementById("d-inflow").textContent) > 0 && Number(document.getElementById("d-outflow").textContent) > 0 && `+
			chartDrawn("#d-chart-rates"), 30*time.Second)
	b.MustRun(t, "switching mode and challenge",
		chromedp.SetValue(chromedp.ID("d-p-mode"), "closed"),
		chromedp.SetValue(chromedp.ID("d-p-challenge"), "pow"),
		chromedp.SetValue(chromedp.ID("d-p-pow-bits"), "12"),
		chromedp.Click(chromedp.ID("d-patch")),
	)
	b.MustWait(t, "the change confirmed", `document.getElementById("dash-alert").textContent.includes("queue_mode")`, 20*time.Second)
	b.MustWait(t, "the events table showing the closed line",
		`document.querySelector('#d-events tr[data-id="dash-fair"] .pill').textContent === "No new joins"`, 20*time.Second)
	var ev struct {
		QueueMode string `json:"queue_mode"`
		Challenge string `json:"challenge"`
		PowBits   int    `json:"pow_bits"`
	}
	MustCall(t, "GET", base+"/api/v1/events/dash-fair", nil, nil, &ev)
	if ev.QueueMode != "closed" || ev.Challenge != "pow" || ev.PowBits != 12 {
		t.Errorf("event after steering = %+v, want closed, pow, 12", ev)
	}

	b.MustRun(t, "granting FAST TRACK",
		chromedp.SetValue(chromedp.ID("d-ft-users"), "u_vip1, u_vip2"),
		chromedp.SetValue(chromedp.ID("d-ft-codes"), "2"),
		chromedp.Click(chromedp.ID("d-ft-grant")),
	)
	b.MustWait(t, "the grants listed", `document.querySelectorAll("#d-ft-table tbody tr").length === 4`, 20*time.Second)
	var grants struct {
		Users []string `json:"users"`
		Codes []struct {
			Code string `json:"code"`
		} `json:"codes"`
	}
	MustCall(t, "GET", base+"/api/v1/admin/events/dash-fair/priority", admin, nil, &grants)
	if len(grants.Users) != 2 || len(grants.Codes) != 2 {
		t.Errorf("grants = %+v, want 2 users and 2 codes", grants)
	}
	b.MustWait(t, "no Pause on the closed event",
		`(() => { const tr = document.querySelector('#d-events tr[data-id="dash-closing"]'); return !!tr && tr.querySelector('[data-action="toggle"]').hidden; })()`,
		20*time.Second)
	b.MustShot(t, "dashboard-fair.png")
	b.MustPhone(t)
	b.MustShot(t, "dashboard-fair-phone.png")
	assertNoProblems(t, b)
}
