package plan

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"io"

	"github.com/rushline/rushline/internal/uplot"
)

var (
	//go:embed assets/plan.html.tmpl
	pageTemplate string
	//go:embed assets/plan.js
	pageJS string

	page = template.Must(template.New("plan").Parse(pageTemplate))
)

// maxPoints bounds a chart's points: longer series are summed (or, for the
// line, maxed) over steps of several seconds.
const maxPoints = 1500

// ChartData is what the HTML page draws, inlined as JSON.
type ChartData struct {
	Limit float64 `json:"limit"`
	// Series is the recommended setting over time; Step its seconds per point.
	Series struct {
		Step    int       `json:"step"`
		T       []int     `json:"t"`
		Waiting []int32   `json:"waiting"`
		Active  []int32   `json:"active"`
		Joins   []float64 `json:"joins"`
		Admits  []float64 `json:"admits"`
		Orders  []float64 `json:"orders"`
	} `json:"series"`
	// Waits is the wait (seconds, S) at each share of admitted users (Q).
	Waits struct {
		Q []float64 `json:"q"`
		S []float64 `json:"s"`
	} `json:"waits"`
	// Sweep is every setting's p95 wait (seconds) and peak orders/s, best first.
	Sweep struct {
		P95    []float64 `json:"p95"`
		Orders []int     `json:"orders"`
	} `json:"sweep"`
}

// Chart returns the HTML report's chart data.
func (p *Plan) Chart() ChartData {
	var c ChartData
	c.Limit = p.Limit
	b := p.Best()
	s := b.Series
	n := max(len(s.Waiting), len(p.Joins))
	step := max(1, (n+maxPoints-1)/maxPoints)
	c.Series.Step = step
	at := func(xs []int32, i int) int32 {
		if i < len(xs) {
			return xs[i]
		}
		return 0
	}
	for i := 0; i < n; i += step {
		var joins, admits, orders int32
		var waiting int32
		for j := i; j < min(i+step, n); j++ {
			joins += at(p.Joins, j)
			admits += at(s.Admits, j)
			orders += at(s.Orders, j)
			waiting = max(waiting, at(s.WaitingMax, j))
		}
		last := min(i+step, n) - 1
		span := float64(min(i+step, n) - i)
		c.Series.T = append(c.Series.T, i)
		c.Series.Waiting = append(c.Series.Waiting, waiting)
		c.Series.Active = append(c.Series.Active, at(s.Active, last))
		c.Series.Joins = append(c.Series.Joins, float64(joins)/span)
		c.Series.Admits = append(c.Series.Admits, float64(admits)/span)
		c.Series.Orders = append(c.Series.Orders, float64(orders)/span)
	}
	if len(b.waits) > 0 {
		for q := 0; q <= 100; q++ {
			f := float64(q) / 100
			c.Waits.Q = append(c.Waits.Q, f)
			c.Waits.S = append(c.Waits.S, round3(nearestRank(b.waits, max(f, 1e-9))))
		}
	}
	for _, r := range p.Results {
		c.Sweep.P95 = append(c.Sweep.P95, round3(r.Wait.P95.Seconds()))
		c.Sweep.Orders = append(c.Sweep.Orders, r.OrdersPeak)
	}
	return c
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

type htmlRow struct {
	Over  bool
	Cells []string
}

type htmlView struct {
	Name, Sentence, Why  string
	Within               bool
	Details              []string
	Inputs               [][2]string
	Head                 []string
	Rows                 []htmlRow
	UPlotVersion         string
	UPlotCSS             template.CSS
	UPlotJS, AppJS, Data template.JS
	// Validation, when the plan has one.
	ValidationHead, ValidationNote string
	ValidationRows                 [][]string
}

// WriteHTML writes the self-contained report: charts of the recommended
// setting and of the sweep, and the sweep's table. It needs no network.
func (p *Plan) WriteHTML(w io.Writer) error {
	data, err := json.Marshal(p.Chart())
	if err != nil {
		return err
	}
	v := htmlView{Name: p.Name, Sentence: p.Sentence(), Why: p.Why(), Within: p.Best().Within, Details: p.Details(),
		Inputs: p.inputLines(), Head: sweepHead, UPlotVersion: uplot.Version, UPlotCSS: template.CSS(uplot.CSS),
		UPlotJS: template.JS(uplot.Script()),
		AppJS:   template.JS(pageJS), Data: template.JS(data)}
	for i, r := range p.Results {
		v.Rows = append(v.Rows, htmlRow{Over: !r.Within, Cells: p.sweepRow(i)})
	}
	if val := p.Validation; val != nil {
		v.ValidationHead, v.ValidationRows, v.ValidationNote = val.headline(), val.table(), val.footer()
	}
	return page.Execute(w, v)
}
