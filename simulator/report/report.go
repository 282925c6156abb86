package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rushline/rushline/simulator/scenario"
)

// Schema names the JSON document's version. A change that breaks readers
// gets a new version; added fields do not.
const Schema = "rushline-sim/report/v1"

// Step names the engine gives its requests.
const (
	StepJoin   = "join"
	StepStatus = "status" // rank (position) queries
	StepStream = "stream"
	StepSeats  = "seats"
	StepOrder  = "order"
	StepLeave  = "leave"
)

// Verdicts.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
)

// maxTimeline bounds the timeline: one bucket a second for a week.
const maxTimeline = 7 * 24 * 3600

// ErrSchema is returned by Read for a document that is not a report of this schema.
var ErrSchema = errors.New("report: not a " + Schema + " document")

// Report is the JSON document of one run, or of several merged. SCHEMA.md
// documents every field. Everything in it is derived from Raw by Build, so a
// report can be merged and re-rendered. A Report is not modified by its
// methods and is safe for concurrent reads.
type Report struct {
	Schema string `json:"schema"`
	// Identity of the first run (runs lists them all).
	Scenario string        `json:"scenario"`
	Seed     int64         `json:"seed"`
	Target   string        `json:"target"`
	Event    string        `json:"event"`
	Shards   []string      `json:"shards"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	Duration time.Duration `json:"duration_ns"`
	// Verdict is "pass" when every threshold passed (or there are none).
	Verdict       string            `json:"verdict"`
	Runs          []Run             `json:"runs"`
	Summary       Summary           `json:"summary"`
	Thresholds    []ThresholdResult `json:"thresholds"`
	Timeline      []Second          `json:"timeline"`
	WaitHistogram []Bucket          `json:"wait_histogram"`
	// Raw holds what every run or shard recorded, runs in start order and
	// the shards of a run in shard order.
	Raw []Raw `json:"raw"`
}

// Run is one run, whose shards (if any) were merged.
type Run struct {
	Scenario string    `json:"scenario"`
	Seed     int64     `json:"seed"`
	Target   string    `json:"target"`
	Event    string    `json:"event"`
	Shards   []string  `json:"shards"`
	OpensAt  time.Time `json:"opens_at"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Bots     int64     `json:"bots"`
	Requests int64     `json:"requests"`
	// Final is the event's stats at the end (from one shard: see Merge).
	Final EventStats `json:"final"`
}

// Summary is every figure of the run.
type Summary struct {
	Bots  Bots   `json:"bots"`
	Steps []Step `json:"steps"`
	// Requests counts every API call; Unexpected those with an unexpected
	// outcome (see ErrorRate).
	Requests   int64 `json:"requests"`
	Unexpected int64 `json:"unexpected"`
	// ErrorRate is Unexpected / Requests: transport errors, 5xx, and 4xx
	// other than SEAT_TAKEN, SOLD_OUT and NOT_ACTIVE with status EXPIRED.
	ErrorRate float64 `json:"error_rate"`
	// Joined counts bots whose join was answered; Admitted bots promoted to ACTIVE.
	Joined   int64 `json:"joined"`
	Admitted int64 `json:"admitted"`
	// Orders counts successful (2xx) order requests.
	Orders int64 `json:"orders"`
	// SeatsVirtual are seats bought by bots; SeatsActual the event's other
	// sales (people, in a practice race): final sold − bot seats, at least 0.
	SeatsVirtual int64 `json:"seats_virtual"`
	SeatsActual  int64 `json:"seats_actual"`
	// Abandoned counts bots that left the line; AbandonRate is Abandoned / Joined.
	Abandoned   int64   `json:"abandoned"`
	AbandonRate float64 `json:"abandon_rate"`
	// Promotion is admission decision → a streaming bot receives its admitted
	// message (AdmittedSeen − AdmittedAt), over bots that waited in line.
	Promotion Dist `json:"promotion"`
	// PromotionPoll is the same for polling bots: mostly their poll interval.
	PromotionPoll Dist `json:"promotion_poll"`
	// Wait is time in line (AdmittedAt − JoinedAt).
	Wait Dist `json:"wait"`
	// Reaction is arrival → pressing join.
	Reaction Dist `json:"reaction"`
	FIFO     FIFO `json:"fifo"`
	// Event is the event's final stats, summed over runs.
	Event EventStats `json:"event"`
	// Errors are the kinds of failed requests, most frequent first, each
	// with one example.
	Errors []ErrorKind `json:"errors"`
	// Generator says whether the load generator kept its schedule.
	Generator GeneratorSummary `json:"generator"`
	// Metrics holds every threshold metric that was measured, by name, in
	// the metric's unit (seconds, fraction, count, number).
	Metrics map[string]float64 `json:"metrics"`
}

