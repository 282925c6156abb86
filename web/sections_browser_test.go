package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rushline/rushline/simulator/scenario"
)

// chooseSection picks section id in the chooser select sel, as a person would.
func chooseSection(sel, id string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector("` + sel + `");
  s.value = "` + id + `"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`)
}

// TestWaitingRoomSeatSections: an event over 10,000 seats comes by section;
// the waiting room shows the first section under tiles of all three, and
// a person picks the last section's tile and buys its last seat.
func TestWaitingRoomSeatSections(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	srv, base := MustStartServer(t)
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	MustCall(t, "POST", base+"/api/v1/admin/events", admin, map[string]any{
		"id": "web-big", "name": "Big room", "seats": 25_001, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 600, "policy": "capacity",
	}, nil)
	// A loaded CI run can take minutes over what takes seconds alone: the
	// active window and the browser's budget outlast it.
	b := MustBrowser(t, 3*time.Minute, 1280, 900)
	b.MustRun(t, "opening the waiting room", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("nickname")))
	b.MustWait(t, "the event in the table", `!!document.querySelector('#events-body tr[data-id="web-big"]')`, 20*time.Second)
	b.MustRun(t, "starting a session and joining",
		chromedp.SendKeys(chromedp.ID("nickname"), "big-fan"),
		chromedp.Click(chromedp.ID("start-session")),
		chromedp.WaitVisible(chromedp.ID("session-info")),
		chromedp.SetValue(chromedp.ID("event-select"), "web-big"),
	)
	b.MustWait(t, "the join button", `!document.getElementById("join").disabled`, 10*time.Second)
	b.MustRun(t, "joining", chromedp.Click(chromedp.ID("join")))
	b.MustWait(t, "the first section", `!!document.querySelector('#seat-map button[data-seat="A-1"]')`, 20*time.Second)
	b.MustWait(t, "the section tiles", visible("#seat-sections")+` && document.querySelectorAll("#seat-sections .sec-tile").length === 3 && `+
		`document.querySelector("#seat-sections .sec-tile").getAttribute("aria-pressed") === "true"`, 10*time.Second)
	if got := MustEval[string](t, b, `document.getElementById("seat-count").textContent`); !strings.Contains(got, "25,001 of 25,001") {
		t.Errorf("seat count %q, want the whole map's 25,001 of 25,001 free", got)
	}
	// By keyboard: a mouse click lands where the tile was when its box was
	// read, and on a loaded machine the page can move under it (a CI run
	// waited 20 s for a section it had clicked beside).
	b.MustRun(t, "choosing the last section with Enter",
		chromedp.Focus(chromedp.CSS(`#seat-sections button[data-section="OK"]`)), chromedp.KeyEvent("\r"))
	b.MustWait(t, "the last section's tile pressed", `document.querySelector('#seat-sections button[data-section="OK"]').getAttribute("aria-pressed") === "true"`, 10*time.Second)
	b.MustWait(t, "the last section's first seat", `!!document.querySelector('#seat-map button[data-seat="OK-1"]')`, 20*time.Second)
	if n := MustEval[int](t, b, `document.querySelectorAll('#seat-map button[data-seat^="A-"]').length`); n != 0 {
		t.Errorf("%d seats of the first section still drawn", n)
	}
	b.MustShot(t, "waiting-room-sections.png")
	b.MustRun(t, "going to the last page of rows", chromedp.Evaluate[chromedp.Void](
		`(() => { const n = document.getElementById("seat-next"); while (!n.disabled) n.click(); })()`))
	b.MustWait(t, "the last section's last seat", `!!document.querySelector('#seat-map button[data-seat="SG-1"]')`, 10*time.Second)
	b.MustRun(t, "buying seat SG-1 with Enter",
		chromedp.Focus(chromedp.CSS(`#seat-map button[data-seat="SG-1"]`)), chromedp.KeyEvent("\r"))
	b.MustWait(t, "the order's answer", `!document.querySelector("#seat-map[data-busy]") && document.getElementById("buy-result").textContent !== ""`, 20*time.Second)
	if got := MustEval[string](t, b, `document.getElementById("buy-result").textContent`); !strings.Contains(got, "SG-1") || !strings.Contains(got, "is yours") {
		t.Fatalf("after buying, the page says %q", got)
	}
	assertNoProblems(t, b)
}

