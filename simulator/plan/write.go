package plan

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Sentence is the recommendation in plain words.
func (p *Plan) Sentence() string {
	b := p.Best()
	return fmt.Sprintf("%s: p95 wait %s, peak %s waiting, %s orders/s at the shop, 1 Redis + %d %s",
		b.Setting, dur(b.Wait.P95), count(b.PeakWaiting), count(b.OrdersPeak), b.Servers, plural(b.Servers, "server"))
}

// Why says how the recommendation was chosen.
func (p *Plan) Why() string {
	b := p.Best()
	within := 0
	for _, r := range p.Results {
		if r.Within {
			within++
		}
	}
	if b.Within {
		return fmt.Sprintf("The fastest drain of the %d settings (of %d) that never exceed %s orders/s at the shop.",
			within, len(p.Results), num(p.Limit))
	}
	return fmt.Sprintf("No setting of the %d stays under %s orders/s at the shop; this one exceeds it the least "+
		"(in %s of the selling seconds). Raise the limit or lower conversion/think assumptions, or widen the sweep.",
		len(p.Results), num(p.Limit), pct(b.OverLimit))
}

// Details are the recommended setting's other figures, one per line.
func (p *Plan) Details() []string {
	b := p.Best()
	lines := []string{
		fmt.Sprintf("wait in line: p50 %s, p95 %s, max %s; %s admitted on join", dur(b.Wait.P50), dur(b.Wait.P95),
			dur(b.Wait.Max), count(b.AdmittedOnJoin)),
		fmt.Sprintf("the line peaks at %s and empties %s after the opening", count(b.PeakWaiting), dur(secs(b.Drain))),
		fmt.Sprintf("shop: %s orders/s at peak, %s mean while selling, over the limit in %s of those seconds",
			count(b.OrdersPeak), num(b.OrdersMean), pct(b.OverLimit)),
		fmt.Sprintf("%s admitted, %s sold, %s left the line", count(b.Admitted), count(b.Sold), count(b.Abandoned)),
	}
	if b.SoldOutAt >= 0 {
		lines = append(lines, fmt.Sprintf("sold out %s after the opening; people admitted later find no seat", dur(secs(b.SoldOutAt))))
	}
	lines = append(lines,
		fmt.Sprintf("Redis: %s at peak (%s waiting + %s active × %s B); one event lives in one hash slot, so one Redis primary",
			bytesOf(b.RedisBytes), count(b.PeakWaiting), count(b.PeakActive), num(p.Rates.RedisBytesPerWaiting)),
		fmt.Sprintf("servers: %d — joins %s at peak need %.2f, status polls %s/s need %.2f, %s SSE streams need %.2f (of %s each)",
			b.Servers, count(p.PeakJoins)+"/s", b.JoinLoad, num(b.PeakStatusRPS), b.StatusLoad, count(b.PeakStreams),
			b.StreamLoad, bytesOf(p.ServerMemory)))
	if b.AdmissionOver {
		lines = append(lines, fmt.Sprintf("warning: %s promotions/s is above one Redis's measured %s/s",
			num(float64(b.Setting.Batch)/b.Setting.Interval.Seconds()), num(p.Rates.PromotionsPerS)))
	}
	return lines
}

// inputLines describe what the plan assumed.
func (p *Plan) inputLines() [][2]string {
	seats := "unlimited"
	if p.Event.Seats > 0 {
		seats = count(p.Event.Seats)
	}
	return [][2]string{
		{"crowd", fmt.Sprintf("%s users — %s; peak %s joins/s", count(p.Users), p.Describe, count(p.PeakJoins))},
		{"event", fmt.Sprintf("%s seats, %s active window", seats, dur(p.Event.Window))},
		{"shop", fmt.Sprintf("%s orders/s at most; %s of admitted users buy", num(p.Limit), pct(p.Conversion))},
		{"rates", fmt.Sprintf("%s: %s joins/s and %s status/s per server at %s headroom; %s promotions/s per Redis; %s B per waiting user; %s per SSE stream",
			p.Rates.Source, num(p.Rates.JoinRPS), num(p.Rates.StatusRPS), pct(p.Headroom), num(p.Rates.PromotionsPerS),
			num(p.Rates.RedisBytesPerWaiting), bytesOf(p.Rates.StreamBytes))},
	}
}

// sweepHead and sweepRow are the sweep table's columns.
var sweepHead = []string{"#", "policy", "interval", "batch", "capacity", "wait p50", "p95", "max", "peak waiting",
	"orders/s peak", "mean", "over limit", "drain", "Redis", "servers"}

