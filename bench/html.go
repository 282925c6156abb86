package bench

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"slices"

	"github.com/rushline/rushline/internal/uplot"
)

var (
	//go:embed assets/bench.html.tmpl
	pageTmpl string
	//go:embed assets/bench.js
	pageJS string

	page = template.Must(template.New("bench").Parse(pageTmpl))
)

type htmlRatio struct{ Name, Value, Target, Verdict string }

type htmlCeiling struct{ Op, Waiting, Via, RedisCPU, PerS string }

type htmlView struct {
	Host, Date, Setup, Load string
	// HTTP, Rounds, Drop and LineFloor say which charts the page has.
	HTTP, Rounds, Drop, LineFloor bool
	// The drop step's section: its title, intro, figures and failed checks.
	DropTitle, DropIntro string
	DropRows             []htmlRatio
	Mismatches           []string
	Ratios               []htmlRatio
	// Ceilings are one event's ceilings (see Result.Ceilings).
	Ceilings             []htmlCeiling
	CeilingIntro         string
	UPlotVersion         string
	UPlotCSS             template.CSS
	UPlotJS, AppJS, Data template.JS
}

// chartOp is one operation's series over the sizes; nil where not measured.
type chartOp struct {
	Naive       []*float64 `json:"naive"`
	Rushline    []*float64 `json:"rushline"`
	Floor       []*float64 `json:"floor"`
	NaiveP99    []*float64 `json:"naive_p99"`
	RushlineP99 []*float64 `json:"rushline_p99"`
}

// chartData is what the page's charts draw.
type chartData struct {
	Sizes  []int   `json:"sizes"`
	Join   chartOp `json:"join"`
	Status chartOp `json:"status"`
	CPU    struct {
		NaiveServer    []*float64 `json:"naive_server"`
		RushlineServer []*float64 `json:"rushline_server"`
		NaiveRedis     []*float64 `json:"naive_redis"`
		RushlineRedis  []*float64 `json:"rushline_redis"`
	} `json:"cpu"`
	Drop   *dropChart   `json:"drop,omitempty"`
	Rounds *roundsChart `json:"rounds,omitempty"`
	// LineFloor is Redis CPU per user in process by size, join.lua's and
	// the sorted-set floor's; nil where the step did not run.
	LineFloor *lineFloorChart `json:"line_floor,omitempty"`
}

// lineFloorChart is the sorted-set floor step's series over the sizes.
type lineFloorChart struct {
	Join  []*float64 `json:"join"`
	Floor []*float64 `json:"floor"`
}

// roundsChart is the floor's and rushline's server CPU per join at the
// first size, round by round, on shared CPUs and (where run) pinned; nil
// where a round is missing.
type roundsChart struct {
	Round          []int      `json:"round"`
	Floor          []*float64 `json:"floor"`
	Rushline       []*float64 `json:"rushline"`
	FloorPinned    []*float64 `json:"floor_pinned"`
	RushlinePinned []*float64 `json:"rushline_pinned"`
}

// roundsChart gathers the join rounds at the first size; nil with fewer
// than two rounds of the floor and rushline on shared CPUs.
func (r *Result) roundsChart() *roundsChart {
	if len(r.Settings.Sizes) == 0 {
		return nil
	}
	n := r.Settings.Sizes[0]
	fl, ok1 := r.HTTPFor(ServerFloor, OpJoin, n)
	rl, ok2 := r.HTTPFor(ServerRushline, OpJoin, n)
	if !ok1 || !ok2 || len(fl.ServerCPURounds) < 2 || len(rl.ServerCPURounds) < 2 {
		return nil
	}
	pf, _ := r.PinnedFor(ServerFloor, OpJoin, n)
	pr, _ := r.PinnedFor(ServerRushline, OpJoin, n)
	rounds := max(len(fl.ServerCPURounds), len(rl.ServerCPURounds), len(pf.ServerCPURounds), len(pr.ServerCPURounds))
	at := func(xs []float64, i int) *float64 {
		if i >= len(xs) {
			return nil
		}
		return &xs[i]
	}
	c := &roundsChart{}
	for i := range rounds {
		c.Round = append(c.Round, i+1)
		c.Floor, c.Rushline = append(c.Floor, at(fl.ServerCPURounds, i)), append(c.Rushline, at(rl.ServerCPURounds, i))
		c.FloorPinned, c.RushlinePinned = append(c.FloorPinned, at(pf.ServerCPURounds, i)), append(c.RushlinePinned, at(pr.ServerCPURounds, i))
	}
	return c
}

// dropChart is the drop step's series: its progress over time from the
// opening, and each person's promotion latency by admission time.
type dropChart struct {
	T           []float64 `json:"t"`
	CrowdJoined []int64   `json:"crowd_joined"`
	Sold        []int64   `json:"sold"`
	PromotionT  []float64 `json:"promotion_t"`
	// PromotionMS are the pushed promotions' latencies, BeforeStreamMS
	// those of people admitted before their stream was asked for; nil
	// where the point is the other's.
	PromotionMS    []*float64 `json:"promotion_ms"`
	BeforeStreamMS []*float64 `json:"before_stream_ms"`
}

