package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

// Defaults of a validation run.
const (
	DefaultValidateScale = 0.01
	DefaultValidateMax   = 3000
)

// Tolerances of Validate: a prediction agrees with the measurement when the
// difference is within the larger of the relative and the absolute bound.
// Waits get one admission interval plus 250 ms of absolute slack: the live
// ticker's phase is not the opening's, and requests take time.
const (
	TolWaitRel  = 0.20
	TolWaitAbs  = 250 * time.Millisecond
	TolLineRel  = 0.15
	TolCountRel = 0.02
	TolCountAbs = 2
)

// validateOpensIn delays the validation event's opening past the admission
// runner's discovery of new events (every 1 s; slower on a busy machine), so
// ticks run from the first join.
const validateOpensIn = 3 * time.Second

// validateMinInterval is the shortest admission interval Speedup may bring.
const validateMinInterval = 200 * time.Millisecond

// ValidateConfig says where and how big to run a validation.
type ValidateConfig struct {
	Target, SimulatorKey, AdminKey string
	// Scale is the share of the crowd to run (DefaultValidateScale when 0),
	// capped so that at most MaxBots arrive (DefaultValidateMax when 0).
	Scale   float64
	MaxBots int
	// Speedup runs time that many times faster (1 when 0), as far as the
	// interval stays >= 200 ms: phase lengths, reaction, patience and think
	// times, the window and the interval are divided by it (poll intervals
	// are kept, to spare the server).
	Speedup float64
	// Client, when set, sends the run's requests.
	Client   *http.Client
	Progress io.Writer
}

// Validation is a live run of one setting set beside the model's prediction.
type Validation struct {
	// Factor is the share of the crowd that ran, Speedup how much faster;
	// Setting and Event are scaled by them.
	Factor, Speedup float64
	Setting         Setting
	Event           Event
	Bots            int
	Rows            []Agreement
	// Latency is the measured p50 and p99 of the order requests.
	Latency [2]time.Duration
	// JoinLag is the p50 and p99 of how much later than planned the live
	// joins were answered, Service of how much longer than notice + think
	// the live requests held an active slot: the machine's own time, which
	// the plan's model leaves out and the live-timed model is fed.
	JoinLag, Service [2]time.Duration
	// Timed counts the bots whose live join time fed the live-timed model.
	Timed int
}

// Agreement is one figure predicted and measured. Predicted is the plan's
// model; Live the same model fed the live run's join and request times,
// which is what the measurement is held to, so that a slow machine does not
// count against the queue's logic.
type Agreement struct {
	Name                      string
	Predicted, Live, Measured float64
	Tolerance                 float64
	Duration, Agrees          bool
}

// OK is true when every figure agrees.
func (v *Validation) OK() bool {
	for _, r := range v.Rows {
		if !r.Agrees {
			return false
		}
	}
	return true
}

// PredictionAgrees is true when the plan's own prediction, without the live
// timings, is within every figure's tolerance of the measurement too: what
// to expect when the live requests took little time next to the waits.
func (v *Validation) PredictionAgrees() bool {
	for _, r := range v.Rows {
		if math.Abs(r.Predicted-r.Measured) > r.Tolerance {
			return false
		}
	}
	return true
}

