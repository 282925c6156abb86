package web

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// textKey finds the keys of a text table: 'room.hint.seats': …
var textKey = regexp.MustCompile(`'([a-z]+\.[A-Za-z0-9_.]+)':`)

// tableKeys returns the keys of the en and ko tables of a script's addTexts.
func tableKeys(t *testing.T, script string) (en, ko []string) {
	t.Helper()
	src := mustRead(t, script)
	i, j := strings.Index(src, "\n  en: {"), strings.Index(src, "\n  ko: {")
	k := strings.Index(src, "\n  page: {")
	if k < 0 {
		k = len(src)
	}
	if i < 0 || j < i || k < j {
		t.Fatalf("%s has no en and ko tables", script)
	}
	keys := func(s string) []string {
		var out []string
		for _, m := range textKey.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	return keys(src[i:j]), keys(src[j:k])
}

// TestTextsHaveBothLanguages: every text key has an English and a Korean
// text, and every key a page's script asks for exists.
func TestTextsHaveBothLanguages(t *testing.T) {
	used := regexp.MustCompile(`\bt\('([a-z]+\.[A-Za-z0-9_.]+)'`)
	for _, c := range []struct{ table, script string }{
		{"lib.js", "lib.js"}, {"room-i18n.js", "app.js"}, {"dashboard-i18n.js", "dashboard.js"},
	} {
		t.Run(c.table, func(t *testing.T) {
			en, ko := tableKeys(t, c.table)
			if len(en) < 20 {
				t.Fatalf("%s has %d English texts, want at least 20", c.table, len(en))
			}
			for _, k := range en {
				if _, ok := slices.BinarySearch(ko, k); !ok {
					t.Errorf("%s: %s has no Korean text", c.table, k)
				}
			}
			for _, k := range ko {
				if _, ok := slices.BinarySearch(en, k); !ok {
					t.Errorf("%s: %s has no English text", c.table, k)
				}
			}
			libEN, _ := tableKeys(t, "lib.js")
			// A key ending in "." is the start of keys made in the script.
			has := func(keys []string, k string) bool {
				return slices.ContainsFunc(keys, func(x string) bool { return x == k || strings.HasSuffix(k, ".") && strings.HasPrefix(x, k) })
			}
			for _, m := range used.FindAllStringSubmatch(mustRead(t, c.script), -1) {
				if !has(en, m[1]) && !has(libEN, m[1]) {
					t.Errorf("%s asks for %s, which no table has", c.script, m[1])
				}
			}
		})
	}
}

// TestPagesHaveTheLanguageSwitch: every page has the header's 한국어 /
// English switch and loads the shared language module.
func TestPagesHaveTheLanguageSwitch(t *testing.T) {
	for _, p := range pages {
		t.Run(p.html, func(t *testing.T) {
			page := mustRead(t, p.html)
			for _, want := range []string{`data-lang="ko"`, `data-lang="en"`} {
				if !strings.Contains(page, want) {
					t.Errorf("%s lacks the switch's %s", p.html, want)
				}
			}
		})
	}
	for _, script := range []string{"app.js", "dashboard.js", "practice-i18n.js", "lib.js"} {
		if !strings.Contains(mustRead(t, script), "from '/i18n.js';") {
			t.Errorf("%s does not take its language from /i18n.js", script)
		}
	}
}
