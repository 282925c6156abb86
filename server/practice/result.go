package practice

import (
	"math"
	"slices"

	"github.com/rushline/rushline/server/practice/record"
)

// Outcomes of the person's attempt (API "practice result").
const (
	OutcomeBought            = record.OutcomeBought
	OutcomeSoldOut           = record.OutcomeSoldOut
	OutcomeExpired           = record.OutcomeExpired
	OutcomeLeft              = record.OutcomeLeft
	OutcomeNotJoined         = record.OutcomeNotJoined
	OutcomeWaitingWhenClosed = record.OutcomeWaitingWhenClosed
)

// You is the person's part of a result (record.You).
type You = record.You

// Record is one finished race as the database keeps it (record.Record).
type Record = record.Record

// Percentiles of one figure over the bots, in milliseconds.
type Percentiles struct {
	P10 int64 `json:"p10"`
	P25 int64 `json:"p25"`
	P50 int64 `json:"p50"`
	P75 int64 `json:"p75"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
}

// BotStats is the bots' distribution a person's figures are set against.
type BotStats struct {
	Reaction Percentiles `json:"reaction_ms"`
	// ReactionSamples are up to MaxSamples reaction times, sorted, evenly
	// picked from all of them: enough to draw the distribution.
	ReactionSamples []int64          `json:"reaction_samples_ms"`
	Wait            Percentiles      `json:"wait_ms"`
	Bought          int64            `json:"bought"`
	Outcomes        map[string]int64 `json:"outcomes"`
}

// MaxSamples bounds BotStats.ReactionSamples.
const MaxSamples = 500

// Result is a finished race: the record plus the bots' distribution (nil
// when the race is only known from the database).
type Result struct {
	Record
	BotStats *BotStats
}

// percentiles summarises sorted ms by the nearest-rank method.
func percentiles(sorted []int64) Percentiles {
	at := func(q float64) int64 {
		if len(sorted) == 0 {
			return 0
		}
		k := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1
		return sorted[min(max(k, 0), len(sorted)-1)]
	}
	return Percentiles{P10: at(0.10), P25: at(0.25), P50: at(0.50), P75: at(0.75), P90: at(0.90), P99: at(0.99)}
}

// samples picks up to n values evenly from sorted, first and last included.
func samples(sorted []int64, n int) []int64 {
	if len(sorted) <= n {
		return slices.Clone(sorted)
	}
	out := make([]int64, n)
	for i := range n {
		out[i] = sorted[i*(len(sorted)-1)/(n-1)]
	}
	return out
}

// slowerShare is the whole percentage of values in sorted greater than v.
func slowerShare(sorted []int64, v int64) int {
	if len(sorted) == 0 {
		return 0
	}
	i, _ := slices.BinarySearch(sorted, v+1)
	return int((len(sorted) - i) * 100 / len(sorted))
}
