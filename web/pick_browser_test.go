package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// settled is true once a click would count: the practice page ignores
// clicks for 500 ms after a screen change.
const settled = `!document.documentElement.dataset.settling`

// mustPick selects the first seat sel matches: a click within 500 ms of a
// screen change does nothing by design, so it clicks until the page shows
// a seat selected.
func mustPick(tb testing.TB, b *browser, sel string) string {
	tb.Helper()
	for end := time.Now().Add(10 * time.Second); ; {
		b.MustRun(tb, "selecting a seat", chromedp.Click(chromedp.CSS(sel)))
		if id := MustEval[string](tb, b, `(document.querySelector('#s-map button.seat[aria-pressed="true"]') || {dataset: {}}).dataset.seat || ""`); id != "" {
			return id
		}
		if time.Now().After(end) {
			tb.Fatalf("no seat selected after clicking %s", sel)
		}
	}
}

// mustBuy selects a free seat and confirms it, as often as seats turn out
// taken; false when none could be bought.
func mustBuy(tb testing.TB, b *browser) bool {
	tb.Helper()
	for try := 0; try < 10; try++ {
		mustPick(tb, b, `#s-map button.seat:not([disabled])`)
		b.MustRun(tb, "confirming the seat", chromedp.Click(chromedp.ID("s-confirm")))
		b.MustWait(tb, "the order's answer", `!document.querySelector("#s-map[data-busy]")`, 10*time.Second)
		if MustEval[bool](tb, b, `/is yours|예매 성공/.test(document.getElementById("s-note").textContent)`) {
			return true
		}
	}
	return false
}

// mustShowTaken has the page's next read of a seat map (a fetch whose URL
// holds path) answer with seat taken, once, as when someone else takes it
// after the person chose it; the real map comes back with the read after.
// A read the server refused (a 429 or 503 on a loaded machine) goes
// through as it is, and the next one is changed instead.
func mustShowTaken(tb testing.TB, b *browser, path, seat string) {
	tb.Helper()
	MustEval[bool](tb, b, `(() => {
		const real = window.fetch;
		window.fetch = async (url, opts) => {
			const res = await real(url, opts);
			if (!res.ok || !String(url).includes(`+jsString(path)+`)) return res;
			window.fetch = real;
			const m = await res.json();
			for (const x of m.seats) if (x.id === `+jsString(seat)+`) x.taken = true;
			return new Response(JSON.stringify(m), {status: res.status, headers: res.headers});
		};
		return true;
	})()`)
}