// Validate runs setting s on a scaled copy of sc's crowd against a live
// server and compares it with the model's prediction for that same scaled
// crowd and setting (batch, capacity, max_tps and seats scaled too). Bots
// always buy, so the prediction assumes a conversion of 1.
func Validate(ctx context.Context, sc *scenario.Scenario, s Setting, ev Event, cfg ValidateConfig) (*Validation, error) {
	if cfg.Scale == 0 {
		cfg.Scale = DefaultValidateScale
	}
	if cfg.MaxBots == 0 {
		cfg.MaxBots = DefaultValidateMax
	}
	if cfg.Speedup == 0 {
		cfg.Speedup = 1
	}
	if !(cfg.Scale > 0 && cfg.Scale <= 1) {
		return nil, fmt.Errorf("plan: --validate-scale must be in (0, 1], got %g", cfg.Scale)
	}
	if !(cfg.Speedup >= 1 && cfg.Speedup <= 100) {
		return nil, fmt.Errorf("plan: --validate-speedup must be 1–100, got %g", cfg.Speedup)
	}
	expected := 0.0
	for _, ph := range sc.Phases {
		expected += max(ph.ExpectedArrivals(), 0)
	}
	f := cfg.Scale
	if expected*f > float64(cfg.MaxBots) {
		f = float64(cfg.MaxBots) / expected
	}
	// Ticks much shorter than this lag on a busy server, which the model
	// cannot know: run slower rather than validate the machine's load.
	k := max(1, min(cfg.Speedup, float64(s.Interval)/float64(validateMinInterval)))
	small, err := ScaleScenario(sc, f, k)
	if err != nil {
		return nil, err
	}
	v := &Validation{Factor: f, Speedup: k, Setting: scaleSetting(s, f, k), Event: ev}
	v.Event.Window = max(time.Second, time.Duration(float64(ev.Window)/k).Round(time.Second))
	if ev.Seats > 0 {
		v.Event.Seats = max(1, int(math.Round(float64(ev.Seats)*f)))
	}
	crowd, err := CrowdOf(small, 1)
	if err != nil {
		return nil, err
	}
	v.Bots = len(crowd.Users)
	seats := v.Event.Seats
	if seats == 0 {
		seats = v.Bots
	}
	small.Event = scenario.Event{Create: &scenario.EventCreate{Name: sc.Name + " validation", Seats: seats,
		Capacity: v.Setting.Capacity, AdmitBatch: v.Setting.Batch, AdmitIntervalMS: int(v.Setting.Interval.Milliseconds()),
		ActiveTTLS: int(v.Event.Window.Seconds()), Policy: v.Setting.Policy, MaxTPS: v.Setting.MaxTPS,
		OpensIn: scenario.Duration(validateOpensIn)}}
	pred := Simulate(crowd, v.Setting, Event{Seats: seats, Window: v.Event.Window})

	raw, err := engine.Run(ctx, small, engine.Config{Target: cfg.Target, SimulatorKey: cfg.SimulatorKey,
		AdminKey: cfg.AdminKey, Client: cfg.Client, Progress: cfg.Progress, KeepBots: true}) // the comparison reads every bot
	if err != nil {
		return nil, fmt.Errorf("plan: validation run: %w", err)
	}
	rep, err := report.Build(raw, nil)
	if err != nil {
		return nil, err
	}
	sum := rep.Summary
	for _, st := range sum.Steps {
		if st.Step == report.StepOrder {
			v.Latency = [2]time.Duration{st.Latency.P50, st.Latency.P99}
		}
	}
	timed, lags, service := liveTimed(crowd, &raw)
	v.JoinLag, v.Service, v.Timed = p50p99(lags), p50p99(service), len(lags)
	live := Simulate(timed, v.Setting, Event{Seats: seats, Window: v.Event.Window})
	waitTol := v.Setting.Interval + TolWaitAbs
	v.Rows = []Agreement{
		durationRow("wait p50", pred.Wait.P50, live.Wait.P50, sum.Wait.P50, waitTol),
		durationRow("wait p95", pred.Wait.P95, live.Wait.P95, sum.Wait.P95, waitTol),
		countRow("peak waiting", pred.PeakWaiting, live.PeakWaiting, peakWaiting(raw.Bots), TolLineRel, float64(v.Setting.Batch)),
		countRow("admitted", pred.Admitted, live.Admitted, int(sum.Admitted), TolCountRel, TolCountAbs),
		countRow("sold", pred.Sold, live.Sold, int(sum.SeatsVirtual), TolCountRel, TolCountAbs),
	}
	return v, nil
}

