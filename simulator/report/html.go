package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/rushline/rushline/internal/uplot"
)

var (
	//go:embed assets/report.js
	appJS string
	//go:embed assets/report.css
	appCSS string
	//go:embed assets/report.html.tmpl
	pageTemplate string

	page = template.Must(template.New("report").Parse(pageTemplate))
)

type htmlTable struct {
	Head []string
	Rows [][]string
}

type htmlChart struct {
	ID, Caption, Description string
	Empty                    bool
	Table                    *htmlTable
}

type htmlThreshold struct {
	Mark, Rule, Measured string
	Pass                 bool
}

type htmlView struct {
	Schema, Title, Headline string
	Pass, Saturated         bool
	Identity                []figure
	Thresholds              []htmlThreshold
	Charts                  []htmlChart
	OutcomeCols             []string
	BotRows                 [][]string
	RequestsLine            string
	StepHead                []string
	StepRows                [][]string
	CodeRows                [][]string
	ErrorRows               [][]string
	Figures                 []figure
	RunHead                 []string
	RunRows                 [][]string
	UPlotVersion            string
	UPlotCSS, CSS           template.CSS
	UPlotJS, AppJS, Data    template.JS
}

// chartData is what the page's script draws, inlined as JSON.
type chartData struct {
	Timeline struct {
		T          []int64  `json:"t"`
		Arrivals   []int64  `json:"arrivals"`
		Planned    []int64  `json:"planned"`
		Joins      []int64  `json:"joins"`
		Promotions []int64  `json:"promotions"`
		Orders     []int64  `json:"orders"`
		Waiting    []*int64 `json:"waiting"`
		Active     []*int64 `json:"active"`
	} `json:"timeline"`
	Curve struct {
		Labels []string      `json:"labels"`
		Series []curveSeries `json:"series"`
	} `json:"curve"`
	Wait struct {
		FromS  []float64 `json:"from_s"`
		Count  []int64   `json:"count"`
		WidthS float64   `json:"width_s"`
	} `json:"wait"`
}

type curveSeries struct {
	Name string    `json:"name"`
	MS   []float64 `json:"ms"`
}

// curveLabels name CurveQuantiles.
var curveLabels = []string{"min", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "max"}

// WriteHTML writes a self-contained page: the summary tables, the
// thresholds and charts of arrivals and promotions, the queue, latency per
// step and time in line. Styles, scripts (uPlot included) and data are
// inline, so it opens offline; it follows the reader's light or dark scheme.
func (r *Report) WriteHTML(w io.Writer) error {
	v, err := r.htmlView()
	if err != nil {
		return err
	}
	return page.Execute(w, v)
}

