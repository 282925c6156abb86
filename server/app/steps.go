package app

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/steps"
	"github.com/rushline/rushline/simulator/scenario"
)

// orderSteps runs the order steps of drops whose scenario names some: the
// drops' own scenarios (scs, or the embedded ones).
func orderSteps(eng *queue.Engine, rdb redis.UniversalClient, drops *drop.Service, scs []*scenario.Scenario) (*steps.Service, error) {
	if len(scs) == 0 {
		all, err := scenarios.All()
		if err != nil {
			return nil, err
		}
		scs = all
	}
	return steps.New(eng, rdb, steps.ScenarioFlows(scs, func(ctx context.Context, eventID string) (string, bool, error) {
		id, ok := drop.IDOfEvent(eventID)
		if !ok {
			return "", false, nil
		}
		v, err := drops.Get(ctx, id)
		if queue.ErrorCode(err) == queue.CodeDropNotFound {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return v.Scenario, true, nil
	})), nil
}
