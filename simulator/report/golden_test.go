package report_test

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/rushline/rushline/simulator/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended, run go test -update\n%s",
			name, firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first line that differs.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + clip(w) + "\n  got: " + clip(g)
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// goldenReports are the reports the golden files show: one run, and the
// same run merged from two shards with another run.
func goldenReports(t *testing.T) map[string]*report.Report {
	one := MustBuild(t, fixture(), fixtureRules...)
	a, b := split(fixture())
	other := fixture()
	other.EventID, other.Seed = "practice-small-x2", 8
	other.Started = other.Started.Add(1)
	return map[string]*report.Report{
		"run":    one,
		"merged": MustMerge(t, MustBuild(t, a, fixtureRules...), MustBuild(t, b), MustBuild(t, other)),
	}
}

func TestGoldenText(t *testing.T) {
	for name, r := range goldenReports(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := r.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", buf.Bytes())
		})
	}
}

func TestGoldenHTML(t *testing.T) {
	for name, r := range goldenReports(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := r.WriteHTML(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".html", buf.Bytes())
		})
	}
}

// The same report renders the same bytes every time.
func TestDeterministic(t *testing.T) {
	render := func() string {
		var b bytes.Buffer
		r := MustMerge(t, MustBuild(t, randomRaw(3, 300)), MustBuild(t, fixture(), fixtureRules...))
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	first := render()
	for range 3 {
		if render() != first {
			t.Fatal("two renders of the same report differ")
		}
	}
}

// licenceComment matches the vendored licence comments (/*! … */).
var licenceComment = regexp.MustCompile(`(?s)/\*!.*?\*/`)

// The page needs no network: no URL outside the vendored licence comment,
// no src or href to anything, and it is well-formed HTML.
func TestHTMLSelfContained(t *testing.T) {
	r := MustBuild(t, fixture(), fixtureRules...)
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "Permission is hereby granted") {
		t.Error("the uPlot licence is missing")
	}
	// The run's target is shown as text (the user's data, escaped), never
	// linked; take it out, then nothing may point anywhere.
	if n := strings.Count(page, r.Target); n != 1 {
		t.Errorf("the target shows %d times, want once, as text", n)
	}
	stripped := strings.ReplaceAll(licenceComment.ReplaceAllString(page, ""), r.Target, "")
	for _, bad := range []string{"http://", "https://", "src=", "href=", "@import", "url(", "//cdn"} {
		if i := strings.Index(stripped, bad); i >= 0 {
			t.Errorf("page refers out with %q: …%s…", bad, stripped[max(0, i-80):min(len(stripped), i+80)])
		}
	}
	checkWellFormed(t, page)
}

var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// checkWellFormed tokenizes the page and checks that every element closes,
// in order, and that the structure has the parts a reader needs.
func checkWellFormed(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	seen := map[string]int{}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			if len(stack) > 0 {
				t.Fatalf("unclosed elements at the end: %v", stack)
			}
			for _, tag := range []string{"html", "head", "title", "body", "main", "h1", "h2", "table", "th", "figure", "figcaption", "script", "style"} {
				if seen[tag] == 0 {
					t.Errorf("no <%s>", tag)
				}
			}
			if seen["h2"] < 5 || seen["figure"] != 4 {
				t.Errorf("want ≥ 5 sections and 4 charts, got %d h2 and %d figures", seen["h2"], seen["figure"])
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			tag := string(name)
			seen[tag]++
			if !voidElements[tag] {
				stack = append(stack, tag)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if len(stack) == 0 || stack[len(stack)-1] != tag {
				t.Fatalf("</%s> closes %v", tag, stack)
			}
			stack = stack[:len(stack)-1]
		case html.SelfClosingTagToken:
			name, _ := z.TagName()
			if !voidElements[string(name)] {
				t.Fatalf("self-closing <%s/>", name)
			}
		}
	}
}