func (r *Report) htmlView() (*htmlView, error) {
	s := &r.Summary
	v := &htmlView{
		Schema:       Schema,
		Title:        "rushline-sim report: " + r.Scenario,
		Headline:     r.headline(),
		Pass:         r.Passed(),
		UPlotVersion: uplot.Version,
		UPlotCSS:     template.CSS(uplot.CSS),
		CSS:          template.CSS(appCSS),
		AppJS:        template.JS(appJS),
		UPlotJS:      template.JS(uplot.Script()),
		Figures:      r.figures(),
		Saturated:    r.Summary.Generator.Saturated,
	}
	v.Identity = []figure{{"scenario", r.Scenario}, {"seed", fmt.Sprint(r.Seed)}, {"target", r.Target}, {"event", r.Event}}
	if len(r.Shards) > 0 {
		v.Identity = append(v.Identity, figure{"shards", strings.Join(r.Shards, ", ")})
	}
	if len(r.Runs) > 1 {
		v.Identity = append(v.Identity, figure{"runs", fmt.Sprintf("%d merged (the identity above is the first run's)", len(r.Runs))})
	}
	v.Identity = append(v.Identity,
		figure{"started", fmtTime(r.Started)}, figure{"finished", fmtTime(r.Finished)}, figure{"duration", fmtDur(r.Duration)})

	for _, t := range r.Thresholds {
		v.Thresholds = append(v.Thresholds, htmlThreshold{thresholdMark(t), t.Rule, thresholdMeasured(t), t.Pass})
	}

	if s.Bots.Total > 0 {
		v.OutcomeCols = outcomes(s.Bots)
		row := func(name string, total int64, by map[string]int64) []string {
			cells := []string{name, fmtCount(total)}
			for _, o := range v.OutcomeCols {
				cells = append(cells, fmtCount(by[o]))
			}
			return cells
		}
		for _, b := range s.Bots.Behaviors {
			v.BotRows = append(v.BotRows, row(b.Behavior, b.Total, b.Outcomes))
		}
		v.BotRows = append(v.BotRows, row("all", s.Bots.Total, s.Bots.Outcomes))
	}

	v.RequestsLine = fmt.Sprintf("%s API calls, %s with an unexpected outcome.", fmtCount(s.Requests), fmtCount(s.Unexpected))
	v.StepHead = stepHead
	for _, st := range s.Steps {
		v.StepRows = append(v.StepRows, stepRow(st))
		v.CodeRows = append(v.CodeRows, []string{st.Step, fmtCodes(st.StatusCodes), fmtErrors(st.Errors)})
	}

	for i, e := range s.Errors {
		if i == maxErrorLines {
			v.ErrorRows = append(v.ErrorRows, []string{"…", "", fmt.Sprintf("%d more kinds in the JSON report", len(s.Errors)-i), ""})
			break
		}
		v.ErrorRows = append(v.ErrorRows, []string{fmtCount(e.Count), e.Step, e.Kind, clip(e.Example, 200)})
	}

	if len(r.Runs) > 1 {
		v.RunHead = []string{"scenario", "seed", "event", "shards", "target", "started", "bots", "requests"}
		for _, ru := range r.Runs {
			v.RunRows = append(v.RunRows, []string{ru.Scenario, fmt.Sprint(ru.Seed), ru.Event,
				orDash(strings.Join(ru.Shards, ",")), ru.Target, fmtTime(ru.Started), fmtCount(ru.Bots), fmtCount(ru.Requests)})
		}
	}

	data, charts := r.charts()
	v.Charts = charts
	b, err := json.Marshal(data) // escapes <, > and &, so it can't close the script
	if err != nil {
		return nil, fmt.Errorf("report: html: %w", err)
	}
	v.Data = template.JS(b)
	return v, nil
}

