package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// subBits sets a Histogram's precision: 2^subBits buckets per power of two,
// so a bucket is at most 1/128 (0.8%) of its values wide; values below 256 ns
// are exact.
const subBits = 7

// Histogram is an HDR-style log-linear histogram of durations: exact count,
// sum, min and max, and per bucket a count and a sum, from which quantiles
// come within 0.8% (exact when a bucket holds one value, however often).
// Two histograms merge by adding, so a run's shards merge to exactly what one
// run would have recorded. The zero value is empty and ready to use. Not safe
// for concurrent use.
type Histogram struct {
	Count int64
	Sum   float64 // ns
	Min   time.Duration
	Max   time.Duration
	b     map[int32]bucket
}

// bucket is one bucket's count and the sum of its values (ns).
type bucket struct{ n, sum int64 }

// bucketOf is the bucket index of a non-negative value.
func bucketOf(v int64) int32 {
	if v < 2<<subBits {
		return int32(v)
	}
	shift := bits.Len64(uint64(v)) - subBits - 1
	return int32(shift<<subBits) + int32(v>>shift)
}

// bucketRange is the smallest and largest value of bucket i.
func bucketRange(i int32) (lo, hi int64) {
	if i < 2<<subBits {
		return int64(i), int64(i)
	}
	shift := int(i>>subBits) - 1
	m := int64(i) - int64(shift<<subBits)
	return m << shift, (m+1)<<shift - 1
}

// Add records one duration (a negative one as 0).
func (h *Histogram) Add(d time.Duration) {
	d = max(d, 0)
	if h.Count == 0 || d < h.Min {
		h.Min = d
	}
	if d > h.Max {
		h.Max = d
	}
	h.Count++
	h.Sum += float64(d)
	if h.b == nil {
		h.b = map[int32]bucket{}
	}
	k := bucketOf(int64(d))
	b := h.b[k]
	h.b[k] = bucket{b.n + 1, b.sum + int64(d)}
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count == 0 {
		return
	}
	if h.Count == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	h.Max = max(h.Max, o.Max)
	h.Count += o.Count
	h.Sum += o.Sum
	if h.b == nil {
		h.b = make(map[int32]bucket, len(o.b))
	}
	for i, ob := range o.b {
		b := h.b[i]
		h.b[i] = bucket{b.n + ob.n, b.sum + ob.sum}
	}
}

// buckets lists the non-empty buckets in value order.
func (h *Histogram) buckets() []int32 {
	ks := make([]int32, 0, len(h.b))
	for k := range h.b {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Quantile is the nearest-rank q-quantile (the smallest value with at least
// q·n values at or below it), as the mean of its bucket.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	switch {
	case q <= 0:
		return h.Min
	case q >= 1:
		return h.Max
	}
	// The slack keeps 0.95·100 (94.99999…) from rounding up to rank 96.
	rank := max(int64(math.Ceil(q*float64(h.Count)-1e-9)), 1)
	var seen int64
	for _, k := range h.buckets() {
		seen += h.b[k].n
		if seen >= rank {
			return h.mean(k)
		}
	}
	return h.Max
}

// mean is bucket k's mean value.
func (h *Histogram) mean(k int32) time.Duration {
	b := h.b[k]
	return time.Duration(math.Round(float64(b.sum) / float64(b.n)))
}

// CountAbove counts the values above d (by bucket: within 0.8% of d).
func (h *Histogram) CountAbove(d time.Duration) int64 {
	var n int64
	for k, b := range h.b {
		if lo, _ := bucketRange(k); time.Duration(lo) > d {
			n += b.n
		}
	}
	return n
}

// Dist summarises the histogram.
func (h *Histogram) Dist() Dist {
	if h.Count == 0 {
		return Dist{Curve: []Quantile{}}
	}
	d := Dist{Count: h.Count, Min: h.Min, Max: h.Max, Mean: time.Duration(math.Round(h.Sum / float64(h.Count))),
		P50: h.Quantile(.5), P90: h.Quantile(.9), P95: h.Quantile(.95), P99: h.Quantile(.99),
		Curve: make([]Quantile, len(CurveQuantiles))}
	for i, q := range CurveQuantiles {
		d.Curve[i] = Quantile{Q: q, Value: h.Quantile(q)}
	}
	return d
}

// histJSON is a Histogram on the wire: buckets as [index, count, sum]
// triples in index order.
type histJSON struct {
	Count   int64      `json:"n"`
	Sum     float64    `json:"sum_ns"`
	Min     int64      `json:"min_ns"`
	Max     int64      `json:"max_ns"`
	Buckets [][3]int64 `json:"buckets"`
}

// MarshalJSON writes the histogram compactly.
func (h Histogram) MarshalJSON() ([]byte, error) {
	j := histJSON{Count: h.Count, Sum: h.Sum, Min: int64(h.Min), Max: int64(h.Max), Buckets: [][3]int64{}}
	for _, k := range h.buckets() {
		j.Buckets = append(j.Buckets, [3]int64{int64(k), h.b[k].n, h.b[k].sum})
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote, checking the counts add up.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var j histJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*h = Histogram{Count: j.Count, Sum: j.Sum, Min: time.Duration(j.Min), Max: time.Duration(j.Max), b: map[int32]bucket{}}
	var n int64
	for _, p := range j.Buckets {
		if p[0] < 0 || p[0] > math.MaxInt32 || p[1] <= 0 {
			return fmt.Errorf("report: histogram bucket %v", p)
		}
		if lo, hi := bucketRange(int32(p[0])); p[2] < lo*p[1] || p[2] > hi*p[1] {
			return fmt.Errorf("report: histogram bucket %v: sum out of its range", p)
		}
		b := h.b[int32(p[0])]
		h.b[int32(p[0])] = bucket{b.n + p[1], b.sum + p[2]}
		n += p[1]
	}
	if n != h.Count {
		return fmt.Errorf("report: histogram buckets hold %d values, n says %d", n, h.Count)
	}
	return nil
}
