package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/internal/digits"
)

// Formatting shared by the text and HTML reports. Fixed precision throughout,
// so the same report always renders the same bytes.

func fmtDur(d time.Duration) string {
	a := d
	if a < 0 {
		a = -a
	}
	switch {
	case d == 0:
		return "0s"
	case a < time.Microsecond:
		return fmt.Sprintf("%dns", d)
	case a < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case a < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case a < 100*time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
	return d.Round(100 * time.Millisecond).String()
}

func fmtSeconds(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(s) > 9e9 {
		return strconv.FormatFloat(s, 'g', 6, 64) + "s"
	}
	return fmtDur(time.Duration(math.Round(s * 1e9)))
}

func fmtCount[T ~int | ~int64 | ~uint64](n T) string { return digits.Grouped(n) }

func fmtPct(f float64) string { return fmt.Sprintf("%.3f%%", f*100) }

func fmtRate(f float64) string { return fmt.Sprintf("%.2f", f) }

func fmtTau(f float64) string { return fmt.Sprintf("%.4f", f) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// fmtValue writes v in the unit of a threshold metric.
func fmtValue(unit string, v float64) string {
	switch unit {
	case "seconds":
		return fmtSeconds(v)
	case "fraction":
		return fmtPct(v)
	case "count":
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return fmtCount(int64(v))
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case "number":
		return fmtTau(v)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// fmtCodes lists status codes by number: "200×18 409×2".
func fmtCodes(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, errA := strconv.Atoi(a)
		y, errB := strconv.Atoi(b)
		if errA == nil && errB == nil && x != y {
			return cmp.Compare(x, y)
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "×" + fmtCount(m[k])
	}
	return strings.Join(parts, " ")
}

// fmtErrors lists errors, the most frequent first: "SOLD_OUT×2 timeout×1".
func fmtErrors(m map[string]int64) string {
	if len(m) == 0 {
		return "—"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return cmp.Compare(m[b], m[a])
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "×" + fmtCount(m[k])
	}
	return strings.Join(parts, " ")
}

// outcomes lists the outcomes to show as columns: the known ones, then any others by name.
func outcomes(b Bots) []string {
	out := slices.Clone(outcomeOrder)
	var extra []string
	for o := range b.Outcomes {
		if !slices.Contains(out, o) {
			extra = append(extra, o)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// headline is the verdict in words.
func (r *Report) headline() string {
	n := len(r.Thresholds)
	failed := 0
	for _, t := range r.Thresholds {
		if !t.Pass {
			failed++
		}
	}
	var h string
	switch {
	case n == 0:
		h = "PASS (no thresholds)"
	case failed == 0:
		h = fmt.Sprintf("PASS: %d of %d thresholds passed", n, n)
	default:
		h = fmt.Sprintf("FAIL: %d of %d thresholds failed", failed, n)
	}
	if r.Summary.Generator.Saturated {
		h += "; LOAD GENERATOR SATURATED (it fell behind its schedule: see arrivals)"
	}
	return h
}

// generatorFigures say whether the generator kept its schedule.
func (r *Report) generatorFigures() []figure {
	g := &r.Summary.Generator
	if g.Planned == 0 && g.Arrived == 0 {
		return nil
	}
	kept := fmt.Sprintf("kept its schedule (p99 lag within %s)", fmtDur(g.Tolerance))
	if g.Saturated {
		kept = fmt.Sprintf("SATURATED: p99 lag %s over the %s tolerance, %s of %s planned arrivals started",
			fmtDur(g.Lag.P99), fmtDur(g.Tolerance), fmtCount(g.Arrived), fmtCount(g.Planned))
	}
	out := []figure{
		{"arrivals", fmt.Sprintf("planned %s, started %s, %s later than %s, %s held back for a connection slot",
			fmtCount(g.Planned), fmtCount(g.Arrived), fmtCount(g.Late), fmtDur(g.Tolerance), fmtCount(g.HeldBack))},
		{"arrival lag", distText(g.Lag, "p50", "p90", "p99", "max")},
		{"load generator", kept},
	}
	for _, l := range g.LateStarts {
		out = append(out, figure{"late start", fmt.Sprintf("shard %s started %s after --start-at", l.Shard, fmtDur(l.Late))})
	}
	return out
}

func distText(d Dist, ps ...string) string {
	if d.Count == 0 {
		return "none"
	}
	parts := []string{"n=" + fmtCount(d.Count)}
	for _, p := range ps {
		parts = append(parts, p+" "+fmtDur(d.At(p)))
	}
	return strings.Join(parts, "  ")
}

func thresholdMark(t ThresholdResult) string {
	if t.Pass {
		return "✓"
	}
	return "✗"
}

func thresholdMeasured(t ThresholdResult) string {
	if !t.Measured {
		return "not measured"
	}
	return fmtValue(t.Unit, t.Value)
}

// figure is one row of the waiting-room table.
type figure struct{ Name, Value string }

func (r *Report) figures() []figure {
	s := &r.Summary
	dist := distText
	step := func(name string) Dist {
		for _, st := range s.Steps {
			if st.Step == name {
				return st.Latency
			}
		}
		return Dist{}
	}
	ratio := func(f float64, num, den int64, what string) string {
		if den == 0 {
			return "none"
		}
		return fmt.Sprintf("%s (%s of %s %s)", fmtPct(f), fmtCount(num), fmtCount(den), what)
	}
	tau := "undefined"
	if s.FIFO.KendallTau != nil {
		tau = fmtTau(*s.FIFO.KendallTau)
	}
	return append(r.generatorFigures(), []figure{
		{"joined", fmtCount(s.Joined)},
		{"admitted", fmt.Sprintf("%s (event admitted_total %s)", fmtCount(s.Admitted), fmtCount(s.Event.AdmittedTotal))},
		{"orders", fmtCount(s.Orders)},
		{"seats won", fmt.Sprintf("VIRTUAL %s, ACTUAL %s (event sold %s, %s left)",
			fmtCount(s.SeatsVirtual), fmtCount(s.SeatsActual), fmtCount(s.Event.Sold), fmtCount(s.Event.SeatsLeft))},
		{"promotion latency", dist(s.Promotion, "p50", "p90", "p95", "p99", "max")},
		{"  when polling", dist(s.PromotionPoll, "p50", "p90", "p95", "p99", "max")},
		{"wait in line", dist(s.Wait, "p50", "p90", "p95", "p99", "max")},
		{"rank latency", dist(step(StepStatus), "p50", "p95", "p99", "max")},
		{"join latency", dist(step(StepJoin), "p50", "p95", "p99", "max")},
		{"reaction", dist(s.Reaction, "p50", "p90", "p99", "max")},
		{"FIFO inversions", fmt.Sprintf("%s of %s pairs (%s admitted bots compared)",
			fmtCount(s.FIFO.Inversions), fmtCount(s.FIFO.Pairs), fmtCount(s.FIFO.Admitted))},
		{"Kendall tau-b", tau},
		{"abandon rate", ratio(s.AbandonRate, s.Abandoned, s.Joined, "joined")},
		{"error rate", ratio(s.ErrorRate, s.Unexpected, s.Requests, "calls")},
	}...)
}
