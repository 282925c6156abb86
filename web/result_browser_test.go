package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rushline/rushline/simulator/scenario"
)

// TestPracticeResultFillsIn: a solo race's result page waits while the
// person's attempt runs, shows their result as soon as it has ended (here
// a leave at the opening) with the bots' side labelled partial, and turns
// final by itself once the crowd is done (testdata/browser-fill.yaml: 60
// bots over 15 s). In Korean: TestPracticeRace reads the English. How long
// the result took is logged, not tested.
func TestPracticeResultFillsIn(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	sc, err := scenario.Load("testdata/browser-fill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, base := MustStartServer(t, sc)
	b := MustBrowser(t, 2*time.Minute, 1280, 900)

	var sess map[string]any
	MustCall(t, "POST", base+"/api/v1/sessions", nil, map[string]string{"nickname": "leaver"}, &sess)
	auth := map[string]string{"Authorization": fmt.Sprint("Bearer ", sess["access_token"])}
	var start struct {
		Event struct {
			ID string `json:"id"`
		} `json:"event"`
		OpensAt time.Time `json:"opens_at"`
	}
	MustCall(t, "POST", base+"/api/v1/practice", auth, map[string]any{"scenario": "browser-fill", "opens_in_s": 5}, &start)
	id := start.Event.ID
	raw, err := json.Marshal(sess)
	if err != nil {
		t.Fatal(err)
	}
	// The session the page keeps and Korean, then the race's result page
	// before the opening.
	b.MustRun(t, "opening the practice page", chromedp.Navigate(base+"/practice.html#/history"))
	b.MustWait(t, "the practice page", `document.readyState === "complete" && !!document.getElementById("view-result")`, 20*time.Second)
	MustEval[bool](t, b, fmt.Sprintf(`(localStorage.setItem("rushline.practice.session", %q), localStorage.setItem("rushline.lang", '"ko"'), location.hash = %q, true)`,
		raw, "#/race/"+id+"/result"))
	b.MustRun(t, "reloading in Korean", chromedp.Reload())
	b.MustWait(t, "the waiting note", `document.documentElement.lang === "ko" && document.getElementById("r-wait").textContent.includes("아직 경기 중")`, 10*time.Second)

	// Join at the opening and leave at once: the attempt has ended.
	time.Sleep(time.Until(start.OpensAt.Add(20 * time.Millisecond)))
	var join struct {
		Token string `json:"token"`
	}
	MustCall(t, "POST", base+"/api/v1/events/"+id+"/queue", auth, map[string]string{"user_type": "ACTUAL"}, &join)
	MustCall(t, "DELETE", base+"/api/v1/events/"+id+"/queue/"+join.Token, auth, nil, nil)
	left := time.Now()
	b.MustWait(t, "the partial result", `document.getElementById("r-body").dataset.final === "false" && `+visible("#r-headline"), 10*time.Second)
	t.Logf("result shown %v after leaving", time.Since(left).Round(time.Millisecond))
	var res struct {
		Final bool `json:"final"`
		Bots  int  `json:"bots"`
		Sold  int  `json:"sold"`
		You   struct {
			Outcome string `json:"outcome"`
		} `json:"you"`
	}
	MustCall(t, "GET", base+"/api/v1/practice/"+id+"/result", auth, nil, &res)
	if res.Final || res.You.Outcome != "left" {
		t.Fatalf("result final %v, outcome %q: want a partial result of a leave", res.Final, res.You.Outcome)
	}
	page := func() map[string]string {
		return MustEval[map[string]string](t, b, `Object.fromEntries(["r-wait", "r-scenario", "r-sold", "r-outcome", "r-outcomes"]
			.map(id => [id, document.getElementById(id).textContent]))`)
	}
	// The outcome counts on the page, summed.
	outcomeSum := func() int {
		var sum int
		for _, n := range MustEval[[]string](t, b, `[...document.querySelectorAll("#r-outcomes tbody td.num")].map(td => td.textContent)`) {
			var v int
			if _, err := fmt.Sscanf(strings.ReplaceAll(n, ",", ""), "%d", &v); err != nil {
				t.Errorf("outcome count %q: %v", n, err)
			}
			sum += v
		}
		return sum
	}
	p := page()
	for id, want := range map[string]string{"r-wait": "봇들이 아직 경쟁 중", "r-scenario": "지금까지", "r-sold": "지금까지",
		"r-outcome": "대기 취소", "r-outcomes": "아직 경쟁 중"} {
		if !strings.Contains(p[id], want) {
			t.Errorf("partial result: #%s says %q, want %q in it", id, p[id], want)
		}
	}
	// Every bot is in the table while the race runs, the ones not yet in
	// line among those still racing.
	if sum := outcomeSum(); sum != 60 {
		t.Errorf("the bots' outcomes on the partial page add up to %d, want 60", sum)
	}
	b.MustShot(t, "result-partial-ko.png")
	b.MustPhone(t)
	b.MustShot(t, "result-partial-ko-phone.png")

	b.MustWait(t, "the final result", `document.getElementById("r-body").dataset.final === "true"`, 60*time.Second)
	MustCall(t, "GET", base+"/api/v1/practice/"+id+"/result", auth, nil, &res)
	if !res.Final || res.Bots != 60 || res.You.Outcome != "left" {
		t.Errorf("final result: final %v, %d bots, outcome %q; want final, 60 bots, left", res.Final, res.Bots, res.You.Outcome)
	}
	p = page()
	if p["r-wait"] != "" || !strings.Contains(p["r-scenario"], "봇 60명") || p["r-sold"] != fmt.Sprintf("20석 중 %d석", res.Sold) ||
		strings.Contains(p["r-outcomes"], "아직 경쟁 중") || strings.Contains(p["r-scenario"], "지금까지") {
		t.Errorf("final result page says %q", p)
	}
	if sum := outcomeSum(); sum != 60 {
		t.Errorf("the bots' outcomes on the final page add up to %d, want 60", sum)
	}
	b.MustShot(t, "result-final-ko-phone.png")
	assertNoProblems(t, b)
}
