package bench

import (
	"fmt"
	"io"
	"strings"
)

// figure is one number of a result, named for comparison.
type figure struct {
	name  string
	value float64
	// lower marks figures where less is better (latencies, memory, errors).
	lower bool
}

// figures flattens a result into named numbers, in a stable order.
func figures(r *Result) []figure {
	var fs []figure
	add := func(name string, v float64, lower bool) { fs = append(fs, figure{name, v, lower}) }
	for _, x := range r.RedisBenchmark {
		p := fmt.Sprintf("redis-benchmark %s -P %d ", x.Name, x.Pipeline)
		add(p+"rps", x.RPS, false)
		add(p+"p50_ms", x.P50, true)
		add(p+"p99_ms", x.P99, true)
	}
	for _, x := range r.HTTP {
		p := fmt.Sprintf("http %s %s @%s ", x.Server, x.Op, SizeLabel(x.Waiting))
		add(p+"rps", x.RPS, false)
		add(p+"p50_ms", x.P50, true)
		add(p+"p99_ms", x.P99, true)
		add(p+"errors", float64(x.Errors), true)
	}
	for _, x := range r.Engine {
		p := fmt.Sprintf("engine %s @%s ", x.Op, SizeLabel(x.Waiting))
		add(p+"per_s", x.PerS, false)
		add(p+"redis_cpu_us", x.RedisCPU, true)
	}
	for _, x := range r.LineFloor {
		p := fmt.Sprintf("sorted-set floor @%s ", SizeLabel(x.Waiting))
		add(p+"join_redis_cpu_us", x.JoinCPU, true)
		add(p+"floor_redis_cpu_us", x.FloorCPU, true)
	}
	add("admission promotions_per_s", r.Admission.PromotionsPerS, false)
	add("push promotions_per_s", r.Push.PromotionsPerS, false)
	add("push p50_ms", r.Push.P50, true)
	add("push p99_ms", r.Push.P99, true)
	add("push server_rss_mb", r.Push.ServerRSSMB, true)
	add("memory redis_bytes_per_waiting", r.Memory.RedisBytesPerWaiting, true)
	add("memory server_rss_mb", r.Memory.ServerRSSMB, true)
	for _, x := range r.Ratios {
		add("ratio "+x.Name, x.Value, x.LowerIsBetter)
	}
	return fs
}

// Compare writes a Markdown table of every figure in old and new with its
// change, flagging a figure that got worse by more than threshold percent
// (an error count flags on any rise). It returns how many regressed.
func Compare(w io.Writer, old, new *Result, threshold float64) (int, error) {
	oldBy := map[string]float64{}
	for _, f := range figures(old) {
		oldBy[f.name] = f.value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# rushline bench: %s (%s) → %s (%s)\n\n", old.BaseName(), old.Date.UTC().Format("15:04"),
		new.BaseName(), new.Date.UTC().Format("15:04"))
	fmt.Fprintf(&b, "Regression: worse by more than %s%%.\n\n| figure | old | new | change | |\n|---|---:|---:|---:|---|\n", num(threshold))
	regressions := 0
	seen := map[string]bool{}
	for _, f := range figures(new) {
		seen[f.name] = true
		o, had := oldBy[f.name]
		change, flag := "—", ""
		switch {
		case !had:
			change = "new"
		case strings.HasSuffix(f.name, " errors"):
			if f.value > o {
				flag = "REGRESSION"
			}
		case o != 0 && f.value != 0:
			pct := (f.value - o) / o * 100
			change = fmt.Sprintf("%+.1f%%", pct)
			worse := pct
			if !f.lower {
				worse = -pct
			}
			if worse > threshold {
				flag = "REGRESSION"
			}
		}
		if flag != "" {
			regressions++
		}
		old := "—"
		if had {
			old = num(o)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.name, old, num(f.value), change, flag)
	}
	for _, f := range figures(old) {
		if !seen[f.name] {
			fmt.Fprintf(&b, "| %s | %s | — | gone | |\n", f.name, num(f.value))
		}
	}
	fmt.Fprintf(&b, "\n%d regression(s).\n", regressions)
	_, err := io.WriteString(w, b.String())
	return regressions, err
}
