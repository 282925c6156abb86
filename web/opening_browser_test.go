package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPracticeDropOpenings races two drops with an opening on the practice
// page in Korean: one with a 12-bit proof of work, solved in the page's
// worker before the join (a join without it is refused), and one with a
// random start, whose early press holds a pre-queue place until the draw
// at the opening places the person. Both joins hold a live token.
func TestPracticeDropOpenings(t *testing.T) {
	if testing.Short() {
		t.Skip("a drop opens at least 10 s after it is made")
	}
	parallelBrowser(t)
	srv, base := MustDropServer(t)
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	type created struct {
		ID        string    `json:"id"`
		Event     string    `json:"event"`
		OpensAt   time.Time `json:"opens_at"`
		QueueMode string    `json:"queue_mode"`
		Challenge string    `json:"challenge"`
		PowBits   int       `json:"pow_bits"`
	}
	var pow, random created
	MustCall(t, "POST", base+"/api/v1/admin/drops", admin, map[string]any{
		"scenario": "browser-drop", "level": "easy", "crowd": 10, "seats": 200, "challenge": "pow", "pow_bits": 12,
		"opens_at": time.Now().Add(12 * time.Second).UTC().Format(time.RFC3339Nano),
	}, &pow)
	MustCall(t, "POST", base+"/api/v1/admin/drops", admin, map[string]any{
		"scenario": "browser-drop", "level": "easy", "crowd": 10, "seats": 200, "queue_mode": "random_start",
		"opens_at": time.Now().Add(40 * time.Second).UTC().Format(time.RFC3339Nano),
	}, &random)
	var listed created
	MustCall(t, "GET", base+"/api/v1/drops/"+pow.ID, nil, nil, &listed)
	if listed.Challenge != "pow" || listed.PowBits != 12 {
		t.Fatalf("GET /drops/%s = %+v, want its challenge", pow.ID, listed)
	}

	b := MustBrowser(t, 3*time.Minute, 1280, 900)
	b.MustSpeak(t, "ko")
	b.MustRun(t, "opening the proof-of-work drop",
		chromedp.Navigate(base+"/practice.html#/drop/"+pow.ID),
		chromedp.WaitVisible(chromedp.ID("dr-nickname")),
	)
	b.MustRun(t, "picking a nickname",
		chromedp.SendKeys(chromedp.ID("dr-nickname"), "minji"),
		chromedp.Click(chromedp.ID("dr-nick-save")),
	)
	b.MustWait(t, "the drop's opening on its card", `document.getElementById("dr-meta").textContent.includes("작업 증명 12비트")`, 20*time.Second)
	b.MustWait(t, "the opening", `document.getElementById("dr-join").dataset.state === "open"`, 30*time.Second)
	b.MustRun(t, "joining", chromedp.Focus(chromedp.ID("dr-join")), chromedp.KeyEvent("\r"))
	if err := chromedp.Do(b.ctx, chromedp.Poll[chromedp.Void](`/^#\/drop\/[^/]+\/(wait|seats)$/.test(location.hash)`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("no place in line after the challenge: the page says %q", MustEval[string](t, b, `document.getElementById("dr-status").textContent + " | " + document.querySelector(".alert, [role=alert]")?.textContent`))
	}
	mustTokenLive(t, b, base, pow.ID)

	b.MustRun(t, "opening the random-start drop", chromedp.Navigate(base+"/practice.html#/drop/"+random.ID))
	b.MustWait(t, "the drop's opening on its card", `document.getElementById("dr-meta").textContent.includes("무작위 순서 배정")`, 20*time.Second)
	b.MustWait(t, "the join button", visible("#dr-join"), 10*time.Second)
	b.MustRun(t, "pressing before the opening", chromedp.Focus(chromedp.ID("dr-join")), chromedp.KeyEvent("\r"))
	b.MustWait(t, "the pre-queue", `document.getElementById("dr-status").textContent.startsWith("사전 대기열 등록됨")`, 10*time.Second)
	if !time.Now().Before(random.OpensAt) {
		t.Fatal("the drop opened before the pre-queue was shown")
	}
	mustSpeakKorean(t, b, nil)
	if !MustEval[bool](t, b, `document.getElementById("dr-pow").hidden`) {
		t.Error("the proof-of-work box is shown on a drop without a challenge")
	}
	b.MustShot(t, "practice-ko-prequeue.png")
	b.MustPhone(t)
	b.MustShot(t, "practice-ko-prequeue-phone.png")
	b.MustRun(t, "desktop viewport", chromedp.EmulateViewport(1280, 900))
	b.MustWait(t, "a place after the draw", `/^#\/drop\/[^/]+\/(wait|seats)$/.test(location.hash)`, 60*time.Second)
	if time.Now().Before(random.OpensAt) {
		t.Error("placed before the opening")
	}
	mustTokenLive(t, b, base, random.ID)
	assertNoProblems(t, b)
}

// mustTokenLive checks through the API that the page's join of drop holds
// a token in line or buying.
func mustTokenLive(t *testing.T, b *browser, base, drop string) {
	t.Helper()
	r := MustEval[struct{ ID, Token string }](t, b, fmt.Sprintf(
		`Object.values(JSON.parse(localStorage.getItem("rushline.practice.races"))).find(r => r.drop === %q) || {}`, drop))
	if r.Token == "" {
		t.Fatalf("the page kept no token for drop %s", drop)
	}
	var st struct {
		Status string `json:"status"`
	}
	MustCall(t, "GET", base+"/api/v1/events/"+r.ID+"/queue/"+r.Token, nil, nil, &st)
	if st.Status != "ACTIVE" && st.Status != "WAITING" {
		t.Errorf("drop %s's token is %q, want ACTIVE or WAITING", drop, st.Status)
	}
}
