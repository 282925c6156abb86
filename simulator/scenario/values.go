package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ParseDuration reads "300ms", "2s", "1m30s" (Go's time.ParseDuration
// syntax). A bare number other than 0 is refused: "30" could mean seconds or
// milliseconds, so the unit must be written. Negatives are refused.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("want a duration such as 300ms, 2s or 1m30s")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q has no unit: write e.g. %ss or %sms", s, s, s)
		}
		return 0, fmt.Errorf("%q is not a duration such as 300ms, 2s or 1m30s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return Duration(d), nil
}

// String writes the duration the way ParseDuration reads it.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads a duration scalar such as "300ms".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 300ms, 2s or 1m30s", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration as "1m30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// maxRate bounds a rate so that sums and products of rates stay finite.
const maxRate = 1e9

// ParseRate reads "50/s", "3000/m", "1.5/s", "7200/h" or a bare number (per
// second) and returns arrivals per second. Negative, NaN and infinite rates
// are refused.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, unit, per := strings.Cut(s, "/")
	num = strings.TrimSpace(num)
	div := 1.0
	if per {
		switch strings.TrimSpace(unit) {
		case "s":
		case "m":
			div = 60
		case "h":
			div = 3600
		default:
			return 0, fmt.Errorf("%q: the unit after / must be s, m or h (e.g. 50/s, 3000/m)", s)
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || strings.ContainsAny(num, "xXpP_") {
		return 0, fmt.Errorf("%q is not a rate such as 50/s, 3000/m or 1.5", s)
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("%q is not a finite rate", s)
	case f < 0:
		return 0, fmt.Errorf("%q is negative", s)
	case f/div > maxRate:
		return 0, fmt.Errorf("%q is over %g/s", s, float64(maxRate))
	}
	return Rate(f / div), nil
}

// String writes the rate per second, e.g. "50/s".
func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) + "/s" }

// UnmarshalYAML reads a rate scalar such as "50/s" or 50.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a rate such as 50/s, 3000/m or 1.5", n.Line)
	}
	v, err := ParseRate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = v
	return nil
}

// MarshalYAML writes the rate as "50/s".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }
