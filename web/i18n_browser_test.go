package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// MustSpeak makes the tab's browser speak lang (its Accept-Language and
// navigator.languages), as a browser set to that language does.
func (b *browser) MustSpeak(tb testing.TB, lang string) {
	tb.Helper()
	ua := MustEval[string](tb, b, `navigator.userAgent`)
	accept := map[string]string{"ko": "ko-KR,ko", "en": "en-US,en"}[lang]
	b.MustRun(tb, "a browser in "+lang, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetUserAgentOverride,
			emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: accept})
		return err
	}))
}

// MustTap taps the middle of the element sel with a finger (touch events),
// after scrolling it to the middle of its scroll boxes, and checks that
// nothing covers it there.
func (b *browser) MustTap(tb testing.TB, sel string) {
	tb.Helper()
	pt := MustEval[struct {
		X, Y float64
		Hit  bool
	}](tb, b, fmt.Sprintf(`(() => { const e = document.querySelector(%q);
  e.scrollIntoView({block: "center", inline: "center"});
  const r = e.getBoundingClientRect(); const x = r.x + r.width / 2, y = r.y + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  return {x, y, hit: !!hit && (hit === e || e.contains(hit))}; })()`, sel))
	if !pt.Hit {
		tb.Fatalf("%s is covered at its middle (%.0f, %.0f): a finger cannot reach it", sel, pt.X, pt.Y)
	}
	b.MustRun(tb, "tapping "+sel, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, input.DispatchTouchEventParams{
			Type: input.DispatchTouchEventTypeTouchStart, TouchPoints: []*input.TouchPoint{{X: pt.X, Y: pt.Y}},
		}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, input.DispatchTouchEventParams{
			Type: input.DispatchTouchEventTypeTouchEnd, TouchPoints: []*input.TouchPoint{},
		})
		return err
	}))
}

// mustFitPhone checks that the phone's page is as wide as the phone: a
// mobile browser widens its layout to content that sticks out anywhere
// (even a hidden label in a scrolled table), which scrolls the whole page.
func mustFitPhone(t *testing.T, b *browser) {
	t.Helper()
	b.MustPhone(t)
	if w := MustEval[int](t, b, `innerWidth`); w != 390 {
		t.Errorf("the page lays out %d px wide on a 390 px phone; sticking out: %v", w, MustEval[[]string](t, b, overflowJS))
	}
}

// englishLeftJS lists the shown text of the page that reads as English:
// a text (or placeholder, aria-label) with a word of three or more Latin
// letters and no Hangul, once the names of things (the brand, API words,
// the test's ids and nickname) are taken out. Text marked as English (the
// language switch), code and ids in monospace are names too.
const englishLeftJS = `(() => {
  const names = ["rushline", "OpenAPI", "API", "JSON", "TPS", "FAST TRACK", "uPlot", "HTTP", "ACTUAL",
    "concert-1", "u_8d2f", "u_91ab", "spring-2026", "big-2026", "minji", "browser-drop"];
  const out = [];
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = w.nextNode());) {
    const e = n.parentElement;
    if (!e || e.closest("[hidden], script, style, noscript, [lang=en], code, .mono")) continue;
    if (!e.closest("select") && !e.getClientRects().length) continue;
    let rest = n.textContent;
    for (const x of names) rest = rest.split(x).join(" ");
    if (/[A-Za-z]{3,}/.test(rest) && !/[\uac00-\ud7a3]/.test(rest)) out.push(n.textContent.trim());
  }
  for (const e of document.querySelectorAll("[placeholder], [aria-label]")) {
    if (e.closest("[hidden], [lang=en]")) continue;
    for (const a of ["placeholder", "aria-label"]) {
      let rest = e.getAttribute(a) || "";
      for (const x of names) rest = rest.split(x).join(" ");
      if (/[A-Za-z]{3,}/.test(rest) && !/[\uac00-\ud7a3]/.test(rest)) out.push(a + "=" + e.getAttribute(a));
    }
  }
  if (!/[\uac00-\ud7a3]/.test(document.title)) out.push("title=" + document.title);
  return out;
})()`