// TestPracticeSeatSections races testdata/browser-sections.yaml: its 20,000
// seats come by section, and the practice page lets the person pick the
// second section and buy a seat there.
func TestPracticeSeatSections(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	sc, err := scenario.Load("testdata/browser-sections.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, base := MustStartServer(t, sc)
	b := MustBrowser(t, 2*time.Minute, 1280, 900)
	b.MustRun(t, "picking a nickname",
		chromedp.Navigate(base+"/practice.html#/solo"),
		chromedp.WaitVisible(chromedp.ID("p-nickname")),
		chromedp.SendKeys(chromedp.ID("p-nickname"), "sections"),
		chromedp.Click(chromedp.ID("p-start")),
		chromedp.WaitVisible(chromedp.ID("p-signed-in")),
	)
	b.MustWait(t, "the scenario", `!!document.querySelector('#scenario-list input[value="browser-sections"]')`, 20*time.Second)
	b.MustRun(t, "starting the race",
		chromedp.Click(chromedp.CSS(`#scenario-list input[value="browser-sections"]`)),
		chromedp.SetValue(chromedp.ID("p-opens-in"), "3"),
		chromedp.Click(chromedp.ID("p-create")),
	)
	b.MustWait(t, "the open join button", `document.getElementById("join-btn").getAttribute("aria-disabled") === "false"`, 30*time.Second)
	b.MustRun(t, "joining", chromedp.Focus(chromedp.ID("join-btn")), chromedp.KeyEvent("\r"))
	b.MustWait(t, "the section chooser", visible("#s-section")+` && document.getElementById("s-section").options.length === 2`, 30*time.Second)
	b.MustWait(t, "the first section", `!!document.querySelector('#s-map button[data-seat="A-1"]')`, 10*time.Second)
	b.MustRun(t, "choosing the second section", chooseSection("#s-section", "GS"))
	b.MustWait(t, "a free seat of the second section", `!!document.querySelector('#s-map button[data-seat="GS-1"]') && !!document.querySelector('#s-map button.seat:not([disabled])')`, 10*time.Second)
	b.MustShot(t, "practice-sections.png")
	seat := MustEval[string](t, b, `document.querySelector('#s-map button.seat:not([disabled])').dataset.seat`)
	mustPick(t, b, `#s-map button[data-seat="`+seat+`"]`)
	// Someone takes it first: the page unpicks it and says so; the next
	// read of the map gives it back.
	mustShowTaken(t, b, "/seats?section=", seat)
	b.MustWait(t, "the seat gone", `!document.querySelector('#s-map button.seat[aria-pressed="true"]') && document.getElementById("s-confirm").disabled`, 10*time.Second)
	if got := MustEval[string](t, b, `document.getElementById("s-note").textContent`); got != seatTakenNote["en"] {
		t.Errorf("the chosen seat was taken: the page says %q, want %q", got, seatTakenNote["en"])
	}
	b.MustShot(t, "practice-seat-taken.png")
	b.MustWait(t, "the seat free again", `!document.querySelector('#s-map button[data-seat="`+seat+`"]').disabled`, 10*time.Second)
	mustPick(t, b, `#s-map button[data-seat="`+seat+`"]`)
	b.MustRun(t, "buying it", chromedp.Click(chromedp.ID("s-confirm")))
	b.MustWait(t, "the order's answer", `document.getElementById("s-note").textContent.includes("is yours")`, 10*time.Second)
	if got := MustEval[string](t, b, `document.getElementById("s-note").textContent`); !strings.Contains(got, seat) {
		t.Errorf("the page says %q, want seat %s bought", got, seat)
	}
	assertNoProblems(t, b)
}