func (r *Report) charts() (*chartData, []htmlChart) {
	d := &chartData{}
	tl := &d.Timeline
	tl.T, tl.Arrivals, tl.Planned, tl.Joins, tl.Promotions, tl.Orders = []int64{}, []int64{}, []int64{}, []int64{}, []int64{}, []int64{}
	tl.Waiting, tl.Active = []*int64{}, []*int64{}
	var peakArr, peakArrT, peakWait, peakWaitT int64
	sampled := false
	timeTable := &htmlTable{Head: []string{"second", "planned", "arrivals", "joins", "promotions seen", "orders", "waiting", "active"}}
	opt := func(p *int64) string {
		if p == nil {
			return "—"
		}
		return fmtCount(*p)
	}
	for _, sec := range r.Timeline {
		tl.T = append(tl.T, sec.T)
		tl.Arrivals = append(tl.Arrivals, sec.Arrivals)
		tl.Planned = append(tl.Planned, sec.Planned)
		tl.Joins = append(tl.Joins, sec.Joins)
		tl.Promotions = append(tl.Promotions, sec.Promotions)
		tl.Orders = append(tl.Orders, sec.Orders)
		tl.Waiting = append(tl.Waiting, sec.Waiting)
		tl.Active = append(tl.Active, sec.Active)
		if sec.Arrivals > peakArr {
			peakArr, peakArrT = sec.Arrivals, sec.T
		}
		if sec.Waiting != nil {
			if !sampled || *sec.Waiting > peakWait {
				peakWait, peakWaitT = *sec.Waiting, sec.T
			}
			sampled = true
		}
		timeTable.Rows = append(timeTable.Rows, []string{fmt.Sprint(sec.T), fmtCount(sec.Planned), fmtCount(sec.Arrivals), fmtCount(sec.Joins),
			fmtCount(sec.Promotions), fmtCount(sec.Orders), opt(sec.Waiting), opt(sec.Active)})
	}

	s := &r.Summary
	d.Curve.Labels = curveLabels
	d.Curve.Series = []curveSeries{}
	curveTable := &htmlTable{Head: append([]string{"series"}, curveLabels...)}
	addCurve := func(name string, dist Dist) {
		if dist.Count == 0 {
			return
		}
		cs := curveSeries{Name: name}
		row := []string{name}
		for _, q := range dist.Curve {
			cs.MS = append(cs.MS, float64(q.Value)/1e6)
			row = append(row, fmtDur(q.Value))
		}
		d.Curve.Series = append(d.Curve.Series, cs)
		curveTable.Rows = append(curveTable.Rows, row)
	}
	for _, st := range s.Steps {
		addCurve(st.Step, st.Latency)
	}
	addCurve("promotion", s.Promotion)

	d.Wait.FromS, d.Wait.Count = []float64{}, []int64{}
	waitTable := &htmlTable{Head: []string{"time in line", "bots"}}
	for _, b := range r.WaitHistogram {
		d.Wait.FromS = append(d.Wait.FromS, b.From.Seconds())
		d.Wait.Count = append(d.Wait.Count, b.Count)
		d.Wait.WidthS = (b.To - b.From).Seconds()
		waitTable.Rows = append(waitTable.Rows, []string{fmtDur(b.From) + " – " + fmtDur(b.To), fmtCount(b.Count)})
	}

	span := "no events"
	if n := len(r.Timeline); n > 0 {
		span = fmt.Sprintf("seconds %d to %d since the opening", r.Timeline[0].T, r.Timeline[n-1].T)
	}
	queueDesc := "Line chart of the event's waiting and active tokens, as sampled during the run: no samples."
	if sampled {
		queueDesc = fmt.Sprintf("Line chart of the event's waiting and active tokens, as sampled during the run, %s; the longest line was %s waiting, at second %d.",
			span, fmtCount(peakWait), peakWaitT)
	}
	names := make([]string, len(d.Curve.Series))
	for i, cs := range d.Curve.Series {
		names[i] = cs.Name
	}
	charts := []htmlChart{
		{
			ID: "arrivals", Caption: "Arrivals and promotions per second",
			Description: fmt.Sprintf("Line chart of arrivals, joins, promotions seen and successful orders per second, %s; arrivals peaked at %s in second %d.",
				span, fmtCount(peakArr), peakArrT),
			Empty: len(r.Timeline) == 0, Table: timeTable,
		},
		{
			ID: "queue", Caption: "Queue length and active tokens", Description: queueDesc,
			Empty: !sampled,
		},
		{
			ID: "latency", Caption: "Latency distribution per step",
			Description: fmt.Sprintf("Percentile curves (min to max) of request latency per step, and of promotion latency (dashed): %s.",
				orNone(strings.Join(names, ", "))),
			Empty: len(d.Curve.Series) == 0, Table: curveTable,
		},
		{
			ID: "wait", Caption: "Time in line (join → admitted)",
			Description: fmt.Sprintf("Histogram of the time admitted bots spent in line: %s bots, median %s, longest %s.",
				fmtCount(s.Wait.Count), fmtDur(s.Wait.P50), fmtDur(s.Wait.Max)),
			Empty: len(r.WaitHistogram) == 0, Table: waitTable,
		},
	}
	if charts[0].Empty {
		charts[0].Table = nil
	}
	if charts[2].Empty {
		charts[2].Table = nil
	}
	if charts[3].Empty {
		charts[3].Table = nil
	}
	return d, charts
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
