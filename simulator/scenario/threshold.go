package scenario

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Unit is how a threshold metric is measured, and so how its value is written.
type Unit int

// Units of threshold metrics.
const (
	// UnitSeconds is a latency or a wait, written as a duration ("200ms") and
	// compared in seconds.
	UnitSeconds Unit = iota + 1
	// UnitFraction is a share, written as a percentage ("0.1%") or a fraction
	// (0.001), compared as a fraction.
	UnitFraction
	// UnitCount is a whole number of things.
	UnitCount
	// UnitNumber is a plain number (kendall_tau, -1..1).
	UnitNumber
)

func (u Unit) String() string {
	switch u {
	case UnitSeconds:
		return "seconds"
	case UnitFraction:
		return "fraction"
	case UnitCount:
		return "count"
	case UnitNumber:
		return "number"
	}
	return "unknown"
}

// Metric is a name a threshold may test. scenarios/README.md documents each.
type Metric struct {
	Name string
	Unit Unit
	Help string
}

var metrics = []Metric{
	{"promotion_p50", UnitSeconds, "promotion latency: admission decision → the bot learns it is ACTIVE"},
	{"promotion_p90", UnitSeconds, "promotion latency, 90th percentile"},
	{"promotion_p95", UnitSeconds, "promotion latency, 95th percentile"},
	{"promotion_p99", UnitSeconds, "promotion latency, 99th percentile"},
	{"promotion_max", UnitSeconds, "promotion latency, worst"},
	{"wait_p50", UnitSeconds, "time in line: join → ACTIVE"},
	{"wait_p95", UnitSeconds, "time in line, 95th percentile"},
	{"wait_p99", UnitSeconds, "time in line, 99th percentile"},
	{"wait_max", UnitSeconds, "time in line, longest"},
	{"rank_p50", UnitSeconds, "status query (position) request latency"},
	{"rank_p95", UnitSeconds, "status query latency, 95th percentile"},
	{"rank_p99", UnitSeconds, "status query latency, 99th percentile"},
	{"join_p50", UnitSeconds, "join request latency"},
	{"join_p95", UnitSeconds, "join request latency, 95th percentile"},
	{"join_p99", UnitSeconds, "join request latency, 99th percentile"},
	{"order_p99", UnitSeconds, "order request latency, 99th percentile"},
	{"error_rate", UnitFraction, "share of API calls with an unexpected outcome"},
	{"fifo_inversions", UnitCount, "pairs of bots admitted in the opposite order of their joins"},
	{"kendall_tau", UnitNumber, "rank correlation of join order and admission order (1: perfect FIFO)"},
	{"abandon_rate", UnitFraction, "share of bots that left the line when their patience ran out"},
	{"seats_virtual", UnitCount, "seats sold to bots"},
	{"seats_actual", UnitCount, "seats sold to people (practice races)"},
	{"orders", UnitCount, "orders that succeeded"},
	{"admitted", UnitCount, "tokens promoted to ACTIVE"},
	{"arrival_lag_p99", UnitSeconds, "how late scheduled arrivals started against their schedule, 99th percentile (the load generator's own lag)"},
	{"arrival_lag_max", UnitSeconds, "how late the latest scheduled arrival started"},
	{"late_arrivals", UnitFraction, "share of scheduled arrivals that started later than the lag tolerance"},
}

// Metrics returns every metric a threshold may test, in documentation order.
func Metrics() []Metric { return append([]Metric(nil), metrics...) }

func lookupMetric(name string) (Metric, bool) {
	for _, m := range metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

func metricNames() string {
	names := make([]string, len(metrics))
	for i, m := range metrics {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

var thresholdRE = regexp.MustCompile(`^([A-Za-z0-9_]+)\s*(<=|>=|==|!=|<|>|=)\s*(\S+)$`)

// ParseThreshold reads one rule "METRIC OP VALUE", e.g. "promotion_p99 < 200ms",
// "error_rate < 0.1%" or "fifo_inversions == 0". OP is one of < <= > >= == !=.
// The value must suit the metric's unit: a duration for latencies, a
// percentage or a fraction for rates, a plain number otherwise. Line is left 0.
func ParseThreshold(s string) (Threshold, error) {
	src := strings.TrimSpace(s)
	m := thresholdRE.FindStringSubmatch(src)
	if m == nil {
		return Threshold{}, fmt.Errorf("%q: want METRIC OP VALUE, e.g. \"promotion_p99 < 200ms\"", src)
	}
	name, op, raw := m[1], m[2], m[3]
	metric, ok := lookupMetric(name)
	if !ok {
		return Threshold{}, fmt.Errorf("unknown metric %q; known: %s", name, metricNames())
	}
	if op == "=" {
		return Threshold{}, fmt.Errorf("%q: write == to test equality", src)
	}
	v, err := thresholdValue(metric, raw)
	if err != nil {
		return Threshold{}, fmt.Errorf("%q: %w", src, err)
	}
	return Threshold{Source: src, Metric: name, Op: op, Value: v}, nil
}

func thresholdValue(m Metric, raw string) (float64, error) {
	isNumber := func(s string) (float64, bool) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(s, "xXpP_") {
			return 0, false
		}
		return f, true
	}
	switch m.Unit {
	case UnitSeconds:
		if f, ok := isNumber(raw); ok && f == 0 {
			return 0, nil
		}
		d, err := ParseDuration(raw)
		if err != nil {
			return 0, fmt.Errorf("%s is a duration: %w", m.Name, err)
		}
		return time.Duration(d).Seconds(), nil
	case UnitFraction:
		if num, ok := strings.CutSuffix(raw, "%"); ok {
			f, ok := isNumber(num)
			if !ok || f < 0 || f > 100 {
				return 0, fmt.Errorf("%s wants a percentage from 0%% to 100%%, got %q", m.Name, raw)
			}
			return f / 100, nil
		}
		f, ok := isNumber(raw)
		if !ok || f < 0 || f > 1 {
			return 0, fmt.Errorf("%s wants a percentage (0.1%%) or a fraction from 0 to 1, got %q", m.Name, raw)
		}
		return f, nil
	case UnitCount:
		f, ok := isNumber(raw)
		if !ok || f < 0 {
			return 0, fmt.Errorf("%s is a count: want a number ≥ 0, got %q", m.Name, raw)
		}
		return f, nil
	default:
		f, ok := isNumber(raw)
		if !ok || f < -1 || f > 1 {
			return 0, fmt.Errorf("%s wants a number from -1 to 1, got %q", m.Name, raw)
		}
		return f, nil
	}
}

// Check reports whether the measured value v passes the rule. v is in the
// metric's unit (seconds, fraction, count). A NaN value (not measured) fails.
// == and != allow a relative error of 1e-9, so a computed 0.1+0.2 equals 0.3.
func (t Threshold) Check(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch t.Op {
	case "<":
		return v < t.Value
	case "<=":
		return v <= t.Value
	case ">":
		return v > t.Value
	case ">=":
		return v >= t.Value
	case "==":
		return almostEqual(v, t.Value)
	case "!=":
		return !almostEqual(v, t.Value)
	}
	return false
}

func almostEqual(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// String is the rule as written.
func (t Threshold) String() string { return t.Source }

// UnmarshalYAML reads a rule string and records its line.
func (t *Threshold) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return fmt.Errorf("line %d: a threshold is a string such as \"promotion_p99 < 200ms\"", n.Line)
	}
	v, err := ParseThreshold(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	v.Line = n.Line
	*t = v
	return nil
}

// MarshalYAML writes the rule as written.
func (t Threshold) MarshalYAML() (any, error) { return t.Source, nil }