// mustSpeakKorean checks that the page is in Korean: <html lang="ko">, the
// switch's Korean button pressed, the texts of want, and no English left.
func mustSpeakKorean(t *testing.T, b *browser, want map[string]string) {
	t.Helper()
	mustSpeakLang(t, b, "ko", want)
	if left := MustEval[[]string](t, b, englishLeftJS); len(left) > 0 {
		t.Errorf("English left on the Korean page: %q", left)
	}
}

// mustSpeakLang checks the page's language: <html lang>, the switch, and
// the text of each selector of want (a prefix of it).
func mustSpeakLang(t *testing.T, b *browser, lang string, want map[string]string) {
	t.Helper()
	b.MustWait(t, "the page in "+lang, fmt.Sprintf(`document.documentElement.lang === %q`, lang), 10*time.Second)
	if got := MustEval[string](t, b, `document.querySelector('[data-lang="`+lang+`"]').getAttribute("aria-pressed")`); got != "true" {
		t.Errorf("the %s button of the switch has aria-pressed=%q, want true", lang, got)
	}
	for sel, text := range want {
		js := fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)
		if err := chromedp.Do(b.ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`(%s).trim().startsWith(%q)`, js, text),
			chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			t.Errorf("%s in %s reads %q, want %q", sel, lang, MustEval[string](t, b, js), text)
		}
	}
}

// roomKO and roomEN are texts of the waiting room with a seat to pick.
var (
	roomKO = map[string]string{
		"h1": "티켓 오픈 대기열에 줄 서기", "#try-title": "대기열 체험", "#events-title": "이벤트",
		"#events-table th": "이벤트", "#headline": "내 차례입니다!", "#position": "내 차례",
		"#time-left-label": "남은 예매 시간", "#seat-title": "좌석 선택", "#leave": "대기열 나가기",
		"#status": "예매 가능", "#server-health": "서버 정상", "#events-body .pill": "진행 중",
		".site-nav a": "대기실",
	}
	roomEN = map[string]string{
		"h1": "Get in line for the drop", "#try-title": "Try the queue", "#events-title": "Events",
		"#events-table th": "Event", "#headline": "It's your turn!", "#position": "Your turn",
		"#time-left-label": "Time left to buy", "#seat-title": "Pick a seat", "#leave": "Leave the line",
		"#status": "ACTIVE", "#server-health": "Server ready", "#events-body .pill": "Open",
		".site-nav a": "Waiting room",
	}
)

