package web_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/steps"
	"github.com/rushline/rushline/simulator/scenario"
)

// stepTimes is the part of GET /events/{event}/steps/times the test checks.
type stepTimes struct {
	Steps []struct {
		Step       string `json:"step"`
		YouMS      *int64 `json:"you_ms"`
		CrowdP50MS *int64 `json:"crowd_p50_ms"`
		CrowdP90MS *int64 `json:"crowd_p90_ms"`
		Crowd      int64  `json:"crowd"`
	} `json:"steps"`
	TotalMS    *int64 `json:"total_ms"`
	CrowdMS    *int64 `json:"crowd_ms"`
	CrowdP90MS *int64 `json:"crowd_p90_ms"`
	Seat       string `json:"seat"`
	Grade      string `json:"grade"`
}

// racer is one person racing the steps drop in a browser.
type racer struct {
	name, lang string
	phone      bool
}

// TestPracticeSteps races a drop whose scenario has the order steps, two
// people at once: one in Korean (from the browser's language) on a phone,
// one in English on a desktop, each also shown at the other size. Each
// double-clicks "Join now!" (the second click lands on the first step's
// screen and must do nothing), then passes every step (a wrong captcha
// first, which costs the image), and buys; the server has each step's time,
// and the result shows them. Screenshots of each step go to the artifacts.
func TestPracticeSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("a drop opens at least 10 s after it is made")
	}
	aloneBrowser(t)
	sc, err := scenario.Load("testdata/browser-steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	srv, base := MustStartServerWith(t, func(c *app.Config) {
		c.RedisURL = "redis://" + rp.Addr()
		c.DropScenarios = []*scenario.Scenario{sc}
	})
	var d struct {
		ID      string    `json:"id"`
		Event   string    `json:"event"`
		OpensAt time.Time `json:"opens_at"`
	}
	MustCall(t, "POST", base+"/api/v1/admin/drops", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"scenario": "browser-steps", "level": "easy", "crowd": 20, "seats": 200,
		"opens_at": time.Now().Add(12 * time.Second).UTC().Format(time.RFC3339Nano),
	}, &d)

	var wg sync.WaitGroup
	for _, r := range []racer{{name: "minji", lang: "ko", phone: true}, {name: "alex", lang: "en"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(r.lang, func(t *testing.T) {
				raceSteps(t, srv, base, d.ID, d.Event, r, func(seq int64) string {
					// The answer lives on the server only; a missing one reads as "".
					ans, _ := rdb.HGet(context.Background(), steps.LogKey(d.Event, seq), "cap").Result()
					return ans
				})
			})
		}()
	}
	wg.Wait()

	// The leaderboard ranks by outcome: a seat first, then its row (the
	// grade), then the time to buy; reaction alone never.
	var lb struct {
		Entries []struct {
			UserID   string  `json:"user_id"`
			Seat     *string `json:"seat"`
			BoughtMS *int64  `json:"bought_ms"`
		} `json:"entries"`
	}
	// All time: this server's only drop, whether or not midnight UTC has
	// passed since it opened.
	MustCall(t, "GET", base+"/api/v1/leaderboard?period=all", nil, nil, &lb)
	if len(lb.Entries) < 2 {
		t.Fatalf("leaderboard %+v, want both racers", lb.Entries)
	}
	for i := 1; i < len(lb.Entries); i++ {
		a, b := lb.Entries[i-1], lb.Entries[i]
		if a.Seat == nil && b.Seat != nil {
			t.Errorf("entry %d has no seat but ranks above a seat", i)
		}
		if a.Seat != nil && b.Seat != nil {
			ra, rb := rowOf(*a.Seat), rowOf(*b.Seat)
			if len(ra) > len(rb) || len(ra) == len(rb) && ra > rb ||
				ra == rb && a.BoughtMS != nil && b.BoughtMS != nil && *a.BoughtMS > *b.BoughtMS {
				t.Errorf("leaderboard ranks %s (%v ms) above %s (%v ms)", *a.Seat, *a.BoughtMS, *b.Seat, *b.BoughtMS)
			}
		}
	}
}

