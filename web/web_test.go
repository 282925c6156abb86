package web

import (
	"go/build"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rushline/rushline/internal/uplot"
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

// TestIndexHasStableIDs: the ids end-to-end tests drive, each exactly once.
func TestIndexHasStableIDs(t *testing.T) {
	page := mustRead(t, "index.html")
	for _, id := range []string{
		"nickname", "start-session", "event-select", "join", "position", "status",
		"seat-map", "buy-result", "events-table", "events-body", "leave", "join-again", "position-chart",
	} {
		re := regexp.MustCompile(`\bid\s*=\s*["']` + regexp.QuoteMeta(id) + `["']`)
		if n := len(re.FindAllStringIndex(page, -1)); n != 1 {
			t.Errorf("id %q appears %d times in index.html, want 1", id, n)
		}
	}
}

// pages are the HTML pages and the script that drives each.
var pages = []struct{ html, script string }{
	{"index.html", "app.js"},
	{"practice.html", "practice.js"},
	{"dashboard.html", "dashboard.js"},
}

// TestPagesUseOnlyLocalAssets: every page loads only embedded files by
// absolute path, and names no other host.
func TestPagesUseOnlyLocalAssets(t *testing.T) {
	for _, p := range pages {
		t.Run(p.html, func(t *testing.T) {
			page := mustRead(t, p.html)
			if u := anyURL.FindString(page); u != "" {
				t.Errorf("mentions an outside URL %q", u)
			}
			for _, m := range attrRef.FindAllStringSubmatch(page, -1) {
				if outside.MatchString(m[2]) {
					t.Errorf("%s=%q points to another host", m[1], m[2])
				}
			}
			loaded := map[string]bool{}
			for _, tag := range assetTag.FindAllString(page, -1) {
				for _, m := range attrRef.FindAllStringSubmatch(tag, -1) {
					ref := m[2]
					if !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//") {
						t.Errorf("asset %q is not an absolute local path", ref)
						continue
					}
					// Assets are absolute: a relative one would break on the
					// index.html fallback for deep paths such as /events/x.
					name := strings.TrimPrefix(strings.SplitN(strings.SplitN(ref, "?", 2)[0], "#", 2)[0], "/")
					if _, err := fs.Stat(FS(), name); err != nil {
						t.Errorf("asset %q is not embedded: %v", ref, err)
					}
					loaded[name] = true
				}
			}
			if !loaded[p.script] || !loaded["style.css"] {
				t.Errorf("loads %v, want /%s and /style.css", loaded, p.script)
			}
		})
	}
}

// uPlotBanner is the one URL the vendored chart library carries: a comment
// naming its home, which the browser never requests.
const uPlotBanner = "/*! https://github.com/leeoniya/uPlot (v1.6.32) */"