// TestWaitingRoomSpeaksKoreanAndEnglish: a Korean browser gets the waiting
// room in Korean, with no English left, through a join up to the seat
// map; the switch turns it English, which a reload keeps, at a desktop's
// and a phone's width, and back; an English browser gets English.
func TestWaitingRoomSpeaksKoreanAndEnglish(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	srv, base := MustStartServer(t)
	MustCall(t, "POST", base+"/api/v1/admin/events", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"id": "spring-2026", "name": "봄 콘서트", "seats": 40, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 600, "policy": "capacity",
	}, nil)
	b := MustBrowser(t, 2*time.Minute, 1280, 900)
	b.MustSpeak(t, "ko")
	b.MustRun(t, "opening the waiting room", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("nickname")))
	mustSpeakLang(t, b, "ko", map[string]string{"#start-session": "시작하기", "#event-hint": "먼저 닉네임을 정하고 시작하세요."})
	b.MustWait(t, "the event in the table", `!!document.querySelector('#events-body tr[data-id="spring-2026"]')`, 20*time.Second)
	b.MustRun(t, "starting a session",
		chromedp.SendKeys(chromedp.ID("nickname"), "minji"),
		chromedp.Click(chromedp.ID("start-session")),
		chromedp.WaitVisible(chromedp.ID("session-info")),
		chromedp.SetValue(chromedp.ID("event-select"), "spring-2026"),
	)
	b.MustWait(t, "the join button", `!document.getElementById("join").disabled`, 10*time.Second)
	if got := MustEval[string](t, b, `document.getElementById("event-hint").textContent`); !strings.Contains(got, "입장 후 600초 안에 예매해야 합니다.") {
		t.Errorf("the event's hint reads %q, want its buying time in Korean", got)
	}
	b.MustRun(t, "joining", chromedp.Click(chromedp.ID("join")))
	b.MustWait(t, "a free seat", `!!document.querySelector("#seat-map button.seat:not([disabled])")`, 20*time.Second)
	b.MustWait(t, "the server's health", `document.getElementById("server-health").dataset.state === "ok"`, 15*time.Second)
	mustSpeakKorean(t, b, roomKO)
	if got := MustEval[string](t, b, `document.querySelector("#seat-map button.seat").getAttribute("aria-label")`); !strings.HasSuffix(got, "좌석") {
		t.Errorf("a seat's label reads %q, want Korean", got)
	}
	b.MustShot(t, "room-ko-desktop.png")

	b.MustRun(t, "switching to English", chromedp.Click(chromedp.CSS(`[data-lang="en"]`)))
	mustSpeakLang(t, b, "en", roomEN)
	b.MustRun(t, "reloading", chromedp.Reload())
	b.MustWait(t, "the seat map again", `!!document.querySelector("#seat-map button.seat:not([disabled])")`, 20*time.Second)
	mustSpeakLang(t, b, "en", roomEN)
	b.MustShot(t, "room-en-desktop.png")
	mustFitPhone(t, b)
	b.MustShot(t, "room-en-phone.png")

	b.MustTap(t, `[data-lang="ko"]`)
	mustSpeakKorean(t, b, roomKO)
	b.MustRun(t, "reloading", chromedp.Reload())
	b.MustWait(t, "the seat map again", `!!document.querySelector("#seat-map button.seat:not([disabled])")`, 20*time.Second)
	mustSpeakKorean(t, b, roomKO)
	mustFitPhone(t, b)
	b.MustShot(t, "room-ko-phone.png")
	assertNoProblems(t, b)

	en := MustBrowser(t, time.Minute, 1280, 900)
	en.MustSpeak(t, "en")
	en.MustRun(t, "opening the waiting room in English", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("nickname")))
	mustSpeakLang(t, en, "en", map[string]string{"h1": "Get in line for the drop", "#start-session": "Start session"})
	assertNoProblems(t, en)
}

