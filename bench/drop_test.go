package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDropMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, MustReadResult(t, "drop.json")); err != nil {
		t.Fatal(err)
	}
	MustMatchGolden(t, "drop.md.golden", b.Bytes())
}

// TestDropRatios: the drop's targets hold at a 1M crowd and 1,000 people
// only; a smaller drop's figures carry none.
func TestDropRatios(t *testing.T) {
	full := MustReadResult(t, "drop.json")
	small := MustReadResult(t, "drop.json")
	small.Drop.Crowd, small.Drop.People = 5000, 50
	small.ComputeRatios()
	for _, tc := range []struct {
		name    string
		r       *Result
		ratio   string
		value   float64
		verdict string
	}{
		{"redis CPU at 1M", full, "drop crowd Redis CPU µs per virtual user @1M crowd, 1000 people", 3.4, "PASS"},
		{"p99 over 100 ms at 1M", full, "drop people promotion p99 ms @1M crowd, 1000 people", 120, "MISS"},
		{"RSS at 1M", full, "drop server RSS peak MB @1M crowd, 1000 people", 88.5, "PASS"},
		{"no target below 1M", small, "drop people promotion p99 ms @5k crowd, 50 people", 120, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(tc.r.Ratios, func(x Ratio) bool { return x.Name == tc.ratio })
			if i < 0 {
				t.Fatalf("no ratio %q in %v", tc.ratio, tc.r.Ratios)
			}
			if x := tc.r.Ratios[i]; x.Value != tc.value || x.Verdict() != tc.verdict {
				t.Errorf("%q = %v %q, want %v %q", tc.ratio, x.Value, x.Verdict(), tc.value, tc.verdict)
			}
		})
	}
}

// TestDropHTML: a drop-only result's page has the drop's charts and data,
// promotions in admission order, and no HTTP charts.
func TestDropHTML(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, MustReadResult(t, "drop.json")); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(b.String())
	m := regexp.MustCompile(`(?s)<script type="application/json" id="bench-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no chart data in the page")
	}
	var d chartData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("chart data: %v", err)
	}
	if d.Drop == nil {
		t.Fatal("no drop series in the chart data")
	}
	if !slices.Equal(d.Drop.T, []float64{0.5, 1}) || !slices.Equal(d.Drop.CrowdJoined, []int64{120000, 400000}) ||
		!slices.Equal(d.Drop.Sold, []int64{0, 150}) {
		t.Errorf("drop progress %+v", d.Drop)
	}
	if !slices.Equal(d.Drop.PromotionT, []float64{0.25, 0.75}) || len(d.Drop.PromotionMS) != 2 || len(d.Drop.BeforeStreamMS) != 2 ||
		d.Drop.PromotionMS[0] != nil || *d.Drop.PromotionMS[1] != 30 || *d.Drop.BeforeStreamMS[0] != 12 || d.Drop.BeforeStreamMS[1] != nil {
		t.Errorf("promotions at %v, want by admission time, pushed and before the stream apart", d.Drop.PromotionT)
	}
	for _, want := range []string{`id="drop-progress"`, `id="drop-latency"`, "drop people promotion p99 ms @1M crowd, 1000 people",
		`<td>consistency checks failed</td><td>1</td><td class="MISS">MISS</td>`, "999 of 1000 people have a final result"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="join"`) {
		t.Error("a drop-only page has the HTTP charts")
	}
}

// TestRunStepsDrop: `run` ends with the drop step when it has a crowd or
// people, and has none without.
func TestRunStepsDrop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drop  DropConfig
		wants bool
	}{
		{"default", DefaultDropConfig(), true},
		{"off", DropConfig{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultRunConfig()
			cfg.Drop = tc.drop
			s := (&runner{cfg: cfg}).steps()
			if got := strings.HasPrefix(s[len(s)-1].name, "drop:"); got != tc.wants {
				t.Errorf("last step %q: drop step = %v, want %v", s[len(s)-1].name, got, tc.wants)
			}
		})
	}
}

// TestDropSmoke plays a small drop end to end and checks the counts and
// the consistency checks. It asserts no timings.
func TestDropSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("a drop opens at least 10 s after its creation: runs in make test")
	}
	t.Parallel() // its own server and Redis; it asserts no timings
	cfg := DefaultDropConfig()
	cfg.ServerBin = MustBuild(t, t.TempDir(), "rushline-server", "../server")
	cfg.Crowd, cfg.People, cfg.Seats, cfg.Spread, cfg.Limit = 5000, 50, 200, 200*time.Millisecond, 3*time.Minute
	// Its crowd arrives within two seconds of the opening (concert-rush's tail lasts 20 s).
	cfg.Scenario = "practice-small"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunDrop(ctx, cfg, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	d := res.Drop
	if d.CrowdJoined != 5000 || d.PeopleJoined != 50 || d.Sold != 200 {
		t.Errorf("crowd joined %d, people joined %d, sold %d; want 5000, 50, 200", d.CrowdJoined, d.PeopleJoined, d.Sold)
	}
	if d.PeopleWithResult != 50 || d.SoldTwice != 0 || d.SQLConflicts != 0 || len(d.Mismatches) != 0 {
		t.Errorf("%d of 50 people with a result, %d seats sold twice, %d conflicts, mismatches %q",
			d.PeopleWithResult, d.SoldTwice, d.SQLConflicts, d.Mismatches)
	}
	if d.SeatMapSold != 200 || d.SQLOrders != 200 {
		t.Errorf("seat map %d, SQL orders %d, want 200 each", d.SeatMapSold, d.SQLOrders)
	}
	if d.PeopleAdmitted == 0 || d.Duplicates != 0 || d.LatencyAll.Count+d.AdmittedAtJoin != d.PeopleAdmitted ||
		len(d.Promotions) != d.LatencyAll.Count || d.BeforeStream != d.LatencyAll.Count-d.Latency.Count || d.Outcomes["seat"] != d.PeopleBought {
		t.Errorf("people admitted %d (%d at join, %d over SSE, %d promotions), %d duplicates, bought %d, outcomes %v",
			d.PeopleAdmitted, d.AdmittedAtJoin, d.Latency.Count, len(d.Promotions), d.Duplicates, d.PeopleBought, d.Outcomes)
	}
	if d.RedisCPUS <= 0 || d.ServerCPUS <= 0 || d.ServerRSSPeakMB <= 0 || d.FinishedS <= 0 || d.SoldOutS <= 0 || len(d.Timeline) == 0 {
		t.Errorf("figures missing: %+v", d)
	}
	if res.RedisVersion == "" || len(res.LoadAvg) != 2 || len(res.Ratios) != 3 {
		t.Errorf("header: redis %q, load %v, %d ratios", res.RedisVersion, res.LoadAvg, len(res.Ratios))
	}
	paths, err := res.WriteFilesNamed(t.TempDir(), "drop")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Practice drop: 5k crowd, 50 people on SSE", "| crowd joined | 5000 of 5000 | PASS |",
		"| people with a final result", "| 50 of 50 | PASS |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}
