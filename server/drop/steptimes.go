package drop

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// The crowd's step times are kept as histograms, one per order step and one
// for the total from admission to purchase, of the virtual users that
// bought: a few hundred counters per drop, whatever its crowd. A bucket
// spans a factor of histGrowth, so a quantile read from it is within 2% of
// the sample's.
const (
	histGrowth = 1.04
	// StepTotal names the histogram of the whole time from admission to
	// the purchase.
	StepTotal = "total"
)

var logGrowth = math.Log(histGrowth)

// bucket is the histogram bucket of d.
func bucket(d time.Duration) int {
	return int(math.Log1p(float64(max(d.Milliseconds(), 0))) / logGrowth)
}

// bucketMS is the middle (geometrically) of bucket b, in milliseconds.
func bucketMS(b int) int64 {
	return int64(math.Round(math.Expm1((float64(b) + 0.5) * logGrowth)))
}

// histField is the field of step's bucket b in a drop's histograms.
func histField(step string, b int) string { return step + ":" + strconv.Itoa(b) }

// StepQuantiles is the crowd's time at one order step, or from admission to
// purchase (step "total"), over the N virtual users that bought.
type StepQuantiles struct {
	Step string `json:"step"`
	P50  int64  `json:"p50_ms"`
	P90  int64  `json:"p90_ms"`
	N    int64  `json:"n"`
}

// stepQuantiles reads the crowd's quantiles per step of flow, then the
// total, from a drop's histogram counts (field → count); nil when nobody
// bought yet.
func stepQuantiles(flow []string, counts map[string]int64) []StepQuantiles {
	hist := map[string]map[int]int64{}
	for f, n := range counts {
		step, b, ok := strings.Cut(f, ":")
		i, err := strconv.Atoi(b)
		if !ok || err != nil || n <= 0 {
			continue
		}
		if hist[step] == nil {
			hist[step] = map[int]int64{}
		}
		hist[step][i] += n
	}
	if len(hist[StepTotal]) == 0 {
		return nil
	}
	out := make([]StepQuantiles, 0, len(flow)+1)
	for _, step := range append(slices.Clone(flow), StepTotal) {
		h := hist[step]
		var n int64
		bs := make([]int, 0, len(h))
		for b, c := range h {
			bs = append(bs, b)
			n += c
		}
		slices.Sort(bs)
		q := StepQuantiles{Step: step, N: n}
		if n > 0 {
			q.P50, q.P90 = rankMS(bs, h, n, 0.5), rankMS(bs, h, n, 0.9)
		}
		out = append(out, q)
	}
	return out
}

// rankMS is the q-quantile (nearest rank) of a histogram of n samples whose
// buckets bs are sorted.
func rankMS(bs []int, h map[int]int64, n int64, q float64) int64 {
	want := max(int64(math.Ceil(q*float64(n))), 1)
	var seen int64
	for _, b := range bs {
		if seen += h[b]; seen >= want {
			return bucketMS(b)
		}
	}
	return bucketMS(bs[len(bs)-1])
}

// countSteps adds a buyer's step times (in flow's order) and their total to
// counts.
func countSteps(counts map[string]int64, flow []string, steps []time.Duration) {
	var total time.Duration
	for i, d := range steps {
		counts[histField(flow[i], bucket(d))]++
		total += d
	}
	counts[histField(StepTotal, bucket(total))]++
}

// CrowdSteps returns the crowd's time per order step of the drop of
// eventID, public or solo, and from admission to purchase (the last,
// "total"), over its virtual users that bought so far; ok is false for an
// event that is no drop's or whose scenario has no steps.
func (s *Service) CrowdSteps(ctx context.Context, eventID string) (qs []StepQuantiles, ok bool, err error) {
	id, isDrop := IDOfEvent(eventID)
	if !isDrop {
		return nil, false, nil
	}
	d, err := s.store.Drop(ctx, id)
	if queue.ErrorCode(err) == queue.CodeDropNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	qs, err = s.crowdSteps(ctx, d)
	return qs, err == nil && qs != nil, err
}

// crowdSteps is CrowdSteps for d: from its final figures once finished,
// else from the histograms in Redis; nil for a scenario without steps.
func (s *Service) crowdSteps(ctx context.Context, d Drop) ([]StepQuantiles, error) {
	if d.Final != nil && (d.Final.CrowdSteps != nil || !d.Held) {
		return d.Final.CrowdSteps, nil
	}
	p, err := s.plan(d)
	if err != nil || len(p.Flow()) == 0 {
		return nil, err
	}
	counts, err := s.eng.CrowdTimes(ctx, d.Event)
	if err != nil {
		return nil, err
	}
	qs := stepQuantiles(p.Flow(), counts)
	if qs == nil {
		qs = []StepQuantiles{}
	}
	return qs, nil
}
