package scenario_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rushline/rushline/simulator/scenario"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string // part of the error; empty when it parses
	}{
		{"300ms", 300 * time.Millisecond, ""},                 // milliseconds
		{"2s", 2 * time.Second, ""},                           // seconds
		{"1m30s", 90 * time.Second, ""},                       // compound
		{"1.5s", 1500 * time.Millisecond, ""},                 // fractional
		{"2h", 2 * time.Hour, ""},                             // hours
		{" 5s ", 5 * time.Second, ""},                         // spaces around
		{"0", 0, ""},                                          // zero needs no unit
		{"0s", 0, ""},                                         // zero with a unit
		{"-1s", 0, "negative"},                                // negative
		{"30", 0, `"30" has no unit: write e.g. 30s or 30ms`}, // bare number
		{"1.5", 0, "has no unit"},                             // bare fraction
		{"", 0, "want a duration"},                            // empty
		{"soon", 0, `"soon" is not a duration`},               // garbage
		{"1d", 0, "is not a duration"},                        // days are not Go units
		{"5 s", 0, "is not a duration"},                       // space inside
		{"NaN", 0, "is not a duration"},                       // not a number at all
		{"9999999999h", 0, "is not a duration"},               // overflows
	}
	for _, tt := range tests {
		got, err := scenario.ParseDuration(tt.in)
		switch {
		case tt.err == "" && (err != nil || time.Duration(got) != tt.want):
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseDuration(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // per second
		err  string
	}{
		{"50/s", 50, ""},                // per second
		{"3000/m", 50, ""},              // per minute
		{"7200/h", 2, ""},               // per hour
		{"1.5/s", 1.5, ""},              // fractional
		{"50", 50, ""},                  // bare number: per second
		{"0.25", 0.25, ""},              // bare fraction
		{"0", 0, ""},                    // zero parses; phases refuse it where it matters
		{" 10 / s ", 10, ""},            // spaces
		{"1e3/m", 1000.0 / 60, ""},      // exponent
		{"-5/s", 0, "negative"},         // negative
		{"-1", 0, "negative"},           // negative bare
		{"5/d", 0, "must be s, m or h"}, // unknown unit
		{"5/", 0, "must be s, m or h"},  // no unit after /
		{"fast", 0, "not a rate"},       // garbage
		{"", 0, "not a rate"},           // empty
		{"/s", 0, "not a rate"},         // no number
		{"NaN", 0, "not a finite rate"}, // NaN
		{"Inf/s", 0, "not a finite"},    // infinity
		{"0x10", 0, "not a rate"},       // Go hex float syntax
		{"1_000", 0, "not a rate"},      // underscores
		{"1e10/s", 0, "is over"},        // absurd
	}
	for _, tt := range tests {
		got, err := scenario.ParseRate(tt.in)
		switch {
		case tt.err == "" && (err != nil || math.Abs(float64(got)-tt.want) > 1e-12):
			t.Errorf("ParseRate(%q) = %v, %v; want %v/s", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseRate(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
}

func TestParseThreshold(t *testing.T) {
	tests := []struct {
		in     string
		metric string
		op     string
		value  float64
		err    string
	}{
		{"promotion_p99 < 200ms", "promotion_p99", "<", 0.2, ""},            // duration → seconds
		{"wait_max<=1m30s", "wait_max", "<=", 90, ""},                       // no spaces
		{"  join_p50 >  0  ", "join_p50", ">", 0, ""},                       // 0 needs no unit
		{"error_rate < 0.1%", "error_rate", "<", 0.001, ""},                 // percentage → fraction
		{"error_rate < 0.001", "error_rate", "<", 0.001, ""},                // fraction as is
		{"abandon_rate >= 100%", "abandon_rate", ">=", 1, ""},               // the top of the range
		{"fifo_inversions == 0", "fifo_inversions", "==", 0, ""},            // count
		{"orders != 3", "orders", "!=", 3, ""},                              // !=
		{"kendall_tau >= -0.5", "kendall_tau", ">=", -0.5, ""},              // negative tau
		{"admitted > 1e3", "admitted", ">", 1000, ""},                       // exponent
		{"promotion_p99 < 200", "", "", 0, "is a duration"},                 // unit missing
		{"promotion_p99 < 5%", "", "", 0, "is a duration"},                  // wrong kind of value
		{"error_rate < 5", "", "", 0, "fraction from 0 to 1"},               // 5 is not a fraction
		{"error_rate < 101%", "", "", 0, "from 0% to 100%"},                 // over 100%
		{"error_rate < 1s", "", "", 0, "wants a percentage"},                // duration for a rate
		{"orders > -1", "", "", 0, "is a count"},                            // negative count
		{"orders > 10ms", "", "", 0, "is a count"},                          // duration for a count
		{"kendall_tau > 2", "", "", 0, "from -1 to 1"},                      // out of range
		{"fifo_inversions = 0", "", "", 0, "write =="},                      // single =
		{"fifo_inversions => 0", "", "", 0, "want METRIC OP VALUE"},         // unknown operator
		{"fifo_inversions", "", "", 0, "want METRIC OP VALUE"},              // no operator
		{"", "", "", 0, "want METRIC OP VALUE"},                             // empty
		{"latency_p99 < 1s", "", "", 0, `unknown metric "latency_p99"`},     // unknown metric
		{"promotion_p99 < 200 ms", "", "", 0, "want METRIC OP VALUE"},       // space in the value
		{"promotion_p99 < NaNs", "", "", 0, "is a duration"},                // garbage value
		{"error_rate < NaN%", "", "", 0, "wants a percentage"},              // NaN
		{"Promotion_P99 < 1s", "", "", 0, `unknown metric "Promotion_P99"`}, // names are lower case
	}
	for _, tt := range tests {
		got, err := scenario.ParseThreshold(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseThreshold(%q): %v", tt.in, err)
		case tt.err == "" && (got.Metric != tt.metric || got.Op != tt.op || math.Abs(got.Value-tt.value) > 1e-12 || got.Source != strings.TrimSpace(tt.in)):
			t.Errorf("ParseThreshold(%q) = %+v; want %s %s %v", tt.in, got, tt.metric, tt.op, tt.value)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseThreshold(%q) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}

	// An unknown metric's error lists every known one.
	_, err := scenario.ParseThreshold("nope < 1")
	for _, m := range scenario.Metrics() {
		if !strings.Contains(err.Error(), m.Name) {
			t.Errorf("unknown-metric error %q does not list %s", err, m.Name)
		}
	}
}

func TestThresholdCheck(t *testing.T) {
	rule := func(s string) scenario.Threshold {
		t.Helper()
		th, err := scenario.ParseThreshold(s)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	tests := []struct {
		rule string
		v    float64
		want bool
	}{
		{"promotion_p99 < 200ms", 0.199, true},   // under
		{"promotion_p99 < 200ms", 0.2, false},    // equal is not under
		{"promotion_p99 <= 200ms", 0.2, true},    // equal passes <=
		{"orders > 10", 11, true},                // over
		{"orders > 10", 10, false},               // equal is not over
		{"orders >= 10", 10, true},               // equal passes >=
		{"fifo_inversions == 0", 0, true},        // exact
		{"fifo_inversions == 0", 1, false},       // one inversion fails
		{"kendall_tau == 0.3", 0.1 + 0.2, true},  // float noise is tolerated
		{"kendall_tau != 0.3", 0.1 + 0.2, false}, // … both ways
		{"kendall_tau != 0.3", 0.31, true},       // a real difference
		{"error_rate < 0.1%", math.NaN(), false}, // not measured fails
		{"error_rate < 0.1%", 0.0009, true},      // fraction under 0.1%
	}
	for _, tt := range tests {
		if got := rule(tt.rule).Check(tt.v); got != tt.want {
			t.Errorf("%q.Check(%v) = %v, want %v", tt.rule, tt.v, got, tt.want)
		}
	}
	if (scenario.Threshold{Op: "~"}).Check(1) {
		t.Error("an unknown operator passed")
	}
}

func TestValuesYAML(t *testing.T) {
	var v struct {
		D  scenario.Duration  `yaml:"d"`
		R  scenario.Rate      `yaml:"r"`
		T  scenario.Threshold `yaml:"t"`
		R2 scenario.Rate      `yaml:"r2"`
	}
	if err := yaml.Unmarshal([]byte("d: 1m30s\nr: 3000/m\nt: error_rate < 1%\nr2: 2.5\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.D != scenario.Duration(90*time.Second) || v.R != 50 || v.R2 != 2.5 || v.T.Value != 0.01 || v.T.Line != 3 {
		t.Errorf("decoded %+v", v)
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := "d: 1m30s\nr: 50/s\nt: error_rate < 1%\nr2: 2.5/s\n"; string(out) != want {
		t.Errorf("encoded %q, want %q", out, want)
	}

	// Each type refuses what it can't read, naming the line.
	bad := []string{"d: -1s", "d: [1s]", "r: fast", "r: {per: s}", "t: 'nope < 1'", "t: 5"}
	for _, doc := range bad {
		var w struct {
			D scenario.Duration  `yaml:"d"`
			R scenario.Rate      `yaml:"r"`
			T scenario.Threshold `yaml:"t"`
		}
		if err := yaml.Unmarshal([]byte("\n"+doc), &w); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("yaml.Unmarshal(%q) = %v, want an error on line 2", doc, err)
		}
	}
}
