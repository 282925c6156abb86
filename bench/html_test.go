package bench

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHTML renders the fixture result: the chart data carries every size's
// figures (the floor at the first size only), each ratio is a row with its
// verdict, and the page loads nothing from the network.
func TestHTML(t *testing.T) {
	r := MustReadResult(t, "new.json")
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
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
	n := len(r.Settings.Sizes)
	// The sorted-set floor is measured at 1k and 1M only.
	if d.LineFloor == nil || !strings.Contains(page, `<div id="linefloor">`) {
		t.Fatal("no chart of the sorted-set floor")
	}
	for _, tc := range []struct {
		name   string
		series []*float64
		want   []float64 // 0: no point
	}{
		{"join naive", d.Join.Naive, []float64{16000, 15800, 15500}},
		{"join floor", d.Join.Floor, []float64{21000, 0, 0}},
		{"status rushline p99", d.Status.RushlineP99, []float64{10.5, 11.8, 12.6}},
		{"rushline server CPU per join", d.CPU.RushlineServer, []float64{69, 69, 69}},
		{"sorted-set floor, join.lua", d.LineFloor.Join, []float64{3.6, 0, 6}},
		{"sorted-set floor, floor", d.LineFloor.Floor, []float64{3, 0, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.series) != n {
				t.Fatalf("%d points, want %d", len(tc.series), n)
			}
			for i, p := range tc.series {
				switch {
				case tc.want[i] == 0 && p != nil:
					t.Errorf("point %d = %v, want none", i, *p)
				case tc.want[i] != 0 && (p == nil || *p != tc.want[i]):
					t.Errorf("point %d = %v, want %v", i, p, tc.want[i])
				}
			}
		})
	}
	// The first size's join rounds, shared and pinned.
	if d.Rounds == nil || !strings.Contains(page, `<div id="rounds">`) {
		t.Fatal("no chart of the join rounds")
	}
	for _, tc := range []struct {
		name   string
		series []*float64
		want   []float64
	}{
		{"floor", d.Rounds.Floor, []float64{35, 36, 37}},
		{"rushline", d.Rounds.Rushline, []float64{62, 70, 75}},
		{"floor, pinned", d.Rounds.FloorPinned, []float64{22, 23, 21}},
		{"rushline, pinned", d.Rounds.RushlinePinned, []float64{29, 31, 27}},
	} {
		if len(d.Rounds.Round) != len(tc.want) || len(tc.series) != len(tc.want) {
			t.Errorf("rounds %v, %s %d points; want %d", d.Rounds.Round, tc.name, len(tc.series), len(tc.want))
			continue
		}
		for i, p := range tc.series {
			if d.Rounds.Round[i] != i+1 || p == nil || *p != tc.want[i] {
				t.Errorf("%s, round %d = %v, want %v", tc.name, d.Rounds.Round[i], p, tc.want[i])
			}
		}
	}
	r.Pinned = nil
	notNil := func(p *float64) bool { return p != nil }
	if c := r.roundsChart(); c == nil || slices.ContainsFunc(c.FloorPinned, notNil) || slices.ContainsFunc(c.RushlinePinned, notNil) {
		t.Errorf("rounds chart without pinned loads: %+v, want the shared rounds and no pinned points", c)
	}
	for _, x := range r.Ratios {
		if row := "<td>" + x.Name + "</td><td>" + num(x.Value) + "</td>"; !strings.Contains(page, row) {
			t.Errorf("no row %q", row)
		}
	}
	if !strings.Contains(page, `<td class="MISS">MISS</td>`) || !strings.Contains(page, `<td class="PASS">PASS</td>`) {
		t.Error("verdicts are not marked")
	}
	if ext := regexp.MustCompile(`(src|href)=["']?(https?:)?//`).FindString(page); ext != "" {
		t.Errorf("the page loads %q from the network", ext)
	}
}