// liveTimed is crowd with each bot's join moved to when the live run
// answered it and its Service set to how much longer than notice + think it
// held its active slot (seat list, orders, retries and, for a stream, the
// push's delay). It returns those join lags and service times too.
func liveTimed(crowd *Crowd, raw *report.Raw) (timed *Crowd, lags, service []time.Duration) {
	// simulator/engine names bot k "<run tag>-k".
	byArrival := make(map[int]*report.Bot, len(raw.Bots))
	for i := range raw.Bots {
		b := &raw.Bots[i]
		if k, err := strconv.Atoi(b.ID[strings.LastIndexByte(b.ID, '-')+1:]); err == nil {
			byArrival[k] = b
		}
	}
	users := slices.Clone(crowd.Users)
	for i := range users {
		u := &users[i]
		b := byArrival[u.Arrival]
		if b == nil || b.JoinedAt.IsZero() {
			continue
		}
		join := b.JoinedAt.Sub(raw.OpensAt).Seconds()
		lags = append(lags, secs(max(join-u.Join, 0)))
		u.Join = join
		if b.AdmittedAt.IsZero() || b.Outcome == report.OutcomeCancelled || b.Outcome == report.OutcomeFailed {
			continue
		}
		from := b.AdmittedSeen // a poller's notice is the model's to work out
		if u.PollRate == 0 {
			from = b.AdmittedAt
		}
		u.Service = max(b.FinishedAt.Sub(from).Seconds()-u.Think, 0)
		service = append(service, secs(u.Service))
	}
	slices.SortStableFunc(users, func(a, b User) int { return cmp.Compare(a.Join, b.Join) })
	return &Crowd{Users: users}, lags, service
}