// GeneratorSummary is how well the load generator kept to its schedule.
type GeneratorSummary struct {
	// Planned counts scheduled arrivals; Arrived those that started.
	Planned int64 `json:"planned"`
	Arrived int64 `json:"arrived"`
	// Lag is how late the arrivals started against the schedule.
	Lag Dist `json:"lag"`
	// Late counts arrivals later than Tolerance; HeldBack the bots that
	// waited for a connection slot.
	Tolerance time.Duration `json:"tolerance_ns"`
	Late      int64         `json:"late"`
	HeldBack  int64         `json:"held_back"`
	// Saturated is set when the arrivals' p99 lag exceeds Tolerance: the
	// generator, not the server, fell behind the schedule.
	Saturated bool `json:"saturated"`
	// LateStarts names the shards whose clock started after their
	// synchronised start, and by how much.
	LateStarts []LateStart `json:"late_starts"`
}

// LateStart is a shard that started after the synchronised start.
type LateStart struct {
	Shard string        `json:"shard"`
	Late  time.Duration `json:"late_ns"`
}

// Bots counts bots by outcome, overall and per behaviour.
type Bots struct {
	Total     int64            `json:"total"`
	Outcomes  map[string]int64 `json:"outcomes"`
	Behaviors []BehaviorBots   `json:"behaviors"`
}

// BehaviorBots counts one behaviour's bots by outcome.
type BehaviorBots struct {
	Behavior string           `json:"behavior"`
	Total    int64            `json:"total"`
	Outcomes map[string]int64 `json:"outcomes"`
}

// Step is one request step's figures.
type Step struct {
	Step     string `json:"step"`
	Requests uint64 `json:"requests"`
	// Rate is requests per second between the first and last request;
	// Throughput successful (2xx/3xx) requests per second until the last answer.
	Rate       float64 `json:"rate"`
	Throughput float64 `json:"throughput"`
	// Success is the share of 2xx/3xx answers.
	Success float64 `json:"success"`
	// Latency runs from the request written to the connection to its
	// answer read (percentiles within 0.8%); ClientWait from the bot
	// deciding to send to the request written: time spent in the generator.
	Latency     Dist             `json:"latency"`
	ClientWait  Dist             `json:"client_wait"`
	BytesIn     uint64           `json:"bytes_in"`
	BytesOut    uint64           `json:"bytes_out"`
	StatusCodes map[string]int64 `json:"status_codes"`
	// Errors counts failed requests by kind (see ErrorKind).
	Errors     map[string]int64 `json:"errors"`
	Unexpected int64            `json:"unexpected"`
}

