package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/plan"
	"github.com/rushline/rushline/simulator/scenario"
)

// smallCrowd is a scenario file whose event sets seats and window.
const smallCrowd = `
name: small
seed: 3
event:
  create: {seats: 300, admit_batch: 50, capacity: 100, active_ttl_s: 60}
phases:
  - {name: rush, arrival: spike, users: 200, over: 2s}
bots:
  - {name: fan, wait: sse, think: 4s, patience: {dist: constant, value: 2m}}
`

// MustScenarioFile writes doc to a scenario file and returns its path.
func MustScenarioFile(tb testing.TB, doc string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "crowd.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestOptionsResolve(t *testing.T) {
	file := MustScenarioFile(t, smallCrowd)
	noBench := t.TempDir()
	fileThink := scenario.Dist{Kind: scenario.DistConstant, Value: scenario.Duration(4 * time.Second)}
	filePatience := scenario.Dist{Kind: scenario.DistConstant, Value: scenario.Duration(2 * time.Minute)}
	lognormal := scenario.Dist{Kind: scenario.DistLognormal, Median: scenario.Duration(time.Minute),
		P90: scenario.Duration(3 * time.Minute)}
	for _, tc := range []struct {
		name     string
		edit     func(*plan.Options)
		scName   string
		users    int
		event    plan.Event
		think    scenario.Dist
		patience scenario.Dist
		source   string
	}{
		// A flag-described crowd gets the default think time, no abandoning,
		// unlimited seats, the default window and, without bench files, the
		// built-in rates.
		{"shape defaults", func(o *plan.Options) { o.Shape.Total = 100 }, "crowd", 100,
			plan.Event{Window: plan.DefaultWindow}, lognormal, scenario.Dist{}, plan.DefaultRates.Source},
		// A Shape takes the abandon rate and think time as given.
		{"shape assumptions", func(o *plan.Options) {
			o.Shape.Total, o.Abandon, o.Think, o.ThinkP90 = 50, 0.5, 30*time.Second, 30*time.Second
		}, "crowd", 50, plan.Event{Window: plan.DefaultWindow},
			scenario.Dist{Kind: scenario.DistConstant, Value: scenario.Duration(30 * time.Second)},
			scenario.Dist{Kind: scenario.DistExponential, Mean: scenario.Duration(2 * time.Minute)}, plan.DefaultRates.Source},
		// A scenario file's event gives seats and window; its bots keep theirs.
		{"file event", func(o *plan.Options) { o.Scenario = file }, "small", 200,
			plan.Event{Seats: 300, Window: time.Minute}, fileThink, filePatience, plan.DefaultRates.Source},
		// Options beat the scenario's event.
		{"options beat file", func(o *plan.Options) { o.Scenario, o.Seats, o.Window = file, 0, 2*time.Minute }, "small", 200,
			plan.Event{Window: 2 * time.Minute}, fileThink, filePatience, plan.DefaultRates.Source},
		// SetThink and SetAbandon replace the bots' think time and patience.
		{"file overrides", func(o *plan.Options) { o.Scenario, o.SetThink, o.SetAbandon, o.Abandon = file, true, true, 0 },
			"small", 200, plan.Event{Seats: 300, Window: time.Minute}, lognormal, scenario.Dist{}, plan.DefaultRates.Source},
		// An explicit bench file is read.
		{"bench file", func(o *plan.Options) {
			o.Shape.Total, o.Bench = 10, filepath.Join("testdata", "bench", "bench.json")
		}, "crowd", 10, plan.Event{Window: plan.DefaultWindow}, lognormal, scenario.Dist{}, "bench.json (host fixture)"},
		// Without one, the newest in BenchDir.
		{"bench dir", func(o *plan.Options) { o.Shape.Total, o.BenchDir = 10, filepath.Join("testdata", "bench") },
			"crowd", 10, plan.Event{Window: plan.DefaultWindow}, lognormal, scenario.Dist{}, "bench.json (host fixture)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := plan.DefaultOptions()
			o.Limit, o.BenchDir = 10, noBench
			tc.edit(&o)
			sc, in, err := o.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if in.Name != tc.scName || len(in.Crowd.Users) != tc.users || in.Event != tc.event || in.Limit != 10 {
				t.Errorf("input %q, %d users, %+v, limit %g; want %q, %d, %+v, 10", in.Name, len(in.Crowd.Users), in.Event,
					in.Limit, tc.scName, tc.users, tc.event)
			}
			if in.Rates.Source != tc.source {
				t.Errorf("rates from %q, want %q", in.Rates.Source, tc.source)
			}
			for _, b := range sc.Bots {
				if b.Think != tc.think || b.Patience != tc.patience {
					t.Errorf("bot %s: think %+v, patience %+v; want %+v, %+v", b.Name, b.Think, b.Patience, tc.think, tc.patience)
				}
			}
		})
	}
}

func TestOptionsResolveErrors(t *testing.T) {
	file := MustScenarioFile(t, smallCrowd)
	for _, tc := range []struct {
		name string
		edit func(*plan.Options)
		want string
	}{
		// Less than a MiB per server.
		{"server memory", func(o *plan.Options) { o.ServerMemory = 1000 }, "--server-memory-mb must be >= 1"},
		// A p90 below the median is refused for a file's bots too.
		{"file think", func(o *plan.Options) { o.Scenario, o.SetThink, o.ThinkP90 = file, true, time.Second },
			"--think-p90 (1s) must be >= --think (1m0s)"},
		// More than everyone leaves each minute.
		{"file abandon", func(o *plan.Options) { o.Scenario, o.SetAbandon, o.Abandon = file, true, 2 }, "--abandon must be 0–1"},
		// A Shape needs a crowd.
		{"no crowd", func(o *plan.Options) {}, "--total must be 1–"},
		// The scenario file is not there.
		{"missing file", func(o *plan.Options) { o.Scenario = "nope.yaml" }, "nope.yaml"},
		// Nor is the bench file.
		{"missing bench", func(o *plan.Options) { o.Shape.Total, o.Bench = 10, "nope.json" }, "no such file"},
		// More buyers than admitted users.
		{"bad conversion", func(o *plan.Options) { o.Shape.Total, o.Conversion = 10, 2 }, "conversion must be 0–1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := plan.DefaultOptions()
			o.Limit = 10
			tc.edit(&o)
			if _, _, err := o.Resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