// seatTakenNote is what the seat step says, by language, when the seat
// chosen goes to someone else before it is held.
var seatTakenNote = map[string]string{
	"en": "Someone else just took that seat. Pick another one.",
	"ko": "이미 선택된 좌석입니다. 다른 좌석을 고르세요.",
}

// rowOf is a seat id's row.
func rowOf(seat string) string { row, _, _ := strings.Cut(seat, "-"); return row }

func raceSteps(t *testing.T, srv *app.Server, base, dropID, event string, r racer, answer func(seq int64) string) {
	b := MustBrowser(t, 3*time.Minute, 1280, 900)
	shot := func(step string) {
		size := "desktop"
		if r.phone {
			size = "phone"
		}
		b.MustShot(t, "steps-"+step+"-"+r.lang+"-"+size+".png")
	}
	if r.lang == "ko" {
		ua := MustEval[string](t, b, `navigator.userAgent`)
		b.MustRun(t, "a Korean browser", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride,
				emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "ko-KR,ko"})
			return err
		}))
	}
	b.MustRun(t, "opening the practice page", chromedp.Navigate(base+"/practice.html#/drop/"+dropID), chromedp.WaitVisible(chromedp.ID("dr-nickname")))
	if r.phone {
		b.MustPhone(t)
	}
	if got := MustEval[string](t, b, `document.documentElement.lang`); got != r.lang {
		t.Errorf("page language %q, want %q from the browser", got, r.lang)
	}
	b.MustWait(t, "the server clock", `/^\d\d:\d\d:\d\d\.\d{3}$/.test(document.getElementById("server-clock").textContent)`, 10*time.Second)
	b.MustRun(t, "picking a nickname",
		chromedp.SendKeys(chromedp.ID("dr-nickname"), r.name),
		chromedp.Click(chromedp.ID("dr-nick-save")),
	)
	b.MustWait(t, "the join button", visible("#dr-join"), 10*time.Second)
	b.MustWait(t, "the opening", `document.getElementById("dr-join").dataset.state === "open"`, 40*time.Second)

	// A double-click on Join now!: the second click lands at the same spot
	// as soon as the first step's screen is up, as a quick double-click
	// does. The page sends it itself, the moment the step appears: a click
	// sent from here could arrive past the guard's 500 ms on a loaded
	// machine, where choosing is right.
	x := MustEval[float64](t, b, `(() => { const r = document.getElementById("dr-join").getBoundingClientRect(); return r.x + r.width / 2; })()`)
	y := MustEval[float64](t, b, `(() => { const r = document.getElementById("dr-join").getBoundingClientRect(); return r.y + r.height / 2; })()`)
	MustEval[bool](t, b, fmt.Sprintf(`(() => {
		const obs = new MutationObserver(() => {
			const pane = document.querySelector('#view-steps .step-pane[data-step="date"]');
			if (!pane || pane.offsetParent === null) return;
			obs.disconnect();
			const el = document.elementFromPoint(%[1]f, %[2]f);
			window.secondClick = el ? el.tagName + '.' + el.className : 'nothing';
			if (el) el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window, detail: 2, clientX: %[1]f, clientY: %[2]f}));
		});
		obs.observe(document.body, {subtree: true, childList: true, attributes: true});
		return true;
	})()`, x, y))
	b.MustRun(t, "the first click", chromedp.MouseClickXY(x, y))
	b.MustWait(t, "the first step", visible(`#view-steps .step-pane[data-step="date"]`), 20*time.Second)
	b.MustWait(t, "the second click", `!!window.secondClick`, 5*time.Second)
	t.Logf("the second click landed on %s", MustEval[string](t, b, `window.secondClick`))
	if MustEval[bool](t, b, `!!document.querySelector('#view-steps [aria-checked="true"]') || !document.getElementById("st-next").disabled`) {
		t.Errorf("the double-click's second click (on %s) chose something on the first step", MustEval[string](t, b, `window.secondClick`))
	}
	token := MustEval[string](t, b, `Object.values(JSON.parse(localStorage.getItem("rushline.practice.races"))).find(x => x.drop).token`)
	var q struct {
		Status string `json:"status"`
	}
	MustCall(t, "GET", base+"/api/v1/events/"+event+"/queue/"+token, nil, nil, &q)
	if q.Status != "ACTIVE" {
		t.Fatalf("after the double-click the token is %s, want ACTIVE: nothing bought", q.Status)
	}
	shot("date")

	next := func(what string) {
		b.MustWait(t, "the page to settle", settled+` && !document.getElementById("st-next").disabled`, 10*time.Second)
		b.MustRun(t, what, chromedp.Click(chromedp.ID("st-next")))
	}
	choose := func(box string) {
		b.MustWait(t, "the page to settle", settled, 5*time.Second)
		sel := box + ` button.choice:not([disabled])`
		for end := time.Now().Add(10 * time.Second); !MustEval[bool](t, b, `!!document.querySelector('`+box+` [aria-checked="true"]')`); {
			b.MustRun(t, "choosing", chromedp.Click(chromedp.CSS(sel)))
			if time.Now().After(end) {
				t.Fatalf("nothing chosen in %s", box)
			}
		}
	}
	choose("#sd-shows")
	next("the date")

	b.MustWait(t, "the captcha", visible(`.step-pane[data-step="captcha"]`)+` && document.getElementById("sc-image").complete && document.getElementById("sc-image").naturalWidth > 0`, 10*time.Second)
	shot("captcha")
	en, err := srv.Engine.Status(context.Background(), event, token)
	if err != nil {
		t.Fatal(err)
	}
	src := MustEval[string](t, b, `document.getElementById("sc-image").src`)
	b.MustRun(t, "a wrong captcha", chromedp.SendKeys(chromedp.ID("sc-answer"), wrongDigits(answer(en.Seq))))
	next("the wrong captcha")
	b.MustWait(t, "a new captcha image", `document.getElementById("sc-image").src !== `+jsString(src)+` && document.getElementById("sc-image").complete`, 10*time.Second)
	b.MustWait(t, "the new image's answer", `document.getElementById("sc-answer").value === ""`, 5*time.Second)
	var ans string
	for end := time.Now().Add(5 * time.Second); ans == "" && time.Now().Before(end); {
		ans = answer(en.Seq)
	}
	b.MustRun(t, "the right captcha", chromedp.SendKeys(chromedp.ID("sc-answer"), ans))
	next("the captcha")

	b.MustWait(t, "the grades", visible(`.step-pane[data-step="grade"]`)+` && !!document.querySelector("#sg-grades button.choice")`, 10*time.Second)
	shot("grade")
	choose("#sg-grades")
	next("the grade")

	b.MustWait(t, "the grade's seats", visible(`.step-pane[data-step="seat"]`)+` && !!document.querySelector("#ss-map button.seat:not([disabled])")`, 10*time.Second)
	// The crowd buys the front seats first: pick from the back, and pick
	// again when one goes before it is held.
	const pressed = `!!document.querySelector('#ss-map button.seat[aria-pressed="true"]')`
	var seat string
	for try := 0; ; try++ {
		b.MustWait(t, "the page to settle", settled, 5*time.Second)
		for end := time.Now().Add(10 * time.Second); !MustEval[bool](t, b, pressed); {
			b.MustRun(t, "picking a seat", chromedp.Evaluate[chromedp.Void](`(() => { const f = [...document.querySelectorAll("#ss-map button.seat:not([disabled])")]; f[f.length - 1].click(); })()`))
			if time.Now().After(end) {
				t.Fatal("no seat picked")
			}
		}
		seat = MustEval[string](t, b, `document.querySelector('#ss-map button.seat[aria-pressed="true"]').dataset.seat`)
		if try == 0 {
			shot("seat")
			if r.phone { // the seat map on a desktop too
				b.MustRun(t, "desktop viewport", chromedp.EmulateViewport(1280, 900))
				b.MustShot(t, "steps-seat-"+r.lang+"-desktop.png")
				b.MustPhone(t)
			} else {
				b.MustPhone(t)
				b.MustShot(t, "steps-seat-"+r.lang+"-phone.png")
				b.MustRun(t, "desktop viewport", chromedp.EmulateViewport(1280, 900))
			}
			MustCall(t, "GET", base+"/api/v1/events/"+event+"/queue/"+token, nil, nil, &q)
			if q.Status != "ACTIVE" {
				t.Fatalf("a chosen seat bought it: the token is %s", q.Status)
			}
			// Someone takes the chosen seat: the next refresh of the map
			// shows it taken (the page's fetch answers so, once), and the
			// page unpicks it and says so.
			mustShowTaken(t, b, "/steps/seats?", seat)
			b.MustWait(t, "the seat gone", `!`+pressed+` && document.getElementById("st-next").disabled`, 10*time.Second)
			if note := MustEval[string](t, b, `document.getElementById("st-note").textContent`); note != seatTakenNote[r.lang] {
				t.Errorf("the chosen seat was taken: the page says %q, want %q", note, seatTakenNote[r.lang])
			}
			shot("seat-taken")
			continue
		}
		// The crowd may take the seat while the screenshots are made or
		// before the button is pressed: the page then unpicks it and says so.
		b.MustWait(t, "the page to settle", settled+` && (!document.getElementById("st-next").disabled || !`+pressed+`)`, 10*time.Second)
		if !MustEval[bool](t, b, pressed) {
			if note := MustEval[string](t, b, `document.getElementById("st-note").textContent`); note == "" || strings.Contains(note, seat) {
				t.Errorf("seat %s was taken, but the page says %q", seat, note)
			}
			continue
		}
		b.MustRun(t, "seats chosen", chromedp.Click(chromedp.ID("st-next")))
		b.MustWait(t, "the answer", `!document.querySelector('.step-pane[data-step="confirm"]').hidden || document.getElementById("st-note").textContent !== "" && !document.getElementById("st-next").disabled || !`+pressed, 10*time.Second)
		if MustEval[bool](t, b, `!document.querySelector('.step-pane[data-step="confirm"]').hidden`) {
			break
		}
		if try > 10 {
			t.Fatalf("no seat held after %d tries", try)
		}
	}

	b.MustWait(t, "the confirmation", visible(`.step-pane[data-step="confirm"]`)+` && document.getElementById("sk-summary").textContent.includes(`+jsString(seat)+`)`, 10*time.Second)
	shot("confirm")
	next("confirming")

	b.MustWait(t, "the payment form", visible(`.step-pane[data-step="payment"]`), 10*time.Second)
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	b.MustRun(t, "agreeing", chromedp.Click(chromedp.ID("sp-agree")))
	shot("payment")
	next("paying")

	b.MustWait(t, "the result with the step times", `location.hash.endsWith("/result") && document.querySelectorAll("#dres-steps tbody tr:not(.total)").length === 6`, 20*time.Second)
	// The crowd's median / p90 per step fill in as its users buy, after
	// the sum of their steps (the easy level's is about 16 s).
	b.MustWait(t, "the crowd's times per step", `[...document.querySelectorAll("#dres-steps tbody td[data-crowd]")].length === 7 && [...document.querySelectorAll("#dres-steps tbody td[data-crowd]")].every(td => /^\d+\.\d\d s \/ \d+\.\d\d s$/.test(td.textContent))`, 90*time.Second)
	var tm stepTimes
	MustCall(t, "GET", base+"/api/v1/events/"+event+"/steps/times", map[string]string{"X-Queue-Token": token}, nil, &tm)
	if len(tm.Steps) != 6 || tm.TotalMS == nil || tm.Seat != seat || tm.Grade == "" {
		t.Fatalf("step times %+v, want 6 steps and seat %s", tm, seat)
	}
	for _, s := range tm.Steps {
		if s.YouMS == nil || *s.YouMS < 0 {
			t.Errorf("step %s has no time", s.Step)
		}
		if s.CrowdP50MS == nil || s.CrowdP90MS == nil || *s.CrowdP50MS <= 0 || *s.CrowdP90MS < *s.CrowdP50MS || s.Crowd < 1 {
			t.Errorf("step %s: crowd p50 %v p90 %v over %d, want 0 < p50 <= p90 over some", s.Step, s.CrowdP50MS, s.CrowdP90MS, s.Crowd)
		}
	}
	if tm.CrowdMS == nil || tm.CrowdP90MS == nil || *tm.CrowdMS <= 0 || *tm.CrowdP90MS < *tm.CrowdMS {
		t.Errorf("crowd total p50 %v p90 %v, want 0 < p50 <= p90", tm.CrowdMS, tm.CrowdP90MS)
	}
	if got := MustEval[int](t, b, `[...document.querySelectorAll("#dres-steps tbody tr:not(.total) td:nth-child(2)")].filter(td => /\d\.\d\d s/.test(td.textContent)).length`); got != 6 {
		t.Errorf("%d steps with a time on the result, want 6", got)
	}
	shot("result")
	assertNoProblems(t, b)
}