// TestDashboardSpeaksKoreanAndEnglish: the dashboard watching an event,
// charts and all, in Korean from the browser with no English left, then
// English from the switch, kept across a reload, at both widths.
func TestDashboardSpeaksKoreanAndEnglish(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	srv, base := MustStartServer(t)
	MustCall(t, "POST", base+"/api/v1/admin/events", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"id": "spring-2026", "name": "봄 콘서트", "seats": 40, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 60, "policy": "capacity",
	}, nil)
	var s struct {
		Token string `json:"access_token"`
	}
	MustCall(t, "POST", base+"/api/v1/sessions", nil, map[string]string{"nickname": "minji"}, &s)
	MustCall(t, "POST", base+"/api/v1/events/spring-2026/queue", map[string]string{"Authorization": "Bearer " + s.Token},
		map[string]string{"user_type": "ACTUAL"}, nil)

	b := MustBrowser(t, 2*time.Minute, 1280, 900)
	b.MustSpeak(t, "ko")
	b.MustRun(t, "opening the dashboard", chromedp.Navigate(base+"/dashboard.html"), chromedp.WaitVisible(chromedp.ID("d-admin-key")))
	b.MustRun(t, "the admin key",
		chromedp.SendKeys(chromedp.ID("d-admin-key"), srv.Keys.Admin),
		chromedp.Click(chromedp.ID("d-key-save")),
	)
	b.MustWait(t, "the key saved", `document.getElementById("dash-alert").textContent.includes("관리자 키를 이 탭에 저장했습니다")`, 10*time.Second)
	b.MustRun(t, "watching the event", chromedp.Navigate(base+"/dashboard.html#/event/spring-2026"))
	// The rates show once the charts hold 5 s of figures.
	watching := visible("#d-pause") + ` && ` + chartDrawn("#d-chart-queue") + ` && document.querySelectorAll("#d-admissions tbody tr").length >= 1` +
		` && document.getElementById("d-inflow").textContent !== "—"`
	b.MustWait(t, "the event's live view", watching, 20*time.Second)
	ko := map[string]string{
		"h1": "운영자 대시보드", "#d-events-title": "이벤트", "#d-pause": "입장 일시 중지", "#d-state": "진행 중",
		"#d-policy": "입장 방식 정원제", "#d-create-title": "이벤트 만들기", "#d-chart-queue .u-legend": "시각",
		"#d-admissions tbody td:nth-child(3)": "실제 사용자", "#d-patch-title": "실시간 입장 조절",
		"label[for=d-p-capacity]": "동시 입장 정원",
	}
	mustSpeakKorean(t, b, ko)
	if legend := MustEval[string](t, b, `document.querySelector("#d-chart-queue .u-legend").textContent`); !strings.Contains(legend, "대기") || !strings.Contains(legend, "예매 중") {
		t.Errorf("the queue chart's legend reads %q, want Korean series", legend)
	}
	b.MustShot(t, "dashboard-ko-desktop.png")

	en := map[string]string{
		"h1": "Operator dashboard", "#d-events-title": "Events", "#d-pause": "Pause admission", "#d-state": "Open",
		"#d-policy": "Policy capacity", "#d-create-title": "Create an event", "#d-chart-queue .u-legend": "Time",
		"#d-admissions tbody td:nth-child(3)": "ACTUAL", "#d-patch-title": "Steer admission live",
		"label[for=d-p-capacity]": "Capacity",
	}
	b.MustRun(t, "switching to English", chromedp.Click(chromedp.CSS(`[data-lang="en"]`)))
	mustSpeakLang(t, b, "en", en)
	if got := MustEval[string](t, b, `document.querySelector("#dash-alert .alert-text").textContent`); got != "Admin key saved for this tab." {
		t.Errorf("after the switch the alert reads %q, want it in English", got)
	}
	if legend := MustEval[string](t, b, `document.querySelector("#d-chart-queue .u-legend").textContent`); !strings.Contains(legend, "Waiting") {
		t.Errorf("after the switch the queue chart's legend reads %q, want English series", legend)
	}
	b.MustRun(t, "reloading", chromedp.Reload())
	b.MustWait(t, "the event's live view again", watching, 20*time.Second)
	mustSpeakLang(t, b, "en", en)
	b.MustShot(t, "dashboard-en-desktop.png")
	mustFitPhone(t, b)
	b.MustShot(t, "dashboard-en-phone.png")
	b.MustTap(t, `[data-lang="ko"]`)
	mustSpeakKorean(t, b, ko)
	b.MustRun(t, "reloading", chromedp.Reload())
	b.MustWait(t, "the event's live view again", watching, 20*time.Second)
	mustSpeakKorean(t, b, ko)
	mustFitPhone(t, b)
	b.MustShot(t, "dashboard-ko-phone.png")
	assertNoProblems(t, b)
}

