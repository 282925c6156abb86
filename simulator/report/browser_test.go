package report_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rushline/rushline/internal/browsertest"
)

// chartStateJS reports, for every chart container of the page, whether a
// canvas in it has a size and at least one pixel that is not transparent.
const chartStateJS = `(() => {
  const out = {containers: 0, drawn: 0, charts: []};
  for (const el of document.querySelectorAll("[data-chart]")) {
    out.containers++;
    const c = {id: el.dataset.chart, canvases: 0, width: 0, height: 0, painted: 0};
    for (const cv of el.querySelectorAll("canvas")) {
      c.canvases++;
      if (cv.width === 0 || cv.height === 0) continue;
      const px = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) n++;
      if (n > c.painted) { c.width = cv.width; c.height = cv.height; c.painted = n; }
    }
    if (c.painted > 0) out.drawn++;
    out.charts.push(c);
  }
  return out;
})()`

type chartState struct {
	Containers int `json:"containers"`
	Drawn      int `json:"drawn"`
	Charts     []struct {
		ID       string `json:"id"`
		Canvases int    `json:"canvases"`
		Width    int    `json:"width"`
		Height   int    `json:"height"`
		Painted  int    `json:"painted"`
	} `json:"charts"`
}

// minCharts is how many charts the fixture's report has at least.
const minCharts = 4

// TestHTMLRendersInChromium opens the fixture's HTML report in headless
// Chromium, in the light and the dark colour scheme, checks that the page
// throws nothing, logs no error and draws every chart, and saves a
// full-page screenshot of each as a test artifact.
func TestHTMLRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: runs in make test")
	}
	execPath := browsertest.MustFind(t)

	var page bytes.Buffer
	if err := MustBuild(t, fixture(), fixtureRules...).WriteHTML(&page); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	htmlPath := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(htmlPath)}).String()
	artifacts := browsertest.MustArtifactDir(t)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(execPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		// Containers often have a small /dev/shm, which crashes tabs.
		chromedp.Flag("disable-dev-shm-usage", true),
		// A desktop-sized page, so the charts get their full width.
		chromedp.WindowSize(1280, 900),
	)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// Start the browser once; each case below opens its own tab.
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("starting %s: %v", execPath, err)
	}

	for _, tc := range []struct{ scheme, file string }{
		{"light", "report.png"},
		{"dark", "report-dark.png"},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			renderReport(t, browserCtx, pageURL, tc.scheme, filepath.Join(artifacts, tc.file))
		})
	}
}

// renderReport opens pageURL in a new tab with the colour scheme emulated,
// waits until every chart has drawn, and saves a full-page screenshot to shot.
func renderReport(t *testing.T, browserCtx context.Context, pageURL, scheme, shot string) {
	tabCtx, cancel := chromedp.NewContext(browserCtx)
	defer cancel()

	var (
		mu       sync.Mutex
		problems []string
	)
	report := func(s string) {
		mu.Lock()
		problems = append(problems, s)
		mu.Unlock()
	}
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
	// Runs on chromedp's reading goroutine: only record, never block.
	if err := chromedp.Listen(tabCtx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			report("uncaught exception: " + exceptionText(ev.ExceptionDetails))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				report("console.error: " + argsText(ev.Args))
			}
		}
	}); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}

	err := chromedp.Do(tabCtx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
			})
			return err
		}),
		chromedp.Navigate(pageURL),
	)
	if err != nil {
		t.Fatalf("loading %s: %v", pageURL, err)
	}

	dark, err := chromedp.Run(tabCtx, chromedp.Evaluate[bool](`matchMedia("(prefers-color-scheme: dark)").matches`))
	if err != nil {
		t.Fatalf("reading the colour scheme: %v", err)
	}
	if dark != (scheme == "dark") {
		t.Errorf("prefers-color-scheme: dark matches = %v, want %v", dark, scheme == "dark")
	}

	// Wait until every chart container holds a canvas with pixels on it.
	state, err := chromedp.Run(tabCtx, chromedp.Poll[chartState](
		fmt.Sprintf(`(s => s.containers >= %d && s.drawn === s.containers ? s : false)(%s)`, minCharts, chartStateJS),
		chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil {
		last, lerr := chromedp.Run(tabCtx, chromedp.Evaluate[chartState](chartStateJS))
		t.Fatalf("charts did not all draw (want every container drawn, at least %d): %v; last state %+v (%v); page problems: %v",
			minCharts, err, last, lerr, seen())
	}
	if state.Containers < minCharts || state.Drawn != state.Containers {
		t.Fatalf("drawn charts = %d of %d containers, want all of at least %d", state.Drawn, state.Containers, minCharts)
	}
	for _, c := range state.Charts {
		t.Logf("chart %-8s %dx%d canvas, %d painted pixels", c.ID, c.Width, c.Height, c.Painted)
	}

	img, err := chromedp.Run(tabCtx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(shot, img, 0o644); err != nil {
		t.Fatalf("saving the screenshot: %v", err)
	}
	t.Logf("screenshot (%s): %s", scheme, shot)
	decoded, err := png.Decode(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := decoded.Bounds(); b.Dx() < 800 {
		t.Errorf("screenshot is %dx%d, want at least 800 px wide", b.Dx(), b.Dy())
	}

	for _, p := range seen() {
		t.Errorf("page (%s): %s", scheme, p)
	}
}

// exceptionText is the message and place of an uncaught exception.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
	}
	return fmt.Sprintf("%s (line %d, column %d)", msg, d.LineNumber+1, d.ColumnNumber+1)
}

// argsText joins the arguments of a console call.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		case a.Description != "":
			parts = append(parts, a.Description)
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}