// Dist summarises a set of durations.
type Dist struct {
	Count int64         `json:"count"`
	Min   time.Duration `json:"min_ns"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	// Curve is the distribution at the quantiles of CurveQuantiles.
	Curve []Quantile `json:"curve"`
}

// At returns the figure named p: "p50", "p90", "p95", "p99", "max" or "mean"
// (0 for any other name).
func (d Dist) At(p string) time.Duration {
	switch p {
	case "p50":
		return d.P50
	case "p90":
		return d.P90
	case "p95":
		return d.P95
	case "p99":
		return d.P99
	case "max":
		return d.Max
	case "mean":
		return d.Mean
	}
	return 0
}

// Quantile is one point of a distribution.
type Quantile struct {
	Q     float64       `json:"q"`
	Value time.Duration `json:"ns"`
}

// CurveQuantiles are the quantiles of every Dist.Curve.
var CurveQuantiles = []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// FIFO measures admission order against join order.
type FIFO struct {
	// Admitted counts the admitted bots compared (Seq and AdmissionNo known);
	// Pairs the pairs of them in the same run.
	Admitted int64 `json:"admitted"`
	Pairs    int64 `json:"pairs"`
	// Inversions counts pairs with Seq_i < Seq_j but AdmissionNo_i > AdmissionNo_j.
	Inversions int64 `json:"inversions"`
	// KendallTau is tau-b of AdmissionNo against Seq; nil when undefined
	// (fewer than two bots, or every pair tied).
	KendallTau *float64 `json:"kendall_tau"`
}

// ThresholdResult is one threshold, checked.
type ThresholdResult struct {
	// Rule is as written; Op and Limit as parsed, Limit in Unit.
	Rule   string  `json:"rule"`
	Metric string  `json:"metric"`
	Op     string  `json:"op"`
	Limit  float64 `json:"limit"`
	Unit   string  `json:"unit"`
	// Value is the measured value in Unit; 0 when not Measured.
	Value    float64 `json:"value"`
	Measured bool    `json:"measured"`
	Pass     bool    `json:"pass"`
}

// Second is one second of the run, counted from the event's opening.
type Second struct {
	// T is the start of the second, in seconds since the opening.
	T          int64 `json:"t"`
	Arrivals   int64 `json:"arrivals"`
	Joins      int64 `json:"joins"`
	Promotions int64 `json:"promotions"`
	Orders     int64 `json:"orders"`
	// Planned counts the arrivals the schedule planned in the second.
	Planned int64 `json:"planned"`
	// Waiting and Active are the last sample of the second; nil without one.
	Waiting *int64 `json:"waiting"`
	Active  *int64 `json:"active"`
}

// Bucket is one bar of a histogram: [From, To).
type Bucket struct {
	From  time.Duration `json:"from_ns"`
	To    time.Duration `json:"to_ns"`
	Count int64         `json:"count"`
}

// Build summarises one run (or shard) and checks the thresholds. The report
// keeps raw (it does not copy the slices): don't change raw afterwards.
func Build(raw Raw, thresholds []scenario.Threshold) (*Report, error) {
	return build([]Raw{raw}, thresholds)
}

// Passed reports whether every threshold passed; true when there are none.
func (r *Report) Passed() bool {
	for _, t := range r.Thresholds {
		if !t.Pass {
			return false
		}
	}
	return true
}

// Merge combines the reports of several runs, or of the shards of one run,
// into one, as if recorded together: bots and requests are concatenated and
// summarised again; the thresholds are those of the first report.
//
// Raws are shards of one run when they share scenario, seed, target and
// event and name their shard "i/n" with the same n. Such shards watched the
// same event, so its stats (samples and final) are taken from one shard, the
// one that finished last (the lowest i on a tie), never added up. Different
// runs keep their own stats: the timeline adds up their queues second by
// second (each run counted from its own opening), and the final stats are
// summed. A shard, or an unsharded run (same event and start), given twice is
// an error.
func Merge(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("report: merge: no reports")
	}
	var raws []Raw
	for i, r := range reports {
		if r == nil {
			return nil, fmt.Errorf("report: merge: report %d is nil", i+1)
		}
		raws = append(raws, r.Raw...)
	}
	return build(raws, thresholdsOf(reports[0]))
}

func thresholdsOf(r *Report) []scenario.Threshold {
	ths := make([]scenario.Threshold, len(r.Thresholds))
	for i, t := range r.Thresholds {
		ths[i] = scenario.Threshold{Source: t.Rule, Metric: t.Metric, Op: t.Op, Value: t.Limit}
	}
	return ths
}

// Read reads a JSON report. It summarises the raw records again (with its
// thresholds), so what it returns is what Build makes of them today.
func Read(rd io.Reader) (*Report, error) {
	var doc Report
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("report: read: %w", err)
	}
	if doc.Schema != Schema {
		return nil, fmt.Errorf("%w (schema %q)", ErrSchema, doc.Schema)
	}
	return build(doc.Raw, thresholdsOf(&doc))
}

// WriteJSON writes the report as JSON: the summary indented, and each raw
// record on a line of its own so large runs stay compact.
func (r *Report) WriteJSON(w io.Writer) error {
	head := *r
	head.Raw = nil
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // rules read "p99 < 200ms", not "p99 \u003c 200ms"
	enc.SetIndent("", "  ")
	if err := enc.Encode(&head); err != nil {
		return fmt.Errorf("report: json: %w", err)
	}
	// Swap the empty "raw" for one line per record.
	const empty = "\"raw\": null\n}\n"
	if !bytes.HasSuffix(b.Bytes(), []byte(empty)) {
		return errors.New("report: json: raw is not the last field")
	}
	var buf bytes.Buffer
	buf.Write(b.Bytes()[:b.Len()-len(empty)])
	buf.WriteString("\"raw\": [")
	var line bytes.Buffer
	enc = json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	for i := range r.Raw {
		line.Reset()
		if err := enc.Encode(&r.Raw[i]); err != nil {
			return fmt.Errorf("report: json: %w", err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n    ")
		buf.Write(bytes.TrimSuffix(line.Bytes(), []byte("\n")))
	}
	if len(r.Raw) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteString("]\n}\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// unexpected reports whether a request's outcome counts towards the error
// rate (scenarios/README.md): transport errors, 5xx, and 4xx other than
// SEAT_TAKEN, SOLD_OUT and NOT_ACTIVE after the token EXPIRED.
func unexpected(q *Request) bool {
	switch {
	case q.Error != "" || q.Code <= 0:
		return true
	case q.Code >= 500:
		return true
	case q.Code >= 400:
		switch q.ErrCode {
		case "SEAT_TAKEN", "SOLD_OUT":
			return false
		case "NOT_ACTIVE":
			return q.ErrStatus != "EXPIRED"
		}
		return true
	}
	return false
}

// ParseShard parses a shard name "i/n" (1 ≤ i ≤ n); "" is (0, 0), no shard.
func ParseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("report: shard %q: want i/n with 1 ≤ i ≤ n", s)
	}
	return i, n, nil
}

// FormatShard names shard i of n "i/n"; "" when n is 0 (no shard).
func FormatShard(i, n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(i) + "/" + strconv.Itoa(n)
}
