package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPracticeSpeaksKoreanAndEnglish: a Korean browser gets the practice
// page in Korean with no English left on its main screens (the next
// drop's countdown, the line and seats of the drop race, the drop's result
// and leaderboard, the history, the drills); the switch turns it English.
func TestPracticeSpeaksKoreanAndEnglish(t *testing.T) {
	if testing.Short() {
		t.Skip("a drop opens at least 10 s after it is made")
	}
	parallelBrowser(t)
	srv, base := MustDropServer(t)
	// The browser first: its start-up does not eat into the drop's lead.
	b := MustBrowser(t, 3*time.Minute, 1280, 900)
	opens := time.Now().Add(14 * time.Second).UTC()
	MustCall(t, "POST", base+"/api/v1/admin/drops", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"scenario": "browser-drop", "level": "easy", "crowd": 40, "seats": 200,
		"opens_at": opens.Format(time.RFC3339Nano),
	}, nil)

	b.MustSpeak(t, "ko")
	b.MustRun(t, "opening the practice page",
		chromedp.Navigate(base+"/practice.html"),
		chromedp.WaitVisible(chromedp.ID("dr-nickname")),
	)
	b.MustWait(t, "the upcoming drop", `document.getElementById("dr-meta").textContent.includes("가상 관객 40명")`, 20*time.Second)
	b.MustRun(t, "picking a nickname",
		chromedp.SendKeys(chromedp.ID("dr-nickname"), "minji"),
		chromedp.Click(chromedp.ID("dr-nick-save")),
	)
	b.MustWait(t, "a running countdown", visible("#dr-join")+` && /^\d+(:\d\d|\.\d)$/.test(document.getElementById("dr-clock").textContent)`, 10*time.Second)
	mustSpeakKorean(t, b, map[string]string{"#dr-eyebrow": "다음 공개 드롭", "#dr-title": "드롭 오픈까지", "#dr-join": "입장"})
	b.MustShot(t, "practice-ko-countdown.png")

	b.MustWait(t, "the opening", `document.getElementById("dr-join").dataset.state === "open"`, 30*time.Second)
	b.MustWait(t, "the crowd rushing in", `parseInt(document.getElementById("dr-crowd").textContent, 10) >= 15`, 20*time.Second)
	b.MustRun(t, "joining", chromedp.Focus(chromedp.ID("dr-join")), chromedp.KeyEvent("\r"))
	b.MustWait(t, "a place in line", `/^#\/drop\/[^/]+\/(wait|seats)$/.test(location.hash)`, 20*time.Second)
	if MustEval[bool](t, b, visible("#w-position")) {
		mustSpeakKorean(t, b, nil)
		b.MustShot(t, "practice-ko-waiting.png")
	}
	b.MustWait(t, "a free seat", `!!document.querySelector("#s-map button.seat:not([disabled])")`, 30*time.Second)
	mustSpeakKorean(t, b, nil)
	if got := MustEval[string](t, b, `document.querySelector("#s-map button.seat").getAttribute("aria-label")`); !strings.Contains(got, "좌석") {
		t.Errorf("a seat's label reads %q, want Korean", got)
	}
	if !mustBuy(t, b) {
		t.Fatalf("no seat bought; the page says %q", MustEval[string](t, b, `document.getElementById("s-note").textContent`))
	}
	b.MustWait(t, "the drop's result", visible("#dres-headline")+` && location.hash.endsWith("/result")`, 20*time.Second)
	day := b.MustBoard(t, "day", opens)
	b.MustWait(t, "the "+day+" leaderboard", `document.getElementById("dlb-`+day+`").checked && document.querySelectorAll("#dlb-table tbody tr.me").length === 1`, 10*time.Second)
	mustSpeakKorean(t, b, map[string]string{"#dres-headline": "대기 순번"})
	b.MustShot(t, "practice-ko-result.png")
	mustFitPhone(t, b)
	b.MustShot(t, "practice-ko-result-phone.png")
	b.MustRun(t, "desktop viewport", chromedp.EmulateViewport(1280, 900))

	b.MustRun(t, "the history", chromedp.Navigate(base+"/practice.html#/history"))
	b.MustWait(t, "my races", visible("#view-board")+` && (document.querySelectorAll("#h-table tbody tr").length >= 1 || !document.getElementById("h-empty").hidden)`, 20*time.Second)
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	mustSpeakKorean(t, b, nil)
	b.MustShot(t, "practice-ko-history.png")

	b.MustRun(t, "the drills", chromedp.Navigate(base+"/practice.html#/drills"))
	b.MustWait(t, "the drills", visible("#view-drills"), 20*time.Second)
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	mustSpeakKorean(t, b, nil)
	b.MustShot(t, "practice-ko-drills.png")

	b.MustRun(t, "switching to English", chromedp.Click(chromedp.CSS(`[data-lang="en"]`)))
	mustSpeakLang(t, b, "en", map[string]string{".site-nav a": "Waiting room"})
	b.MustRun(t, "the front in English", chromedp.Navigate(base+"/practice.html#/"))
	b.MustWait(t, "the drop in English", `document.getElementById("dr-meta").textContent.includes("a crowd of 40")`, 20*time.Second)
	mustSpeakLang(t, b, "en", map[string]string{"#dr-eyebrow": "Next public drop"})
	assertNoProblems(t, b)
}