// p50p99 is the nearest-rank median and 99th percentile of ds (zero when empty).
func p50p99(ds []time.Duration) [2]time.Duration {
	if len(ds) == 0 {
		return [2]time.Duration{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[max(0, int(math.Ceil(q*float64(len(ds))))-1)] }
	return [2]time.Duration{at(0.50), at(0.99)}
}

func durationRow(name string, pred, live, meas, abs time.Duration) Agreement {
	tol := max(TolWaitRel*live.Seconds(), abs.Seconds())
	l, m := live.Seconds(), meas.Seconds()
	return Agreement{Name: name, Predicted: pred.Seconds(), Live: l, Measured: m, Tolerance: tol, Duration: true,
		Agrees: math.Abs(l-m) <= tol}
}

func countRow(name string, pred, live, meas int, rel, abs float64) Agreement {
	tol := max(rel*float64(live), abs)
	return Agreement{Name: name, Predicted: float64(pred), Live: float64(live), Measured: float64(meas), Tolerance: tol,
		Agrees: math.Abs(float64(live-meas)) <= tol}
}

// peakWaiting is the most bots in line at once: each from its join answer
// to its admission, or to the end of its run if never admitted.
func peakWaiting(bots []report.Bot) int {
	type edge struct {
		at time.Time
		d  int
	}
	var es []edge
	for _, b := range bots {
		if b.JoinedAt.IsZero() {
			continue
		}
		end := b.AdmittedAt
		if end.IsZero() {
			end = b.FinishedAt
		}
		if end.After(b.JoinedAt) {
			es = append(es, edge{b.JoinedAt, 1}, edge{end, -1})
		}
	}
	slices.SortFunc(es, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // leave before join at the same instant
	})
	n, peak := 0, 0
	for _, e := range es {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// scaleSetting scales the counts of a setting by f (each at least 1) and its
// interval by 1/k (at least 50 ms, rounded to the millisecond).
func scaleSetting(s Setting, f, k float64) Setting {
	sc := func(n int) int { return max(1, int(math.Round(float64(n)*f))) }
	s.Batch, s.Capacity = sc(s.Batch), sc(s.Capacity)
	if s.MaxTPS > 0 {
		s.MaxTPS = max(1, int(math.Round(float64(s.MaxTPS)*f*k)))
	}
	s.Interval = max(50*time.Millisecond, time.Duration(float64(s.Interval)/k).Round(time.Millisecond))
	return s
}

// ScaleScenario returns a copy of sc with every phase's arrivals scaled by f
// (rates and spike sizes) and time running k times faster (phase lengths and
// the bots' reaction, patience and think times divided by k, rates
// multiplied by it; poll intervals kept), without thresholds.
func ScaleScenario(sc *scenario.Scenario, f, k float64) (*scenario.Scenario, error) {
	if !(f > 0 && f <= 1) {
		return nil, fmt.Errorf("plan: scale must be in (0, 1], got %g", f)
	}
	if !(k >= 1) {
		return nil, fmt.Errorf("plan: speedup must be >= 1, got %g", k)
	}
	out := *sc
	out.Thresholds = nil
	out.Phases = slices.Clone(sc.Phases)
	out.Bots = slices.Clone(sc.Bots)
	r := func(x scenario.Rate) scenario.Rate { return scenario.Rate(float64(x) * f * k) }
	d := func(x scenario.Duration) scenario.Duration { return scenario.Duration(float64(x) / k) }
	for i := range out.Phases {
		ph := &out.Phases[i]
		switch ph.Arrival {
		case scenario.ArrivalClosed:
			return nil, fmt.Errorf("plan: phase %s is a closed model, which has no arrival curve to plan for", ph.Name)
		case scenario.ArrivalSpike:
			ph.Users = max(1, int(math.Round(float64(ph.Users)*f)))
		}
		ph.Rate, ph.From, ph.To, ph.Mean, ph.Amplitude = r(ph.Rate), r(ph.From), r(ph.To), r(ph.Mean), r(ph.Amplitude)
		ph.Duration, ph.Over, ph.Period = d(ph.Duration), d(ph.Over), d(ph.Period)
	}
	for i := range out.Bots {
		b := &out.Bots[i]
		for _, ds := range []*scenario.Dist{&b.Reaction, &b.Patience, &b.Think} {
			ds.Value, ds.Min, ds.Max, ds.Mean = d(ds.Value), d(ds.Min), d(ds.Max), d(ds.Mean)
			ds.Stddev, ds.Median, ds.P90 = d(ds.Stddev), d(ds.Median), d(ds.P90)
		}
	}
	return &out, nil
}

// headline says what ran.
func (v *Validation) headline() string {
	return fmt.Sprintf("%s bots (%.4g of the crowd, %g× as fast), %s, %s seats, %s window", count(v.Bots), v.Factor,
		v.Speedup, v.Setting, count(v.Event.Seats), dur(v.Event.Window))
}

// table is the comparison, head first.
func (v *Validation) table() [][]string {
	rows := [][]string{{"figure", "predicted", "live-timed", "measured", "tolerance", "agrees"}}
	for _, r := range v.Rows {
		f := func(x float64) string { return count(int(math.Round(x))) }
		if r.Duration {
			f = func(x float64) string { return dur(secs(x)) }
		}
		mark := "yes"
		if !r.Agrees {
			mark = "NO"
		}
		rows = append(rows, []string{r.Name, f(r.Predicted), f(r.Live), f(r.Measured), "±" + f(r.Tolerance), mark})
	}
	return rows
}

// footer notes the latency and the verdict.
func (v *Validation) footer() string {
	s := fmt.Sprintf("Order requests took %s at p50, %s at p99. Live requests held active slots %s longer than "+
		"the think time at p50 (%s at p99) and joins were answered %s later than planned (%s at p99); "+
		"\"live-timed\" is the model fed those times, and the measurement is held to it.",
		dur(v.Latency[0]), dur(v.Latency[1]), dur(v.Service[0]), dur(v.Service[1]), dur(v.JoinLag[0]), dur(v.JoinLag[1]))
	if !v.OK() {
		s += " The live run disagrees with the model beyond the tolerance."
	}
	return s
}

// WriteText writes the comparison as a table.
func (v *Validation) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Validation: %s\n", v.headline())
	table(&b, v.table())
	b.WriteString(v.footer() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrDisagrees is returned by the plan command when a validation fails.
var ErrDisagrees = errors.New("plan: the live run disagrees with the prediction")