// TestWaitingRoomPhoneSections: on a phone, in Korean, a map of more than
// 10,000 seats opens on its sections; a tap on the last zooms into its
// seats, big enough for a finger, and a tap on a seat buys it.
func TestWaitingRoomPhoneSections(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	parallelBrowser(t)
	srv, base := MustStartServer(t)
	MustCall(t, "POST", base+"/api/v1/admin/events", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"id": "big-2026", "name": "대형 공연장", "seats": 25_001, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 100, "active_ttl_s": 600, "policy": "capacity",
	}, nil)
	b := MustBrowser(t, 2*time.Minute, 1280, 900)
	b.MustSpeak(t, "ko")
	b.MustRun(t, "opening the waiting room", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("nickname")))
	b.MustPhone(t)
	b.MustWait(t, "the event", `!!document.querySelector('#event-select option[value="big-2026"]')`, 20*time.Second)
	b.MustRun(t, "starting a session", chromedp.SendKeys(chromedp.ID("nickname"), "minji"))
	b.MustTap(t, "#start-session")
	b.MustRun(t, "picking the event", chromedp.WaitVisible(chromedp.ID("session-info")), chromedp.SetValue(chromedp.ID("event-select"), "big-2026"))
	b.MustWait(t, "the join button", `!document.getElementById("join").disabled`, 10*time.Second)
	b.MustTap(t, "#join")

	b.MustWait(t, "the sections", visible("#seat-sections")+` && document.querySelectorAll("#seat-sections button.sec-tile").length === 3`, 20*time.Second)
	if visibleSeats := MustEval[bool](t, b, visible("#seat-scroll")); visibleSeats {
		t.Error("on a phone the seats show before a section is picked")
	}
	tiles := MustEval[[]string](t, b, `[...document.querySelectorAll("#seat-sections .sec-tile")].map(b => b.textContent)`)
	if len(tiles) != 3 || !strings.HasPrefix(tiles[0], "A–") || !strings.Contains(tiles[0], "잔여") {
		t.Errorf("section tiles %q, want three with their rows and free seats in Korean", tiles)
	}
	mustSpeakKorean(t, b, map[string]string{"#seat-overview-help": "구역을 선택하면", "#seat-title": "좌석 선택"})
	mustFitPhone(t, b)
	b.MustShot(t, "room-sections-ko-phone.png")

	b.MustTap(t, `#seat-sections button[data-section="OK"]`)
	b.MustWait(t, "the last section's seats", visible("#seat-scroll")+` && !!document.querySelector('#seat-map button[data-seat="OK-1"]')`, 20*time.Second)
	if n := MustEval[int](t, b, `document.querySelectorAll('#seat-map button[data-seat^="A-"]').length`); n != 0 {
		t.Errorf("%d seats of the first section still drawn", n)
	}
	if got := MustEval[string](t, b, `document.getElementById("seat-zoom-label").textContent`); !strings.HasPrefix(got, "OK–") {
		t.Errorf("the zoomed section reads %q, want its rows from OK", got)
	}
	size := MustEval[float64](t, b, `Math.min(...[...document.querySelectorAll("#seat-map button.seat")].slice(0, 50).map(b => Math.min(b.getBoundingClientRect().width, b.getBoundingClientRect().height)))`)
	if size < 24 {
		t.Errorf("seats are %.1f px on a phone, want at least 24 px for a finger", size)
	}
	mustFitPhone(t, b)
	b.MustShot(t, "room-section-seats-ko-phone.png")
	seat := MustEval[string](t, b, `[...document.querySelectorAll("#seat-map button.seat:not([disabled])")][30].dataset.seat`)
	b.MustTap(t, `#seat-map button[data-seat="`+seat+`"]`)
	b.MustWait(t, "the order's answer", `document.getElementById("buy-result").textContent.includes("예매 완료")`, 20*time.Second)
	if got := MustEval[string](t, b, `document.getElementById("buy-result").textContent`); !strings.Contains(got, seat) {
		t.Errorf("after the tap the page says %q, want seat %s bought", got, seat)
	}
	var ev struct {
		Stats struct {
			Sold int `json:"sold"`
		} `json:"stats"`
	}
	MustCall(t, "GET", base+"/api/v1/events/big-2026", nil, nil, &ev)
	if ev.Stats.Sold != 1 {
		t.Errorf("sold after the tap = %d, want 1", ev.Stats.Sold)
	}
	b.MustShot(t, "room-section-bought-ko-phone.png")
	assertNoProblems(t, b)
}
