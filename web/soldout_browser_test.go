package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/simulator/scenario"
)

// TestSoldOutReachesTheLine: a person waiting in line when the crowd buys
// the last seat is told at once, by push, and taken to the result while
// still in line. How long that took is logged (a timing goal, not a test).
func TestSoldOutReachesTheLine(t *testing.T) {
	if testing.Short() {
		t.Skip("a drop opens at least 10 s after it is made")
	}
	parallelBrowser(t)
	sc, err := scenario.Load("testdata/browser-soldout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, base := MustStartServerWith(t, func(c *app.Config) { c.DropScenarios = []*scenario.Scenario{sc} })
	var d struct {
		ID    string `json:"id"`
		Event string `json:"event"`
	}
	MustCall(t, "POST", base+"/api/v1/admin/drops", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"scenario": "browser-soldout", "level": "hard", "crowd": 60, "seats": 4,
		"opens_at": time.Now().Add(11 * time.Second).UTC().Format(time.RFC3339Nano),
	}, &d)
	b := MustBrowser(t, 2*time.Minute, 1280, 900)
	b.MustRun(t, "opening the practice page", chromedp.Navigate(base+"/practice.html#/drop/"+d.ID),
		chromedp.WaitVisible(chromedp.ID("dr-nickname")),
		chromedp.SendKeys(chromedp.ID("dr-nickname"), "late"),
		chromedp.Click(chromedp.ID("dr-nick-save")))
	b.MustWait(t, "the join button", visible("#dr-join"), 10*time.Second)
	b.MustWait(t, "the crowd in", `document.getElementById("dr-join").dataset.state === "open" && parseInt(document.getElementById("dr-crowd").textContent, 10) >= 40`, 40*time.Second)
	b.MustRun(t, "joining behind the crowd", chromedp.Focus(chromedp.ID("dr-join")), chromedp.KeyEvent("\r"))
	b.MustWait(t, "a place in line", `location.hash.endsWith("/wait") && /\d/.test(document.getElementById("w-position").textContent)`, 20*time.Second)
	b.MustWait(t, "sold out in line", `document.getElementById("w-headline").textContent.includes("Sold out")`, 60*time.Second)
	var v struct {
		Stats struct {
			SeatsLeft int `json:"seats_left"`
		} `json:"stats"`
	}
	MustCall(t, "GET", base+"/api/v1/drops/"+d.ID, nil, nil, &v)
	if v.Stats.SeatsLeft != 0 {
		t.Errorf("the line says sold out with %d seats left", v.Stats.SeatsLeft)
	}
	b.MustShot(t, "steps-soldout-wait.png")
	from := time.Now()
	b.MustWait(t, "the result", `location.hash.endsWith("/result") && `+visible("#dres-headline"), 10*time.Second)
	t.Logf("sold out to the result page: %v", time.Since(from).Round(time.Millisecond))
	token := MustEval[string](t, b, `Object.values(JSON.parse(localStorage.getItem("rushline.practice.races"))).find(x => x.drop).token`)
	var q struct {
		Status string `json:"status"`
	}
	MustCall(t, "GET", base+"/api/v1/events/"+d.Event+"/queue/"+token, nil, nil, &q)
	if q.Status != "WAITING" {
		t.Errorf("the person is %s, want still WAITING: the sold out news came to the line", q.Status)
	}
	assertNoProblems(t, b)
}
