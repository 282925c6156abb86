package practice

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
)

// Percentiles of one figure over the bots, in milliseconds.
type Percentiles struct {
	P10 int64 `json:"p10"`
	P25 int64 `json:"p25"`
	P50 int64 `json:"p50"`
	P75 int64 `json:"p75"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
}

// quantiles are the Percentiles' ranks.
var quantiles = [...]float64{0.10, 0.25, 0.50, 0.75, 0.90, 0.99}

func percentiles(at func(q float64) int64) Percentiles {
	return Percentiles{P10: at(quantiles[0]), P25: at(quantiles[1]), P50: at(quantiles[2]), P75: at(quantiles[3]),
		P90: at(quantiles[4]), P99: at(quantiles[5])}
}

// rank is the 0-based index of the q-quantile of n sorted values, by the
// nearest-rank method (n > 0).
func rank(q float64, n int) int {
	return min(max(int(math.Ceil(q*float64(n)-1e-9))-1, 0), n-1)
}

// BotStats is the crowd's distribution a person's figures are set against.
type BotStats struct {
	Reaction Percentiles `json:"reaction_ms"`
	// ReactionSamples are up to MaxSamples reaction times, sorted, evenly
	// picked from all of them: enough to draw the distribution.
	ReactionSamples []int64          `json:"reaction_samples_ms"`
	Wait            Percentiles      `json:"wait_ms"`
	Bought          int64            `json:"bought"`
	Outcomes        map[string]int64 `json:"outcomes"`
}

// botStats computes the finished race d's bot figures: reactions from the
// crowd's plan (its virtual users join at their planned times), waits and
// outcomes from the event's records. Cached: they never change.
func (s *Service) botStats(ctx context.Context, d drop.Drop) (*BotStats, error) {
	s.mu.Lock()
	st, ok := s.stats[d.Event]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	plan, err := s.drops.Plan(d)
	if err != nil {
		return nil, err
	}
	n := int(d.Final.CrowdJoined)
	st = &BotStats{ReactionSamples: []int64{}, Outcomes: map[string]int64{}}
	if n > 0 {
		// Virtual users join in index order: index k is the reaction's rank.
		st.Reaction = percentiles(func(q float64) int64 { return plan.Offset(rank(q, n)).Milliseconds() })
	}
	for i := range min(n, MaxSamples) {
		k := i
		if n > MaxSamples {
			k = i * (n - 1) / (MaxSamples - 1)
		}
		st.ReactionSamples = append(st.ReactionSamples, plan.Offset(k).Milliseconds())
	}
	prefix := drop.VirtualPrefix(d.ID)
	ended := map[string]string{}
	admitted := map[string]bool{}
	var waits []int64
	for after := "0"; ; {
		recs, err := s.eng.Records(ctx, d.Event, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			after = r.ID
			k, err := strconv.Atoi(strings.TrimPrefix(r.UserID, prefix))
			if !strings.HasPrefix(r.UserID, prefix) || err != nil {
				continue
			}
			switch r.Kind {
			case queue.RecordAdmitted:
				admitted[r.UserID] = true
				joined := d.OpensAt.Add(plan.Offset(k))
				waits = append(waits, max(r.At.Sub(joined), 0).Milliseconds())
			case queue.RecordDone:
				ended[r.UserID] = OutcomeBought
				st.Bought++
			case queue.RecordExpired:
				ended[r.UserID] = OutcomeExpired
			case queue.RecordLeft:
				ended[r.UserID] = OutcomeLeft
			}
		}
		if len(recs) < 1000 {
			break
		}
	}
	for _, o := range ended {
		st.Outcomes[o]++
	}
	// The rest never bought: the seats ran out, or the race closed first.
	rest := OutcomeWaitingWhenClosed
	if d.Final.SoldOut {
		rest = OutcomeSoldOut
	}
	if left := int64(n - len(ended)); left > 0 {
		st.Outcomes[rest] = left
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		st.Wait = percentiles(func(q float64) int64 { return waits[rank(q, len(waits))] })
	}
	s.mu.Lock()
	if len(s.stats) >= statsCache {
		clear(s.stats)
	}
	s.stats[d.Event] = st
	s.mu.Unlock()
	return st, nil
}