// chart gathers the series of r's HTTP figures by size.
func (r *Result) chart() chartData {
	d := chartData{Sizes: r.Settings.Sizes}
	at := func(server, op string, n int, f func(HTTPFigures) float64) *float64 {
		h, ok := r.HTTPFor(server, op, n)
		if !ok || f(h) == 0 {
			return nil
		}
		v := f(h)
		return &v
	}
	rps := func(h HTTPFigures) float64 { return h.RPS }
	p99 := func(h HTTPFigures) float64 { return h.P99 }
	for _, n := range d.Sizes {
		for _, o := range []struct {
			op string
			c  *chartOp
		}{{OpJoin, &d.Join}, {OpStatus, &d.Status}} {
			o.c.Naive = append(o.c.Naive, at(ServerNaive, o.op, n, rps))
			o.c.Rushline = append(o.c.Rushline, at(ServerRushline, o.op, n, rps))
			o.c.Floor = append(o.c.Floor, at(ServerFloor, o.op, n, rps))
			o.c.NaiveP99 = append(o.c.NaiveP99, at(ServerNaive, o.op, n, p99))
			o.c.RushlineP99 = append(o.c.RushlineP99, at(ServerRushline, o.op, n, p99))
		}
		d.CPU.NaiveServer = append(d.CPU.NaiveServer, at(ServerNaive, OpJoin, n, func(h HTTPFigures) float64 { return h.ServerCPU }))
		d.CPU.RushlineServer = append(d.CPU.RushlineServer, at(ServerRushline, OpJoin, n, func(h HTTPFigures) float64 { return h.ServerCPU }))
		d.CPU.NaiveRedis = append(d.CPU.NaiveRedis, at(ServerNaive, OpJoin, n, func(h HTTPFigures) float64 { return h.RedisCPU }))
		d.CPU.RushlineRedis = append(d.CPU.RushlineRedis, at(ServerRushline, OpJoin, n, func(h HTTPFigures) float64 { return h.RedisCPU }))
	}
	d.Rounds = r.roundsChart()
	if len(r.LineFloor) > 0 {
		c := &lineFloorChart{}
		for _, n := range d.Sizes {
			var join, floor *float64
			for _, f := range r.LineFloor {
				if f.Waiting == n && f.FloorCPU > 0 {
					join, floor = &f.JoinCPU, &f.FloorCPU
				}
			}
			c.Join, c.Floor = append(c.Join, join), append(c.Floor, floor)
		}
		d.LineFloor = c
	}
	if r.Drop != nil {
		c := &dropChart{}
		for _, x := range r.Drop.Timeline {
			c.T, c.CrowdJoined, c.Sold = append(c.T, x.T), append(c.CrowdJoined, x.CrowdJoined), append(c.Sold, x.Sold)
		}
		// uPlot wants x ascending: promotions by admission time.
		p := slices.Clone(r.Drop.Promotions)
		slices.SortStableFunc(p, func(a, b DropPromotion) int { return cmp.Compare(a.T, b.T) })
		for _, x := range p {
			ms := x.MS
			c.PromotionT = append(c.PromotionT, x.T)
			if x.Pushed {
				c.PromotionMS, c.BeforeStreamMS = append(c.PromotionMS, &ms), append(c.BeforeStreamMS, nil)
			} else {
				c.PromotionMS, c.BeforeStreamMS = append(c.PromotionMS, nil), append(c.BeforeStreamMS, &ms)
			}
		}
		d.Drop = c
	}
	return d
}

// HTML writes the result as a self-contained page: charts of throughput,
// p99 and CPU per request by line length, and the targets with their
// verdicts. It needs no network.
func HTML(w io.Writer, r *Result) error {
	c := r.chart()
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	v := htmlView{Host: r.Host, Date: r.Date.UTC().Format("2006-01-02 15:04 UTC"), Setup: setupLine(r), Load: loadLine(r),
		UPlotVersion: uplot.Version, UPlotCSS: template.CSS(uplot.CSS), UPlotJS: template.JS(uplot.Script()),
		AppJS: template.JS(pageJS), Data: template.JS(data), HTTP: !r.onlyDrop(), Rounds: c.Rounds != nil,
		Drop: r.Drop != nil, LineFloor: c.LineFloor != nil}
	if d := r.Drop; d != nil {
		v.DropTitle, v.DropIntro, v.DropRows, v.Mismatches = d.dropTitle(), d.dropIntro(), d.dropRows(), d.Mismatches
	}
	for _, x := range r.Ratios {
		v.Ratios = append(v.Ratios, htmlRatio{Name: x.Name, Value: num(x.Value), Target: x.targetText(), Verdict: x.Verdict()})
	}
	for _, c := range r.Ceilings() {
		v.Ceilings = append(v.Ceilings, htmlCeiling{Op: c.Op, Waiting: SizeLabel(c.Waiting), Via: c.Via, RedisCPU: num(c.RedisCPU), PerS: num(c.PerS)})
	}
	v.CeilingIntro = ceilingIntro
	return page.Execute(w, v)
}
