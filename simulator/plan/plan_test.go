package plan_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/plan"
	"github.com/rushline/rushline/simulator/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// MustGolden compares got with testdata/name, or rewrites it with -update.
func MustGolden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the golden file; run with -update and review the diff.\ngot:\n%s", name, got)
	}
}

// goldenCrowd is a small drop: 6,000 in a 20 s spike, then a 40 s ramp down.
const goldenCrowd = `
name: golden
seed: 3
event:
  create: {seats: 4000, admit_batch: 50, active_ttl_s: 120}
phases:
  - {name: rush, arrival: spike, users: 6000, over: 20s}
  - {name: late, arrival: ramp, from: 50/s, to: 0/s, duration: 40s}
bots:
  - {name: fan, weight: 4, wait: sse, reaction: {dist: lognormal, median: 400ms, p90: 1s},
     patience: {dist: lognormal, median: 2m, p90: 6m}, think: {dist: lognormal, median: 20s, p90: 45s}}
  - {name: poller, weight: 1, wait: poll, poll_interval: 2s, think: {dist: uniform, min: 10s, max: 40s}}
`

// MustGoldenPlan makes the plan of goldenCrowd with the built-in rates.
func MustGoldenPlan(tb testing.TB) *plan.Plan {
	tb.Helper()
	sc := MustParse(tb, goldenCrowd)
	c, err := plan.CrowdOf(sc, 0.9)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := plan.Make(plan.Input{Name: sc.Name, Describe: plan.Describe(sc), Crowd: c,
		Event: plan.Event{Seats: 4000, Window: 2 * time.Minute}, Limit: 60, Conversion: 0.9, Rates: plan.DefaultRates,
		Grid: plan.Grid{Intervals: []time.Duration{500 * time.Millisecond, time.Second}}})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestPlanGolden(t *testing.T) {
	p := MustGoldenPlan(t)
	var txt, md, html bytes.Buffer
	for _, w := range []func() error{
		func() error { return p.WriteText(&txt) },
		func() error { return p.WriteMarkdown(&md) },
		func() error { return p.WriteHTML(&html) },
	} {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.MarshalIndent(p.Chart(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	MustGolden(t, "golden.txt", txt.Bytes())
	MustGolden(t, "golden.md", md.Bytes())
	MustGolden(t, "golden-chart.json", append(data, '\n'))
	// The page is offline: uPlot and the data are inlined, nothing is fetched.
	page := html.String()
	sentence := strings.ReplaceAll(p.Sentence(), "+", "&#43;") // as html/template writes it
	for _, want := range []string{"uPlot 1.6.32", `id="plan-data"`, sentence} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script src", "<link", `src="http`, `href="http`} {
		if strings.Contains(page, bad) {
			t.Errorf("HTML refers outside itself: %q", bad)
		}
	}
}

// TestPlanRecommends checks the ranking rule: the recommendation never
// exceeds the limit when some setting does not, and drains no slower than any
// other such setting.
func TestPlanRecommends(t *testing.T) {
	p := MustGoldenPlan(t)
	best := p.Best()
	if !best.Within {
		t.Fatalf("best %s exceeds the limit, yet the sweep was expected to have settings within it", best.Setting)
	}
	for _, r := range p.Results {
		if r.Within && r.Drain < best.Drain {
			t.Errorf("%s drains at %gs, before the recommendation's %gs", r.Setting, r.Drain, best.Drain)
		}
	}
	if got := len(p.Results); got != 2*5*4+2*5+2*5 {
		t.Errorf("%d settings, want 60 (capacity 2×5×4, batch 2×5, adaptive 2×5)", got)
	}
}

// TestCrowdOf checks the crowd follows the scenario like the engine does.
func TestCrowdOf(t *testing.T) {
	sc := MustParse(t, goldenCrowd)
	c, err := plan.CrowdOf(sc, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	// 6000 + (50/2)·40 = 7000 arrivals, give or take the ramp's last one.
	if n := len(c.Users); n < 6999 || n > 7000 {
		t.Fatalf("%d users, want 7000", n)
	}
	buyers, pollers, forever := 0, 0, 0
	for i, u := range c.Users {
		if i > 0 && u.Join < c.Users[i-1].Join {
			t.Fatalf("user %d joins at %g, before user %d at %g", i, u.Join, i-1, c.Users[i-1].Join)
		}
		if u.Buys {
			buyers++
		}
		if u.PollRate > 0 {
			pollers++
			if u.PollRate != 0.5 || !math.IsInf(u.Patience, 1) {
				t.Fatalf("poller %d: poll rate %g, patience %g; want 0.5/s and forever", i, u.PollRate, u.Patience)
			}
		}
		if math.IsInf(u.Patience, 1) {
			forever++
		}
	}
	if math.Abs(float64(buyers)/float64(len(c.Users))-0.25) > 0.001 {
		t.Errorf("%d buyers of %d, want 25%%", buyers, len(c.Users))
	}
	if forever != pollers {
		t.Errorf("%d users wait forever, want the %d pollers only", forever, pollers)
	}
	if share := float64(pollers) / float64(len(c.Users)); math.Abs(share-0.2) > 0.02 {
		t.Errorf("pollers %.3f of the crowd, want 0.2 ± 0.02", share)
	}
}

func TestCrowdErrors(t *testing.T) {
	closed := MustParse(t, `
name: closed
event: {create: {seats: 10, admit_batch: 5}}
phases: [{arrival: closed, concurrency: 10, duration: 10s}]
bots: [{name: b}]
`)
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		// The closed model has no arrival curve.
		{"closed phase", func() error { _, err := plan.CrowdOf(closed, 1); return err }, "closed model"},
		{"conversion above 1", func() error { _, err := plan.CrowdOf(closed, 1.5); return err }, "conversion must be 0–1"},
		{"no crowd", func() error {
			_, err := plan.ShapeScenario("x", plan.Shape{Kind: plan.ShapeSpike, Over: time.Second})
			return err
		}, "--total must be"},
		{"unknown shape", func() error {
			_, err := plan.ShapeScenario("x", plan.Shape{Kind: "wave", Total: 10, Over: time.Second})
			return err
		}, "--shape must be spike, ramp or constant"},
		{"no duration", func() error {
			_, err := plan.ShapeScenario("x", plan.Shape{Kind: plan.ShapeRamp, Total: 10})
			return err
		}, "--over must be > 0"},
		{"poll share", func() error {
			_, err := plan.ShapeScenario("x", plan.Shape{Kind: plan.ShapeSpike, Total: 10, Over: time.Second, PollShare: 2})
			return err
		}, "--poll-share must be 0–1"},
		{"abandon", func() error { _, err := plan.ExpPatience(-0.1); return err }, "--abandon must be 0–1"},
		{"think p90", func() error { _, err := plan.ThinkDist(time.Minute, time.Second); return err }, "--think-p90"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestShapeScenario: each shape brings exactly --total users over --over.
func TestShapeScenario(t *testing.T) {
	for _, kind := range []string{plan.ShapeSpike, plan.ShapeRamp, plan.ShapeConstant} {
		t.Run(kind, func(t *testing.T) {
			sc, err := plan.ShapeScenario("shape", plan.Shape{Kind: kind, Total: 12000, Over: time.Minute,
				PollShare: 0.5, PollInterval: time.Second, Think: scenario.Dist{Kind: scenario.DistConstant,
					Value: scenario.Duration(time.Second)}})
			if err != nil {
				t.Fatal(err)
			}
			c, err := plan.CrowdOf(sc, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(c.Users); n < 11999 || n > 12000 {
				t.Errorf("%d users, want 12000", n)
			}
			if last := c.Users[len(c.Users)-1].Join; last >= 60 {
				t.Errorf("last join at %gs, want within the minute", last)
			}
		})
	}
}

func TestLoadRates(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       plan.Rates
		err        string
	}{
		// The best rushline join, status at the largest line, 160 MiB / 10k streams.
		{"full", "bench.json", plan.Rates{JoinRPS: 21000, StatusRPS: 25000, PromotionsPerS: 120000,
			RedisBytesPerWaiting: 140, StreamBytes: 160.0 * (1 << 20) / 10000, Source: "bench.json (host fixture)"}, ""},
		// Missing sections keep the defaults, and the source says so.
		{"partial", "bench-partial.json", plan.Rates{JoinRPS: 12000, StatusRPS: 20000, PromotionsPerS: 141000,
			RedisBytesPerWaiting: 150, StreamBytes: 17000,
			Source: "bench-partial.json (host partial); defaults for status, admission, memory, push"}, ""},
		{"other schema", "bench-old.json", plan.Rates{}, `schema "rushline-bench/v0"`},
		{"missing", "nope.json", plan.Rates{}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := plan.LoadRates(filepath.Join("testdata", "bench", tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("rates\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
	// Without a file, the newest in the folder; without any, the defaults.
	if r, err := plan.RatesFor("", t.TempDir()); err != nil || r != plan.DefaultRates {
		t.Errorf("empty folder: %+v, %v; want the defaults", r, err)
	}
	if got := plan.NewestBench(filepath.Join("testdata", "bench")); filepath.Base(got) != "bench.json" {
		t.Errorf("newest bench file %q, want bench.json (the last by name)", got)
	}
}

func TestInputErrors(t *testing.T) {
	c := MustCrowd(t, 10, 0, 1)
	ok := plan.Input{Name: "x", Crowd: c, Event: plan.Event{Window: time.Minute}, Limit: 10, Conversion: 1,
		Rates: plan.DefaultRates}
	for _, tc := range []struct {
		name   string
		change func(*plan.Input)
		want   string
	}{
		{"no limit", func(in *plan.Input) { in.Limit = 0 }, "--limit"},
		{"short window", func(in *plan.Input) { in.Event.Window = time.Millisecond }, "--window must be >= 1s"},
		{"bad policy", func(in *plan.Input) { in.Grid.Policies = []string{"fifo"} }, `unknown policy "fifo"`},
		{"bad interval", func(in *plan.Input) { in.Grid.Intervals = []time.Duration{time.Millisecond} }, "interval must be 50ms–1h"},
		{"bad batch", func(in *plan.Input) { in.Grid.Batches = []int{0} }, "batch must be 1–100000"},
		{"headroom", func(in *plan.Input) { in.Headroom = 2 }, "--headroom must be 0–1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ok
			tc.change(&in)
			_, err := plan.Make(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := plan.Make(ok); err != nil {
		t.Fatalf("valid input: %v", err)
	}
}
