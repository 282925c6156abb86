package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPagesCarrySecurityHeaders: every page and asset is served with a
// Content-Security-Policy, no framing, no MIME sniffing and no Referer; API
// answers are not sniffed either.
func TestPagesCarrySecurityHeaders(t *testing.T) {
	t.Parallel()
	_, base := MustStartServer(t)
	page := map[string]string{
		"Content-Security-Policy": "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	}
	for _, tc := range []struct {
		path string
		want map[string]string
	}{
		{"/", page},
		{"/practice.html", page},
		{"/dashboard.html", page},
		{"/practice.js", page},
		{"/style.css", page},
		{"/vendor/uPlot.iife.min.js", page},
		{"/some/deep/link", page}, // index.html for the client's router
		{"/api/v1/time", map[string]string{"X-Content-Type-Options": "nosniff"}},
		{"/api/v1/events/nope", map[string]string{"X-Content-Type-Options": "nosniff"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, err := http.Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			for k, v := range tc.want {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestBrowserEnforcesThePolicy: the practice page loads and runs under its
// policy with no violation, and the browser refuses (and the test browser
// reports) an inline style, so a page that needs inline code fails the
// browser tests instead of breaking silently.
func TestBrowserEnforcesThePolicy(t *testing.T) {
	parallelBrowser(t)
	_, base := MustStartServer(t)
	b := MustBrowser(t, 60*time.Second, 1280, 900)
	b.MustRun(t, "opening the practice page",
		chromedp.Navigate(base+"/practice.html#/solo"),
		chromedp.WaitVisible(chromedp.ID("p-nickname")),
	)
	b.MustWait(t, "the scenario list", `document.querySelectorAll('#scenario-list input').length > 0`, 20*time.Second)
	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("page problems under the policy: %v", p)
	}
	MustEval[bool](t, b, `document.body.setAttribute("style", "outline: 1px solid red"), true`)
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(b.Problems(), func(p string) bool { return strings.Contains(p, "Content Security Policy") }) {
		if time.Now().After(deadline) {
			t.Fatalf("an inline style raised no policy violation; problems: %v", b.Problems())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