func (p *Plan) sweepRow(i int) []string {
	r := p.Results[i]
	s := r.Setting
	c := count(s.Capacity)
	if s.Policy == PolicyBatch {
		c = "—"
	}
	mark := fmt.Sprint(i + 1)
	if !r.Within {
		mark += "!"
	}
	return []string{mark, s.Policy, dur(s.Interval), count(s.Batch), c, dur(r.Wait.P50), dur(r.Wait.P95),
		dur(r.Wait.Max), count(r.PeakWaiting), count(r.OrdersPeak), num(r.OrdersMean), pct(r.OverLimit),
		dur(secs(r.Drain)), bytesOf(r.RedisBytes), fmt.Sprint(r.Servers)}
}

// TextRows is how many settings the text output lists.
const TextRows = 15

// WriteText writes the plan for a terminal.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "rushline plan: %s\n\n", p.Name)
	for _, l := range p.inputLines() {
		fmt.Fprintf(&b, "%-6s %s\n", l[0], l[1])
	}
	fmt.Fprintf(&b, "\nRecommendation: %s.\n%s\n", p.Sentence(), p.Why())
	for _, l := range p.Details() {
		fmt.Fprintf(&b, "  - %s\n", l)
	}
	n := min(TextRows, len(p.Results))
	fmt.Fprintf(&b, "\nSweep: the best %d of %d settings (! = exceeds the limit in some second)\n", n, len(p.Results))
	rows := [][]string{sweepHead}
	for i := range n {
		rows = append(rows, p.sweepRow(i))
	}
	table(&b, rows)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the plan as a Markdown document with the whole sweep.
func (p *Plan) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Capacity plan: %s\n\n", p.Name)
	fmt.Fprintf(&b, "**Recommendation: %s.**\n\n%s\n\n", p.Sentence(), p.Why())
	for _, l := range p.Details() {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	if v := p.Validation; v != nil {
		fmt.Fprintf(&b, "\n## Validation\n\nThe recommended setting, run live: %s.\n\n", v.headline())
		mdTable(&b, v.table())
		fmt.Fprintf(&b, "\n%s Tolerances: docs/plan.md.\n", v.footer())
	}
	b.WriteString("\n## Assumptions\n\n| | |\n|---|---|\n")
	for _, l := range p.inputLines() {
		fmt.Fprintf(&b, "| %s | %s |\n", l[0], mdEscape(l[1]))
	}
	fmt.Fprintf(&b, "\n## Sweep\n\nAll %d settings, best first; `!` marks one whose orders exceed %s/s in some second. "+
		"Waits are time in line (join answered → ACTIVE); drain is when the line empties, from the opening.\n\n",
		len(p.Results), num(p.Limit))
	rows := [][]string{sweepHead}
	for i := range p.Results {
		rows = append(rows, p.sweepRow(i))
	}
	mdTable(&b, rows)
	b.WriteString("\nMade by `rushline-sim plan`; the model is described in [docs/plan.md](plan.md).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// mdTable writes rows as a Markdown table, the first row as the head.
func mdTable(b *strings.Builder, rows [][]string) {
	for i, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(r)) + "\n")
		}
	}
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// table writes rows with aligned columns, the first row as the head.
func table(b *strings.Builder, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			pad := width[i] - len([]rune(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i <= 2 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
		}
		b.WriteString("\n")
	}
}

// dur writes a duration the short way: 0s, 350ms, 4.5s, 7m40s, 1h12m.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	case d < 10*time.Second:
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".0") + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// count writes a count the short way: 950, 12.3k, 182k, 1.25M.
func count(n int) string {
	f := float64(n)
	switch {
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 100_000:
		return fmt.Sprintf("%.1fk", f/1e3)
	case n < 1_000_000:
		return fmt.Sprintf("%.0fk", f/1e3)
	}
	return fmt.Sprintf("%.2fM", f/1e6)
}

// num writes a rate or figure with sensible precision.
func num(f float64) string {
	switch {
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return count(int(f))
	case math.Abs(f) < 10:
		return fmt.Sprintf("%.2f", f)
	case math.Abs(f) < 10_000:
		return fmt.Sprintf("%.0f", f)
	}
	return count(int(math.Round(f)))
}

func pct(f float64) string {
	v := f * 100
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f%%", v)
	}
	return fmt.Sprintf("%.1f%%", v)
}

// bytesOf writes a size in KB, MB or GB (powers of 1024).
func bytesOf(b float64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%.0f B", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KB", b/(1<<10))
	case b < 1<<30:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	}
	return fmt.Sprintf("%.2f GB", b/(1<<30))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