// wrongDigits is six digits other than answer.
func wrongDigits(answer string) string {
	if answer == "000000" {
		return "111111"
	}
	return "000000"
}

// jsString quotes s for JavaScript.
func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestPracticeDrills: the captcha drill, timed and ranked by the server,
// and the press at the exact second on the server's clock, kept by the
// server, in Korean.
func TestPracticeDrills(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	_, base := MustStartServerWith(t, func(c *app.Config) { c.RedisURL = "redis://" + rp.Addr() })
	b := MustBrowser(t, time.Minute, 1280, 900)
	b.MustRun(t, "opening the front", chromedp.Navigate(base+"/practice.html"), chromedp.WaitVisible(chromedp.ID("dr-nickname")),
		chromedp.SendKeys(chromedp.ID("dr-nickname"), "driller"), chromedp.Click(chromedp.ID("dr-nick-save")))
	b.MustWait(t, "a session", `!!localStorage.getItem("rushline.practice.session")`, 10*time.Second)
	b.MustRun(t, "the drills in Korean", chromedp.Navigate(base+"/practice.html#/drills"), chromedp.WaitVisible(chromedp.ID("dc-start")))
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	b.MustRun(t, "Korean", chromedp.Click(chromedp.CSS(`[data-lang="ko"]`)))
	b.MustWait(t, "the page in Korean", `document.getElementById("dc-title").textContent === "보안문자 연습"`, 5*time.Second)
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	b.MustRun(t, "starting the captcha drill", chromedp.Click(chromedp.ID("dc-start")))
	b.MustWait(t, "the drill's image", `document.getElementById("dc-image").complete && document.getElementById("dc-image").naturalWidth > 0`, 10*time.Second)
	id := MustEval[string](t, b, `new URL(document.getElementById("dc-image").src).pathname.split("/").pop()`)
	ans, err := rdb.HGet(context.Background(), "rl:{drill}:cap:"+id, "a").Result()
	if err != nil {
		t.Fatal(err)
	}
	b.MustRun(t, "typing the digits", chromedp.SendKeys(chromedp.ID("dc-answer"), ans))
	b.MustWait(t, "the drill's time", `/\d\.\d\d s: /.test(document.getElementById("dc-result").textContent)`, 10*time.Second)

	b.MustWait(t, "a target second", `/\d\d:\d\d:\d[05]\.000/.test(document.getElementById("ds-target").textContent)`, 10*time.Second)
	// Press near the target, as a person aiming at it would.
	b.MustWait(t, "the clock near the target", `(() => {
		const ms = (id) => { const [h, m, s] = document.getElementById(id).textContent.split(":"); return ((+h * 60 + +m) * 60 + parseFloat(s)) * 1000; };
		return Math.abs(ms("ds-target") - ms("ds-clock")) < 300;
	})()`, 15*time.Second)
	b.MustRun(t, "pressing", chromedp.Click(chromedp.ID("ds-press")))
	b.MustWait(t, "how far off", `/\d+ms (빠름|늦음)/.test(document.getElementById("ds-result").textContent)`, 5*time.Second)
	// The server keeps the press: the first on this fresh server (the
	// ranking against others is TestPressDrillOverHTTP's).
	b.MustWait(t, "the press kept", `document.getElementById("ds-result").textContent.includes("이 서버의 첫 기록")`, 5*time.Second)
	b.MustShot(t, "drills-ko.png")
	b.MustPhone(t)
	b.MustShot(t, "drills-ko-phone.png")
	assertNoProblems(t, b)
}
