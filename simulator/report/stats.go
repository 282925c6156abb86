package report

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// fifoPair is one admitted bot: its join order x (Seq) and admission order y.
type fifoPair struct{ x, y int64 }

// fifoCounts are the pair counts Kendall's tau-b needs.
type fifoCounts struct {
	n      int64 // bots
	pairs  int64 // n(n−1)/2
	tiesX  int64 // pairs with equal x
	tiesY  int64 // pairs with equal y
	tiesXY int64 // pairs with equal x and equal y
	// inversions are the pairs with x_i < x_j but y_i > y_j.
	inversions int64
}

// tauB is Kendall's tau-b; ok is false when it is undefined.
func (c fifoCounts) tauB() (float64, bool) {
	den := math.Sqrt(float64(c.pairs-c.tiesX) * float64(c.pairs-c.tiesY))
	if den == 0 || math.IsNaN(den) {
		return 0, false
	}
	// Concordant − discordant: the pairs tied in neither, less twice the discordant.
	num := float64(c.pairs-c.tiesX-c.tiesY+c.tiesXY) - 2*float64(c.inversions)
	return max(-1, min(1, num/den)), true
}

// countFIFO counts inversions and ties in O(n log n) (Knight's algorithm):
// sort by (x, y), then merge-sort by y counting the moves past larger ys.
// It reorders ps.
func countFIFO(ps []fifoPair) fifoCounts {
	n := int64(len(ps))
	c := fifoCounts{n: n, pairs: n * (n - 1) / 2}
	if n < 2 {
		return c
	}
	slices.SortFunc(ps, func(a, b fifoPair) int {
		if a.x != b.x {
			return cmp.Compare(a.x, b.x)
		}
		return cmp.Compare(a.y, b.y)
	})
	c.tiesX = tiePairs(len(ps), func(i int) bool { return ps[i].x == ps[i-1].x })
	c.tiesXY = tiePairs(len(ps), func(i int) bool { return ps[i] == ps[i-1] })
	ys := make([]int64, len(ps))
	for i, p := range ps {
		ys[i] = p.y
	}
	c.inversions = mergeCount(ys)
	c.tiesY = tiePairs(len(ys), func(i int) bool { return ys[i] == ys[i-1] })
	return c
}

// tiePairs sums t(t−1)/2 over the runs of equal neighbours of a sorted sequence.
func tiePairs(n int, same func(i int) bool) int64 {
	var total, run int64 = 0, 1
	for i := 1; i <= n; i++ {
		if i < n && same(i) {
			run++
			continue
		}
		total += run * (run - 1) / 2
		run = 1
	}
	return total
}

// mergeCount sorts a (bottom-up merge sort) and returns the number of pairs
// i < j with a[i] > a[j]. Equal values never count.
func mergeCount(a []int64) int64 {
	var inv int64
	buf := make([]int64, len(a))
	src, dst := a, buf
	for width := 1; width < len(a); width *= 2 {
		for lo := 0; lo < len(a); lo += 2 * width {
			mid, hi := min(lo+width, len(a)), min(lo+2*width, len(a))
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if src[j] < src[i] {
					inv += int64(mid - i)
					dst[k] = src[j]
					j++
				} else {
					dst[k] = src[i]
					i++
				}
				k++
			}
			k += copy(dst[k:], src[i:mid])
			copy(dst[k:], src[j:hi])
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
	return inv
}

// histogram buckets h into at most about 40 bars of a round width (1, 2 or
// 5 × 10ⁿ, at least 1 ms) from 0; the last bar holds the largest value.
func histogram(h *Histogram) []Bucket {
	if h.Count == 0 {
		return []Bucket{}
	}
	width := roundWidth(h.Max / 40)
	out := make([]Bucket, int(h.Max/width)+1)
	for i := range out {
		out[i] = Bucket{From: time.Duration(i) * width, To: time.Duration(i+1) * width}
	}
	for _, k := range h.buckets() {
		out[h.mean(k)/width].Count += h.b[k].n
	}
	return out
}

func roundWidth(atLeast time.Duration) time.Duration {
	for base := time.Millisecond; ; base *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*base >= atLeast || base > time.Duration(math.MaxInt64/100) {
				return m * base
			}
		}
	}
}
