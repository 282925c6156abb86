package app

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/steps"
	"github.com/rushline/rushline/simulator/scenario"
)

// orderSteps runs the order steps of drops whose scenario names some: the
// drops' own scenarios (scs, or the embedded ones); and the drills, the
// press drill's results kept in presses.
func orderSteps(eng *queue.Engine, rdb redis.UniversalClient, drops *drop.Service, scs []*scenario.Scenario,
	presses steps.PressStore) (*steps.Service, error) {
	if len(scs) == 0 {
		all, err := scenarios.All()
		if err != nil {
			return nil, err
		}
		scs = all
	}
	// dropOf is the drop of an event; ok is false for an event that is none's.
	dropOf := func(ctx context.Context, eventID string) (drop.View, bool, error) {
		id, ok := drop.IDOfEvent(eventID)
		if !ok {
			return drop.View{}, false, nil
		}
		v, err := drops.Get(ctx, id)
		if queue.ErrorCode(err) == queue.CodeDropNotFound {
			return drop.View{}, false, nil
		}
		return v, err == nil, err
	}
	flows := steps.ScenarioFlows(scs, func(ctx context.Context, eventID string) (string, bool, error) {
		v, ok, err := dropOf(ctx, eventID)
		return v.Scenario, ok, err
	})
	// The crowd's times per step, measured over its users that bought; a
	// solo race's too (its steps are only shown to the token's holder).
	crowd := func(ctx context.Context, eventID string) (map[string]steps.CrowdTime, bool, error) {
		qs, ok, err := drops.CrowdSteps(ctx, eventID)
		if !ok || err != nil {
			return nil, false, err
		}
		out := make(map[string]steps.CrowdTime, len(qs))
		for _, q := range qs {
			out[q.Step] = steps.CrowdTime{P50: time.Duration(q.P50) * time.Millisecond, P90: time.Duration(q.P90) * time.Millisecond, N: q.N}
		}
		return out, true, nil
	}
	return steps.New(eng, rdb, flows, steps.WithCrowd(crowd), steps.WithPresses(presses)), nil
}
