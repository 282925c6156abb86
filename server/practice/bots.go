package practice

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

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

// recordsPerRead is how many records one read of a race's event takes.
const recordsPerRead = 1000

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

// Ends of a bot's attempt in a tally.
const (
	endNone uint8 = iota
	endBought
	endExpired
	endLeft
)

var endOutcome = [...]string{endBought: OutcomeBought, endExpired: OutcomeExpired, endLeft: OutcomeLeft}

// tally follows one race's bots through its event's records, from where
// it last read, so that a running race's figures cost only the records
// since the last call. Its memory is a byte per bot and a wait per
// admitted bot, while the race runs; a finished race keeps its figures
// alone. Guarded by mu: one caller reads and counts at a time.
type tally struct {
	mu    sync.Mutex
	after string
	// ended holds each bot's end, by virtual user index.
	ended []uint8
	// waits are the admitted bots' times in line, in milliseconds.
	waits []int64
	// final is the finished race's figures, which never change.
	final *BotStats
}

// tally returns the tally of race d, made on first use.
func (s *Service) tally(d drop.Drop) *tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tallies[d.Event]
	if !ok {
		if len(s.tallies) >= tallyCache {
			clear(s.tallies)
		}
		t = &tally{after: "0", ended: make([]uint8, d.Crowd)}
		s.tallies[d.Event] = t
	}
	return t
}

// read applies race d's records after the tally's last read: the bots'
// admissions (their waits, from their planned join times) and ends.
func (t *tally) read(ctx context.Context, eng *queue.Engine, d drop.Drop, plan *drop.Plan) error {
	prefix := d.VirtualPrefix()
	for {
		recs, err := eng.Records(ctx, d.Event, t.after, recordsPerRead)
		if err != nil {
			return err
		}
		for _, r := range recs {
			t.after = r.ID
			idx, ok := strings.CutPrefix(r.UserID, prefix)
			k, err := strconv.Atoi(idx)
			if !ok || err != nil || k < 0 || k >= len(t.ended) {
				continue
			}
			switch r.Kind {
			case queue.RecordAdmitted:
				joined := d.OpensAt.Add(plan.Offset(k))
				t.waits = append(t.waits, max(r.At.Sub(joined), 0).Milliseconds())
			case queue.RecordDone:
				t.ended[k] = endBought
			case queue.RecordExpired:
				t.ended[k] = endExpired
			case queue.RecordLeft:
				t.ended[k] = endLeft
			}
		}
		if len(recs) < recordsPerRead {
			return nil
		}
	}
}

// stats are the figures of the first n bots to join (virtual users join
// in index order), rest the outcome of those whose attempt has not ended.
func (t *tally) stats(plan *drop.Plan, n int, rest string) *BotStats {
	st := &BotStats{ReactionSamples: []int64{}, Outcomes: map[string]int64{}}
	if n > 0 {
		// Index k is the reaction's rank.
		st.Reaction = percentiles(func(q float64) int64 { return plan.Offset(rank(q, n)).Milliseconds() })
	}
	for i := range min(n, MaxSamples) {
		k := i
		if n > MaxSamples {
			k = i * (n - 1) / (MaxSamples - 1)
		}
		st.ReactionSamples = append(st.ReactionSamples, plan.Offset(k).Milliseconds())
	}
	var ended int64
	for _, e := range t.ended {
		if e != endNone {
			st.Outcomes[endOutcome[e]]++
			ended++
		}
	}
	st.Bought = st.Outcomes[OutcomeBought]
	if left := int64(n) - ended; left > 0 {
		st.Outcomes[rest] = left
	}
	if len(t.waits) > 0 {
		// Sorted in place: the next call's appends leave it nearly sorted.
		slices.Sort(t.waits)
		st.Wait = percentiles(func(q float64) int64 { return t.waits[rank(q, len(t.waits))] })
	}
	return st
}

// crowdSide is the bots' side of a race: so far while it runs.
type crowdSide struct {
	joined, sold int64
	bots         *BotStats
}

// crowd reads race d's bots' side: reactions from the crowd's plan (its
// virtual users join at their planned times), waits and outcomes from the
// event's records, joins and sales from the drop. A running race's bots
// that have not ended count as waiting, or sold out once every seat is
// gone; a finished race's as sold out or waiting when it closed. Without
// the event (a finished race forgotten) the bots' figures are nil.
func (s *Service) crowd(ctx context.Context, d drop.Drop) (crowdSide, error) {
	if f := d.Final; f != nil && !d.Held {
		return crowdSide{joined: f.CrowdJoined, sold: f.Sold}, nil
	}
	t := s.tally(d)
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := d.Final; f != nil && t.final != nil {
		return crowdSide{joined: f.CrowdJoined, sold: f.Sold, bots: t.final}, nil
	}
	plan, err := s.drops.Plan(d)
	if err != nil {
		return crowdSide{}, err
	}
	// The records first, then the joins: every bot that ended has joined.
	if err := t.read(ctx, s.eng, d, plan); err != nil {
		return crowdSide{}, err
	}
	if f := d.Final; f != nil {
		rest := OutcomeWaitingWhenClosed
		if f.SoldOut {
			rest = OutcomeSoldOut
		}
		t.final = t.stats(plan, int(f.CrowdJoined), rest)
		t.ended, t.waits = nil, nil
		return crowdSide{joined: f.CrowdJoined, sold: f.Sold, bots: t.final}, nil
	}
	st, err := s.drops.SoloStats(ctx, d)
	if err != nil {
		return crowdSide{}, err
	}
	rest := OutcomeWaiting
	if st.SeatsLeft <= 0 {
		rest = OutcomeSoldOut
	}
	return crowdSide{joined: st.CrowdJoined, sold: st.Sold, bots: t.stats(plan, int(st.CrowdJoined), rest)}, nil
}
