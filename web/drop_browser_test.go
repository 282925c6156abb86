package web_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/simulator/scenario"
)

// myDropResult is the part of GET /drops/{drop}/results/me the test checks.
type myDropResult struct {
	UserID      string  `json:"user_id"`
	Position    int     `json:"position"`
	Outcome     string  `json:"outcome"`
	Seat        *string `json:"seat"`
	Percentile  float64 `json:"percentile"`
	FalseStarts int     `json:"false_starts"`
}

// MustDropServer starts a server whose drops play testdata/browser-drop.yaml.
func MustDropServer(t *testing.T) (*app.Server, string) {
	t.Helper()
	sc, err := scenario.Load("testdata/browser-drop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return MustStartServerWith(t, func(c *app.Config) { c.DropScenarios = []*scenario.Scenario{sc} })
}

// boardPeriod is the leaderboard period to read for want ("day" or "week")
// so that it still holds a drop opened at opened a minute after now: the
// day's and the week's begin at midnight UTC (the week's on a Monday), and
// a run that crosses one reads the next longer period instead.
func boardPeriod(want string, opened, now time.Time) string {
	periods := []string{drop.PeriodDay, drop.PeriodWeek}
	if want == drop.PeriodWeek {
		periods = periods[1:]
	}
	for _, p := range periods {
		if since, _ := drop.PeriodStart(p, now.Add(time.Minute)); !opened.Before(since) {
			return p
		}
	}
	return drop.PeriodAll
}

// MustBoard shows the practice page's leaderboard for want, or the longer
// period boardPeriod picks for a drop opened at opened, and returns it. It
// clicks once the page has settled: it ignores clicks for 500 ms after a
// screen change.
func (b *browser) MustBoard(t *testing.T, want string, opened time.Time) string {
	t.Helper()
	p := boardPeriod(want, opened, time.Now())
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	b.MustRun(t, "the "+p+" leaderboard", chromedp.Click(chromedp.CSS(`label[for="dlb-`+p+`"]`)))
	return p
}

// TestBoardPeriod checks the tests' leaderboard choice against midnight UTC.
func TestBoardPeriod(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, want, opened, now, period string
	}{
		{"the same day", "day", "2026-11-25T10:00:00Z", "2026-11-25T10:03:00Z", "day"},
		{"a minute before midnight reads the week", "day", "2026-11-25T23:58:00Z", "2026-11-25T23:59:30Z", "week"},
		{"past midnight on a Wednesday", "day", "2026-11-25T23:59:50Z", "2026-11-26T00:00:30Z", "week"},
		{"past midnight into a Monday", "day", "2026-11-29T23:59:50Z", "2026-11-30T00:00:30Z", "all"},
		{"the week, on a Sunday", "week", "2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z", "week"},
		{"the week, past Monday's midnight", "week", "2026-11-29T23:59:50Z", "2026-11-30T00:00:10Z", "all"},
		{"days are counted in UTC, not the local zone", "day", "2026-11-26T08:30:00+09:00", "2026-11-26T08:35:00+09:00", "day"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := boardPeriod(tc.want, at(tc.opened), at(tc.now)); got != tc.period {
				t.Errorf("boardPeriod(%q, %s, %s) = %q, want %q", tc.want, tc.opened, tc.now, got, tc.period)
			}
		})
	}
}

