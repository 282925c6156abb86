package web_test

import (
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
	srv, base := MustStartServer(t)
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	opens := time.Now().Add(12 * time.Second).UTC().Truncate(time.Second)
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
	b.MustRun(t, "joining", chromedp.Click(chromedp.ID("join")))
	b.MustWait(t, "the challenge's progress", visible("#pow-progress"), 10*time.Second)
	b.MustWait(t, "the pre-queue state", visible("#prequeue"), 60*time.Second)
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
