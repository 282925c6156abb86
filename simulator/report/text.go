package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// WriteText writes a human summary: the headline and verdict, the
// thresholds, bots by outcome, the requests of each step and the
// waiting-room figures.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	s := &r.Summary

	fmt.Fprintf(bw, "rushline-sim report: %s (seed %d)\n\n", r.Scenario, r.Seed)
	id := &table{align: "ll"}
	id.add("target", r.Target)
	id.add("event", r.Event)
	if len(r.Shards) > 0 {
		id.add("shards", strings.Join(r.Shards, ", "))
	}
	if len(r.Runs) > 1 {
		id.add("runs", fmt.Sprintf("%d merged (the identity above is the first run's)", len(r.Runs)))
	}
	id.add("started", fmtTime(r.Started))
	id.add("finished", fmtTime(r.Finished))
	id.add("duration", fmtDur(r.Duration))
	id.add("verdict", r.headline())
	id.write(bw, "")

	if len(r.Thresholds) > 0 {
		fmt.Fprintf(bw, "\nThresholds\n")
		t := &table{align: "lll"}
		for _, th := range r.Thresholds {
			t.add(thresholdMark(th), th.Rule, "measured "+thresholdMeasured(th))
		}
		t.write(bw, "  ")
	}

	fmt.Fprintf(bw, "\nBots (%s)\n", fmtCount(s.Bots.Total))
	if s.Bots.Total > 0 {
		cols := outcomes(s.Bots)
		t := &table{align: "l" + strings.Repeat("r", len(cols)+1)}
		t.add(append([]string{"behavior", "total"}, cols...)...)
		row := func(name string, total int64, by map[string]int64) {
			cells := []string{name, fmtCount(total)}
			for _, o := range cols {
				cells = append(cells, fmtCount(by[o]))
			}
			t.add(cells...)
		}
		for _, b := range s.Bots.Behaviors {
			row(b.Behavior, b.Total, b.Outcomes)
		}
		row("all", s.Bots.Total, s.Bots.Outcomes)
		t.write(bw, "  ")
	}

	fmt.Fprintf(bw, "\nRequests (%s, %s unexpected)\n", fmtCount(s.Requests), fmtCount(s.Unexpected))
	if len(s.Steps) > 0 {
		t := &table{align: "lrrrrrrrrrrrr"}
		t.add(stepHead...)
		for _, st := range s.Steps {
			t.add(stepRow(st)...)
		}
		t.write(bw, "  ")
		fmt.Fprintln(bw)
		c := &table{align: "lll"}
		c.add("step", "status codes", "errors")
		for _, st := range s.Steps {
			c.add(st.Step, fmtCodes(st.StatusCodes), fmtErrors(st.Errors))
		}
		c.write(bw, "  ")
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(bw, "\nErrors (%d kind(s))\n", len(s.Errors))
		t := &table{align: "rlll"}
		t.add("count", "step", "kind", "example")
		for i, e := range s.Errors {
			if i == maxErrorLines {
				t.add("…", "", fmt.Sprintf("%d more kinds in the JSON report", len(s.Errors)-i), "")
				break
			}
			t.add(fmtCount(e.Count), e.Step, e.Kind, clip(e.Example, 120))
		}
		t.write(bw, "  ")
	}

	fmt.Fprintf(bw, "\nWaiting room\n")
	fig := &table{align: "ll"}
	for _, f := range r.figures() {
		fig.add(f.Name, f.Value)
	}
	fig.write(bw, "  ")

	if len(r.Runs) > 1 {
		fmt.Fprintf(bw, "\nRuns\n")
		t := &table{align: "lrllllrr"}
		t.add("scenario", "seed", "event", "shards", "target", "started", "bots", "requests")
		for _, ru := range r.Runs {
			t.add(ru.Scenario, fmt.Sprint(ru.Seed), ru.Event, orDash(strings.Join(ru.Shards, ",")), ru.Target,
				fmtTime(ru.Started), fmtCount(ru.Bots), fmtCount(ru.Requests))
		}
		t.write(bw, "  ")
	}
	return bw.Flush()
}

// maxErrorLines bounds the error kinds the text and HTML reports list.
const maxErrorLines = 10

// stepHead and stepRow lay out a step's line: server-side latency (from the
// request written), then the client-side wait before it.
var stepHead = []string{"step", "requests", "rate/s", "success", "unexpected", "mean", "p50", "p90", "p95", "p99", "max",
	"client wait p50", "client wait p99"}

func stepRow(st Step) []string {
	l, w := st.Latency, st.ClientWait
	return []string{st.Step, fmtCount(st.Requests), fmtRate(st.Rate), fmtPct(st.Success), fmtCount(st.Unexpected),
		fmtDur(l.Mean), fmtDur(l.P50), fmtDur(l.P90), fmtDur(l.P95), fmtDur(l.P99), fmtDur(l.Max), fmtDur(w.P50), fmtDur(w.P99)}
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// table lays out rows in columns two spaces apart, each column aligned left
// ('l') or right ('r'), without trailing spaces.
type table struct {
	align string
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, indent string) {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range t.rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < len(t.align) && t.align[i] == 'r' {
				b.WriteString(pad + c)
			} else if i == len(row)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
