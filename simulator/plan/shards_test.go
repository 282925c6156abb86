package plan_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/plan"
)

func TestPlanShards(t *testing.T) {
	c := plan.LoadCapacity{StreamBots: 10_000, PollBots: 40_000, Arrivals: 5_000, StreamBytes: 20 << 10, PollBytes: 10 << 10}
	for _, tc := range []struct {
		name            string
		shape           plan.LoadShape
		shards, by, arr int
	}{
		// A million streaming users over 10 minutes: the bots decide.
		{"streams decide", plan.LoadShape{Users: 1_000_000, Over: 10 * time.Minute}, 100, 100, 1},
		// Polling users are four times cheaper.
		{"half polling", plan.LoadShape{Users: 1_000_000, PollShare: 0.5, Over: 10 * time.Minute}, 63, 63, 1},
		// A spike of 20,000/s needs 4 shards to start on time, its
		// 60,000 streams 6.
		{"spike", plan.LoadShape{Users: 60_000, Over: 3 * time.Second}, 6, 6, 4},
		// A faster peak than the bots: the arrival rate decides.
		{"arrivals decide", plan.LoadShape{Users: 20_000, Peak: 40_000}, 8, 2, 8},
		{"tiny", plan.LoadShape{Users: 10, Over: time.Minute}, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.PlanShards(tc.shape, c)
			if err != nil {
				t.Fatal(err)
			}
			if p.Shards != tc.shards || p.ByBots != tc.by || p.ByArrivals != tc.arr || p.PerShard*p.Shards < tc.shape.Users {
				t.Errorf("plan = %+v; want %d shards (%d by bots, %d by arrivals)", p, tc.shards, tc.by, tc.arr)
			}
		})
	}
	if _, err := plan.PlanShards(plan.LoadShape{Users: 0, Over: time.Second}, c); err == nil {
		t.Error("no users accepted")
	}
	p, _ := plan.PlanShards(plan.LoadShape{Users: 1_000_000, Over: 10 * time.Minute}, c)
	var b bytes.Buffer
	if err := p.WriteText(&b); err != nil || !strings.Contains(b.String(), "RUSHLINE_SHARDS=100") {
		t.Errorf("text:\n%s", b.String())
	}
}