// TestStaticFilesMakeNoOutsideRequests: no script, stylesheet or image,
// vendored ones included, names another host (no CDN, no web fonts).
func TestStaticFilesMakeNoOutsideRequests(t *testing.T) {
	var checked int
	err := fs.WalkDir(FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".js") && !strings.HasSuffix(name, ".css") && !strings.HasSuffix(name, ".svg") {
			return err
		}
		checked++
		text := strings.ReplaceAll(mustRead(t, name), uPlotBanner, "")
		// An SVG file's XML namespace is a name, not a request.
		text = strings.ReplaceAll(text, `xmlns="http://www.w3.org/2000/svg"`, "")
		if u := anyURL.FindString(text); u != "" {
			t.Errorf("%s mentions an outside URL %q", name, u)
		}
		if strings.Contains(strings.ToLower(text), "@import") {
			t.Errorf("%s uses @import", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 9 {
		t.Errorf("checked %d scripts, stylesheets and images, want at least 9", checked)
	}
}

// TestUPlotIsVendoredWithItsLicence: the chart library ships with its licence.
func TestUPlotIsVendoredWithItsLicence(t *testing.T) {
	lic := mustRead(t, "vendor/uPlot.LICENSE")
	if !strings.Contains(lic, "MIT License") || !strings.Contains(lic, "Leon Sorokin") {
		t.Errorf("vendor/uPlot.LICENSE is not uPlot's MIT licence: %.80q", lic)
	}
	if js := mustRead(t, "vendor/uPlot.iife.min.js"); !strings.Contains(js, uPlotBanner) {
		t.Error("vendor/uPlot.iife.min.js is not uPlot 1.6.32")
	}
	mustRead(t, "vendor/uPlot.min.css")
}

// TestEveryPageHasLabelledInputs: each form control of each page is named
// by a <label for=…> or an aria-label, and each id is unique.
func TestEveryPageHasLabelledInputs(t *testing.T) {
	control := regexp.MustCompile(`(?is)<(input|select|textarea)\b[^>]*>`)
	idAttr := regexp.MustCompile(`(?i)\bid\s*=\s*["']([^"']+)["']`)
	for _, p := range pages {
		t.Run(p.html, func(t *testing.T) {
			page := mustRead(t, p.html)
			seen := map[string]int{}
			for _, m := range idAttr.FindAllStringSubmatch(page, -1) {
				seen[m[1]]++
			}
			for id, n := range seen {
				if n > 1 {
					t.Errorf("id %q appears %d times", id, n)
				}
			}
			controls := control.FindAllString(page, -1)
			if len(controls) == 0 {
				t.Fatal("no form controls")
			}
			for _, tag := range controls {
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
		})
	}
}

// TestScriptsFindTheirElements: every element id a page's module looks up
// with $('…') exists in that page, so a renamed id fails here, not in a race.
func TestScriptsFindTheirElements(t *testing.T) {
	lookup := regexp.MustCompile(`\$\('([A-Za-z0-9_-]+)'\)`)
	for _, p := range pages {
		t.Run(p.script, func(t *testing.T) {
			page := mustRead(t, p.html)
			ids := lookup.FindAllStringSubmatch(mustRead(t, p.script), -1)
			if len(ids) < 20 {
				t.Fatalf("found %d element lookups, want at least 20", len(ids))
			}
			for _, m := range ids {
				re := regexp.MustCompile(`\bid\s*=\s*["']` + regexp.QuoteMeta(m[1]) + `["']`)
				if !re.MatchString(page) {
					t.Errorf("%s looks up #%s, which %s lacks", p.script, m[1], p.html)
				}
			}
		})
	}
}

// TestFSIsAValidFileSystem: the pages with the shared uPlot added under
// vendor/ behave as an fs.FS (open, stat, read, seek, list), which
// http.ServeFileFS relies on.
func TestFSIsAValidFileSystem(t *testing.T) {
	if err := fstest.TestFS(FS(), "index.html", "app.js", "lib.js", "practice.html", "dashboard.html",
		"vendor/uPlot.iife.min.js", "vendor/uPlot.min.css", "vendor/uPlot.LICENSE"); err != nil {
		t.Fatal(err)
	}
}

// TestUPlotIsTheSharedCopy: the pages serve the very uPlot the offline
// reports inline (internal/uplot), not a second vendored copy.
func TestUPlotIsTheSharedCopy(t *testing.T) {
	for name, want := range map[string]string{
		"vendor/uPlot.iife.min.js": uplot.JS, "vendor/uPlot.min.css": uplot.CSS, "vendor/uPlot.LICENSE": uplot.License,
	} {
		if got := mustRead(t, name); got != want {
			t.Errorf("%s has %d bytes, the shared copy %d", name, len(got), len(want))
		}
	}
	if _, err := fs.Stat(static, "static/vendor"); err == nil {
		t.Error("web/static/vendor exists: uPlot is vendored in internal/uplot only")
	}
}

// TestPagesNeedNoSimulator: the pages' package takes its chart library from
// internal/uplot, not from a simulator package.
func TestPagesNeedNoSimulator(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pkg.Imports, "github.com/rushline/rushline/internal/uplot") {
		t.Errorf("imports %v, want internal/uplot among them", pkg.Imports)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/rushline/rushline/simulator") {
			t.Errorf("web imports %s", imp)
		}
	}
}

// TestScriptsShareLib: the page scripts are ES modules that take their
// helpers from lib.js rather than carrying copies of them.
func TestScriptsShareLib(t *testing.T) {
	exported := regexp.MustCompile(`(?m)^export (?:async )?(?:function|const) ([A-Za-z_$][\w$]*)`)
	defined := regexp.MustCompile(`(?m)^\s*(?:async )?(?:function|const|let) ([A-Za-z_$][\w$]*)`)
	var shared []string
	for _, m := range exported.FindAllStringSubmatch(mustRead(t, "lib.js"), -1) {
		shared = append(shared, m[1])
	}
	if len(shared) < 20 {
		t.Fatalf("lib.js exports %d names, want at least 20", len(shared))
	}
	for _, p := range pages {
		t.Run(p.script, func(t *testing.T) {
			if !regexp.MustCompile(`<script src="/` + regexp.QuoteMeta(p.script) + `" type="module">`).MatchString(mustRead(t, p.html)) {
				t.Errorf("%s does not load /%s as a module", p.html, p.script)
			}
			script := mustRead(t, p.script)
			if !strings.Contains(script, "from '/lib.js';") {
				t.Errorf("%s does not import /lib.js", p.script)
			}
			for _, m := range defined.FindAllStringSubmatch(script, -1) {
				if slices.Contains(shared, m[1]) {
					t.Errorf("%s defines %s, which lib.js exports", p.script, m[1])
				}
			}
		})
	}
}

// TestOneOperatorUI: only the dashboard calls the admin routes; the waiting
// room links to it instead of carrying its own operator panel.
func TestOneOperatorUI(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "practice.html", "practice.js", "lib.js"} {
		if strings.Contains(mustRead(t, name), "/admin/") {
			t.Errorf("%s uses the admin routes, which belong to the dashboard", name)
		}
	}
	if !strings.Contains(mustRead(t, "dashboard.js"), "'/admin/events'") {
		t.Error("dashboard.js does not create events")
	}
	if index := mustRead(t, "index.html"); !strings.Contains(index, `href="/dashboard.html"`) || !strings.Contains(index, `href="/practice.html"`) {
		t.Error("index.html does not link to the dashboard and the practice arena")
	}
}

// inlineCode finds what the Content-Security-Policy (default-src 'self',
// no 'unsafe-inline') refuses in a page: style attributes and elements,
// scripts without src, event-handler attributes and javascript: URLs.
var inlineCode = regexp.MustCompile(`(?is)\sstyle\s*=|<style\b|<script\b[^>]*>\s*[^<\s]|\son[a-z]+\s*=|javascript:`)

// TestPagesHaveNoInlineCode: the pages run under the server's policy.
func TestPagesHaveNoInlineCode(t *testing.T) {
	names, err := fs.Glob(FS(), "*.html")
	if err != nil || len(names) < 3 {
		t.Fatalf("pages %v: %v", names, err)
	}
	for _, name := range names {
		if m := inlineCode.FindString(mustRead(t, name)); m != "" {
			t.Errorf("%s has inline code the Content-Security-Policy refuses: %q", name, m)
		}
	}
	if !inlineCode.MatchString(`<p style="x">`) || !inlineCode.MatchString(`<script>go()</script>`) || inlineCode.MatchString(`<script src="/a.js"></script>`) {
		t.Error("inlineCode misjudges its own examples")
	}
}