// TestPracticeDrop races a public drop in the practice page: it opens on
// the drop (scenario, crowd, seats, a countdown on the server's clock, the
// people in), a press before the opening is refused as a false start, the
// press at the opening puts the person in line, they buy a seat, and the
// result shows the drop's ranking with them in it (found by user id), their
// percentile and false starts as the API has them, and the day's
// leaderboard, switchable to the week's.
func TestPracticeDrop(t *testing.T) {
	if testing.Short() {
		t.Skip("a drop opens at least 10 s after it is made")
	}
	parallelBrowser(t)
	srv, base := MustDropServer(t)
	var d struct {
		ID      string    `json:"id"`
		Event   string    `json:"event"`
		OpensAt time.Time `json:"opens_at"`
	}
	// The browser first: its start-up does not eat into the drop's lead.
	b := MustBrowser(t, 3*time.Minute, 1280, 900)
	MustCall(t, "POST", base+"/api/v1/admin/drops", map[string]string{"X-Admin-Key": srv.Keys.Admin}, map[string]any{
		"scenario": "browser-drop", "level": "easy", "crowd": 40, "seats": 200,
		"opens_at": time.Now().Add(14 * time.Second).UTC().Format(time.RFC3339Nano),
	}, &d)

	b.MustRun(t, "opening the practice page",
		chromedp.Navigate(base+"/practice.html"),
		chromedp.WaitVisible(chromedp.ID("dr-nickname")),
	)
	b.MustWait(t, "the upcoming drop", `document.getElementById("dr-meta").textContent.includes("a crowd of 40")`, 20*time.Second)
	if meta := MustEval[string](t, b, `document.getElementById("dr-meta").textContent`); !strings.Contains(meta, "browser-drop") ||
		!strings.Contains(meta, "easy") || !strings.Contains(meta, "200 seats") {
		t.Errorf("the drop reads %q, want its scenario, level and seats", meta)
	}
	b.MustRun(t, "picking a nickname",
		chromedp.SendKeys(chromedp.ID("dr-nickname"), "dropper"),
		chromedp.Click(chromedp.ID("dr-nick-save")),
	)
	b.MustWait(t, "the join button", visible("#dr-join"), 10*time.Second)
	b.MustWait(t, "a running countdown and the people in", `/^\d+(:\d\d|\.\d)$/.test(document.getElementById("dr-clock").textContent) && `+
		`document.getElementById("dr-people").textContent === "0" && document.getElementById("dr-offset").textContent.includes("ms")`, 10*time.Second)
	b.MustShot(t, "drop-countdown.png")
	b.MustPhone(t)
	b.MustShot(t, "drop-countdown-phone.png")
	b.MustRun(t, "desktop viewport", chromedp.EmulateViewport(1280, 900))

	b.MustRun(t, "pressing too early", chromedp.Focus(chromedp.ID("dr-join")), chromedp.KeyEvent(" "))
	b.MustWait(t, "the false start", `document.getElementById("dr-status").textContent.includes("Too early")`, 10*time.Second)
	b.MustShot(t, "drop-false-start.png")
	if !time.Now().Before(d.OpensAt) {
		t.Fatal("the drop opened before the early press was answered; the test cannot check a false start")
	}

	// Press once the page shows a part of the crowd in: it comes faster
	// than 2 are let in each half second, so the person lands in a line.
	b.MustWait(t, "the opening", `document.getElementById("dr-join").dataset.state === "open"`, 30*time.Second)
	b.MustWait(t, "the crowd rushing in", `parseInt(document.getElementById("dr-crowd").textContent, 10) >= 15`, 20*time.Second)
	b.MustRun(t, "joining", chromedp.Focus(chromedp.ID("dr-join")), chromedp.KeyEvent("\r"))
	b.MustWait(t, "a place in line", `/^#\/drop\/[^/]+\/(wait|seats)$/.test(location.hash)`, 20*time.Second)
	first := MustEval[int](t, b, `Object.values(JSON.parse(localStorage.getItem("rushline.practice.races"))).find(r => r.drop).first_position || 0`)
	if first < 2 {
		t.Errorf("the join answered place %d, want a place behind some of the crowd", first)
	}
	if MustEval[bool](t, b, visible("#w-position")) {
		b.MustWait(t, "the drop's figures while waiting", `document.getElementById("w-crowd").textContent.includes(" of 40")`, 10*time.Second)
		b.MustShot(t, "drop-waiting.png")
	}

	b.MustWait(t, "a free seat", `!!document.querySelector("#s-map button.seat:not([disabled])")`, 30*time.Second)
	b.MustShot(t, "drop-seats.png")
	if !mustBuy(t, b) {
		t.Fatalf("no seat bought; the page says %q", MustEval[string](t, b, `document.getElementById("s-note").textContent`))
	}

	b.MustWait(t, "the drop's result", visible("#dres-headline")+` && location.hash.endsWith("/result")`, 20*time.Second)
	token := MustEval[string](t, b, `JSON.parse(localStorage.getItem("rushline.practice.session")).access_token`)
	auth := map[string]string{"Authorization": "Bearer " + token}
	// The percentile counts the crowd joining after the person: read it
	// until the page and the API agree (the crowd of 40 joins within seconds).
	var mine myDropResult
	var shown string
	for end := time.Now().Add(30 * time.Second); ; {
		MustCall(t, "GET", base+"/api/v1/drops/"+d.ID+"/results/me", auth, nil, &mine)
		shown = MustEval[string](t, b, `document.getElementById("dres-percentile").textContent`)
		if mine.Seat != nil && shown == strconv.FormatFloat(mine.Percentile, 'f', -1, 64)+"%" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the page shows percentile %q, the API %+v", shown, mine)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if mine.FalseStarts != 1 || mine.Outcome != "seat" {
		t.Errorf("my result %+v, want one false start and a seat", mine)
	}
	if got := MustEval[string](t, b, `document.getElementById("dres-false").textContent`); got != "1" {
		t.Errorf("false starts shown %q, want 1", got)
	}
	headline := MustEval[string](t, b, `document.getElementById("dres-headline").textContent`)
	for _, want := range []string{"You were " + ordinal(mine.Position) + " in line", "ahead of " + strings.TrimSuffix(shown, "%") + "% of everyone",
		"1 false start", "seat " + *mine.Seat} {
		if !strings.Contains(headline, want) {
			t.Errorf("result headline %q lacks %q", headline, want)
		}
	}
	// The ranking marks the person's row by user id.
	b.MustWait(t, "the ranking with me", `[...document.querySelectorAll("#rank-table tbody tr.me")].some(r => r.textContent.includes("dropper (you)"))`, 10*time.Second)
	if n := MustEval[int](t, b, `document.querySelectorAll("#rank-table tbody tr.me").length`); n != 1 {
		t.Errorf("%d rows of the ranking marked as mine, want 1", n)
	}
	day := b.MustBoard(t, "day", d.OpensAt)
	b.MustWait(t, "the "+day+" leaderboard", `document.getElementById("dlb-`+day+`").checked && [...document.querySelectorAll("#dlb-table tbody tr.me")].some(r => r.textContent.includes("dropper") && r.textContent.includes(`+strconv.Quote(*mine.Seat)+`))`, 10*time.Second)
	b.MustShot(t, "drop-result.png")
	week := b.MustBoard(t, "week", d.OpensAt)
	b.MustWait(t, "the "+week+" leaderboard", `document.getElementById("dlb-`+week+`").checked && document.querySelectorAll("#dlb-table tbody tr.me").length === 1`, 10*time.Second)
	b.MustPhone(t)
	b.MustShot(t, "drop-result-phone.png")

	// The solo race is still one click away.
	b.MustRun(t, "back to the front", chromedp.Click(chromedp.ID("dres-next")))
	// The front has loaded its drop before the click: the card grows by its
	// "after" links (shown for a drop this person joined) when it does, and
	// would move the link under a click aimed before that. Then the page
	// settles: a click within 500 ms of a screen change does nothing by
	// design, and the front may render again after its drop loads.
	b.MustWait(t, "the front", visible("#dr-solo")+` && !document.getElementById("dr-after").hidden`, 10*time.Second)
	b.MustWait(t, "the page to settle", settled, 5*time.Second)
	b.MustRun(t, "the solo race", chromedp.Click(chromedp.ID("dr-solo")))
	b.MustWait(t, "the solo race's scenarios", visible("#scenario-list")+` && !!document.querySelector("#scenario-list input")`, 10*time.Second)
	assertNoProblems(t, b)
}
