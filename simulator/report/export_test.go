package report

// CountFIFO exposes the O(n log n) FIFO count for tests: inversions of adm
// against seq, and Kendall's tau-b (ok false when undefined).
func CountFIFO(seq, adm []int64) (inversions int64, tau float64, ok bool) {
	ps := make([]fifoPair, len(seq))
	for i := range seq {
		ps[i] = fifoPair{seq[i], adm[i]}
	}
	c := countFIFO(ps)
	tau, ok = c.tauB()
	return c.inversions, tau, ok
}
