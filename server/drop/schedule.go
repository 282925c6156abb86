package drop

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultSchedules is the configuration with none given: a drop every five
// minutes, so a visitor always finds one about to start, with a crowd this
// 2-core machine plays comfortably.
const DefaultSchedules = "every=5m,scenario=concert-rush,level=normal,crowd=20000"

// NoSchedules turns schedules off.
const NoSchedules = "off"

// Bounds of a schedule.
const (
	MinEvery = time.Minute
	MaxEvery = 24 * time.Hour
)

var scheduleName = regexp.MustCompile(`^[a-z0-9-]{1,20}$`)

// Schedule makes drops at regular openings: every period (aligned to the
// Unix epoch, so 5m opens at :00, :05, …) or daily at a UTC time of day.
type Schedule struct {
	// Name tells the schedule's drops apart in their ids; the level by default.
	Name string
	// Every is the period; 0 for a daily schedule.
	Every time.Duration
	// At is the daily opening's time since midnight UTC.
	At       time.Duration
	Scenario string
	Level    Level
	// Crowd and Seats override the scenario's when set.
	Crowd *int
	Seats *int
}

// Next is the schedule's first opening after t.
func (s Schedule) Next(t time.Time) time.Time {
	t = t.UTC()
	if s.Every > 0 {
		return t.Truncate(s.Every).Add(s.Every)
	}
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if at := day.Add(s.At); at.After(t) {
		return at
	}
	return day.AddDate(0, 0, 1).Add(s.At)
}

// String is the schedule in the configuration's syntax.
func (s Schedule) String() string {
	var b strings.Builder
	if s.Every > 0 {
		fmt.Fprintf(&b, "every=%s", shortDuration(s.Every))
	} else {
		fmt.Fprintf(&b, "at=%02d:%02d", int(s.At/time.Hour), int(s.At%time.Hour/time.Minute))
	}
	fmt.Fprintf(&b, ",scenario=%s,level=%s", s.Scenario, s.Level)
	if s.Crowd != nil {
		fmt.Fprintf(&b, ",crowd=%d", *s.Crowd)
	}
	if s.Seats != nil {
		fmt.Fprintf(&b, ",seats=%d", *s.Seats)
	}
	return b.String() + ",name=" + s.Name
}

// shortDuration drops time.Duration's zero units: 5m, not 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// ParseSchedules reads the --drops configuration: schedules separated by
// ";", each a comma-separated list of key=value:
//
//	every=5m | at=20:00   the openings: a period (1m–24h, whole minutes) or a
//	                      daily UTC time; exactly one
//	scenario=NAME         the scenario (default concert-rush)
//	level=easy|normal|hard  (default normal)
//	crowd=N               0–1,000,000 virtual users (default: the scenario's)
//	seats=N               1–100,000 (default: the scenario's)
//	name=NAME             1–20 of a-z 0-9 -, unique (default: the level)
//
// "" is DefaultSchedules; "off" (or "none") is no schedule. Scenario names
// are checked when the service starts.
func ParseSchedules(spec string) ([]Schedule, error) {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "":
		spec = DefaultSchedules
	case NoSchedules, "none":
		return nil, nil
	}
	var out []Schedule
	names := map[string]bool{}
	for i, part := range strings.Split(spec, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		s, err := parseSchedule(part)
		if err != nil {
			return nil, fmt.Errorf("schedule %d (%q): %w", i+1, strings.TrimSpace(part), err)
		}
		if names[s.Name] {
			return nil, fmt.Errorf("schedule %d (%q): name %q is taken by an earlier schedule; give each a name=", i+1, strings.TrimSpace(part), s.Name)
		}
		names[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

func parseSchedule(part string) (Schedule, error) {
	s := Schedule{Scenario: "concert-rush", Level: LevelNormal}
	seen := map[string]bool{}
	for _, item := range strings.Split(part, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			return s, fmt.Errorf("%q is not key=value", strings.TrimSpace(item))
		}
		if seen[key] {
			return s, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "every":
			s.Every, err = parseEvery(value)
		case "at":
			s.At, err = parseTimeOfDay(value)
		case "scenario":
			s.Scenario = value
		case "level":
			s.Level = Level(value)
			if !s.Level.Valid() {
				err = fmt.Errorf("level must be easy, normal or hard, got %q", value)
			}
		case "crowd":
			s.Crowd, err = parseCount("crowd", value, 0, MaxCrowd)
		case "seats":
			s.Seats, err = parseCount("seats", value, MinSeats, MaxSeats)
		case "name":
			s.Name = value
			if !scheduleName.MatchString(value) {
				err = fmt.Errorf("name must be 1-20 of a-z 0-9 -, got %q", value)
			}
		default:
			err = fmt.Errorf("unknown key %q (want every, at, scenario, level, crowd, seats or name)", key)
		}
		if err != nil {
			return s, err
		}
	}
	if seen["every"] == seen["at"] {
		return s, fmt.Errorf("give exactly one of every= and at=")
	}
	if s.Name == "" {
		s.Name = string(s.Level)
	}
	return s, nil
}

func parseEvery(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("every: %q is not a duration such as 5m or 1h", v)
	case d < MinEvery || d > MaxEvery || d%time.Minute != 0:
		return 0, fmt.Errorf("every must be whole minutes from %s to %s, got %s", MinEvery, MaxEvery, v)
	}
	return d, nil
}

func parseTimeOfDay(v string) (time.Duration, error) {
	t, err := time.Parse("15:04", v)
	if err != nil {
		return 0, fmt.Errorf("at must be a UTC time of day HH:MM, got %q", v)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

func parseCount(field, v string, lo, hi int) (*int, error) {
	n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
	if err != nil || n < lo || n > hi {
		return nil, fmt.Errorf("%s must be a whole number from %d to %d, got %q", field, lo, hi, v)
	}
	return &n, nil
}
