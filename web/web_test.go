package web

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// mustRead returns an embedded file's text.
func mustRead(tb testing.TB, name string) string {
	tb.Helper()
	b, err := fs.ReadFile(FS(), name)
	if err != nil {
		tb.Fatalf("embedded %s: %v", name, err)
	}
	if len(b) == 0 {
		tb.Fatalf("embedded %s is empty", name)
	}
	return string(b)
}

func TestEmbeddedFilesExist(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css", "favicon.svg"} {
		t.Run(name, func(t *testing.T) { mustRead(t, name) })
	}
}

var (
	// attrRef finds the URL-valued attributes of a page.
	attrRef = regexp.MustCompile(`(?is)\b(src|href|action|poster|srcset|formaction|data)\s*=\s*["']([^"']*)["']`)
	// assetTag finds the tags that load something: scripts, stylesheets, icons, images.
	assetTag = regexp.MustCompile(`(?is)<(script|link|img|source|iframe|video|audio|embed|object)\b[^>]*>`)
	// outside matches a URL that leaves the page's own host.
	outside = regexp.MustCompile(`(?i)^\s*(https?:|//|ftp:|ws:|wss:)`)
	// anyURL finds absolute http(s) URLs anywhere in a text.
	anyURL = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
)

// TestIndexUsesOnlyLocalAssets: the page must work with no network beyond
// the server itself, so every reference is local, and every loaded asset is
// an absolute path that is embedded (a relative one would break on the
// index.html fallback for deep paths such as /events/x).
func TestIndexUsesOnlyLocalAssets(t *testing.T) {
	page := mustRead(t, "index.html")
	for _, m := range attrRef.FindAllStringSubmatch(page, -1) {
		if outside.MatchString(m[2]) {
			t.Errorf("index.html %s=%q points to another host", m[1], m[2])
		}
	}
	if u := anyURL.FindString(page); u != "" {
		t.Errorf("index.html mentions an outside URL %q", u)
	}
	tags := assetTag.FindAllString(page, -1)
	if len(tags) == 0 {
		t.Fatal("index.html loads no assets; expected its script and stylesheet")
	}
	var loaded []string
	for _, tag := range tags {
		for _, m := range attrRef.FindAllStringSubmatch(tag, -1) {
			ref := m[2]
			if !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//") {
				t.Errorf("asset %q in %s is not an absolute local path", ref, tag)
				continue
			}
			name := strings.TrimPrefix(strings.SplitN(strings.SplitN(ref, "?", 2)[0], "#", 2)[0], "/")
			if _, err := fs.Stat(FS(), name); err != nil {
				t.Errorf("asset %q is not embedded: %v", ref, err)
			}
			loaded = append(loaded, name)
		}
	}
	for _, want := range []string{"app.js", "style.css"} {
		found := false
		for _, l := range loaded {
			found = found || l == want
		}
		if !found {
			t.Errorf("index.html does not load /%s", want)
		}
	}
}

// TestAssetsMakeNoOutsideRequests: the script and stylesheet pull in nothing
// from another host either (no CDN, no web fonts).
func TestAssetsMakeNoOutsideRequests(t *testing.T) {
	for _, name := range []string{"app.js", "style.css"} {
		text := mustRead(t, name)
		if u := anyURL.FindString(text); u != "" {
			t.Errorf("%s mentions an outside URL %q", name, u)
		}
	}
	css := mustRead(t, "style.css")
	if strings.Contains(strings.ToLower(css), "@import") {
		t.Error("style.css uses @import")
	}
	// The one URL an SVG file may carry is its XML namespace, which is a name, not a request.
	svg := strings.ReplaceAll(mustRead(t, "favicon.svg"), `xmlns="http://www.w3.org/2000/svg"`, "")
	if u := anyURL.FindString(svg); u != "" {
		t.Errorf("favicon.svg mentions an outside URL %q", u)
	}
}

// TestIndexHasStableIDs: the ids end-to-end tests drive, each exactly once.
func TestIndexHasStableIDs(t *testing.T) {
	page := mustRead(t, "index.html")
	for _, id := range []string{
		"nickname", "start-session", "event-select", "join", "position", "status",
		"seat-map", "buy-result", "events-table", "admin-key", "create-event",
		"leave", "join-again", "position-chart", "operator", "create-event-form",
	} {
		re := regexp.MustCompile(`\bid\s*=\s*["']` + regexp.QuoteMeta(id) + `["']`)
		if n := len(re.FindAllStringIndex(page, -1)); n != 1 {
			t.Errorf("id %q appears %d times in index.html, want 1", id, n)
		}
	}
}

// TestInputsHaveLabels: every form control is named by a <label for=…> or an aria-label.
func TestInputsHaveLabels(t *testing.T) {
	page := mustRead(t, "index.html")
	control := regexp.MustCompile(`(?is)<(input|select|textarea)\b[^>]*>`)
	idAttr := regexp.MustCompile(`(?i)\bid\s*=\s*["']([^"']+)["']`)
	for _, tag := range control.FindAllString(page, -1) {
		if strings.Contains(strings.ToLower(tag), "aria-label") {
			continue
		}
		m := idAttr.FindStringSubmatch(tag)
		if m == nil {
			t.Errorf("form control without id or aria-label: %s", tag)
			continue
		}
		if !regexp.MustCompile(`<label\b[^>]*\bfor\s*=\s*["']` + regexp.QuoteMeta(m[1]) + `["']`).MatchString(page) {
			t.Errorf("form control #%s has no <label for>", m[1])
		}
	}
}
