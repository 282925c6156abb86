package drop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
)

func TestParseSchedules(t *testing.T) {
	tests := []struct {
		name string
		spec string
		// want is each schedule's String(); wantErr a part of the error.
		want    []string
		wantErr string
	}{
		// No configuration is the default: a drop every five minutes.
		{name: "empty is the default", spec: "", want: []string{"every=5m,scenario=concert-rush,level=normal,crowd=20000,name=normal"}},
		{name: "off", spec: "off"},
		{name: "none", spec: " none "},
		{name: "defaults fill the rest", spec: "every=1h", want: []string{"every=1h,scenario=concert-rush,level=normal,name=normal"}},
		{name: "daily with every field", spec: "at=20:00, scenario=practice-2k, level=hard, crowd=1_000_000, seats=2000, name=prime",
			want: []string{"at=20:00,scenario=practice-2k,level=hard,crowd=1000000,seats=2000,name=prime"}},
		{name: "several", spec: "every=5m,level=easy; every=90m,level=hard;",
			want: []string{"every=5m,scenario=concert-rush,level=easy,name=easy", "every=1h30m,scenario=concert-rush,level=hard,name=hard"}},
		// Two schedules would make drops with one id.
		{name: "same name twice", spec: "every=5m;every=10m", wantErr: `name "normal" is taken`},
		{name: "neither every nor at", spec: "level=hard", wantErr: "exactly one of every= and at="},
		{name: "both every and at", spec: "every=5m,at=20:00", wantErr: "exactly one of every= and at="},
		{name: "every too short", spec: "every=30s", wantErr: "every must be whole minutes"},
		{name: "every not whole minutes", spec: "every=90s", wantErr: "every must be whole minutes"},
		{name: "every not a duration", spec: "every=often", wantErr: "not a duration"},
		{name: "bad time of day", spec: "at=25:00", wantErr: "at must be a UTC time of day"},
		{name: "bad level", spec: "every=5m,level=expert", wantErr: "level must be easy, normal or hard"},
		{name: "crowd too big", spec: "every=5m,crowd=1000001", wantErr: "crowd must be a whole number from 0 to 1000000"},
		{name: "no seats", spec: "every=5m,seats=0", wantErr: "seats must be a whole number from 1 to 100000"},
		{name: "bad name", spec: "every=5m,name=Prime Time", wantErr: "name must be 1-20"},
		{name: "unknown key", spec: "every=5m,colour=red", wantErr: `unknown key "colour"`},
		{name: "key twice", spec: "every=5m,level=easy,level=hard", wantErr: "level given twice"},
		{name: "not key=value", spec: "every=5m,hard", wantErr: `"hard" is not key=value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := drop.ParseSchedules(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSchedules(%q) error = %v, want one containing %q", tc.spec, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSchedules(%q): %v", tc.spec, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseSchedules(%q) = %v, want %d schedules", tc.spec, got, len(tc.want))
			}
			for i, s := range got {
				if s.String() != tc.want[i] {
					t.Errorf("schedule %d = %q, want %q", i, s, tc.want[i])
				}
				again, err := drop.ParseSchedules(s.String())
				if err != nil || len(again) != 1 || again[0].String() != s.String() {
					t.Errorf("String %q does not parse back: %v %v", s, again, err)
				}
			}
		})
	}
}

func TestScheduleNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	five := drop.Schedule{Every: 5 * time.Minute}
	daily := drop.Schedule{At: 20 * time.Hour}
	tests := []struct {
		name string
		s    drop.Schedule
		t    string
		want string
	}{
		{"every: the next multiple", five, "2026-11-25T20:03:10Z", "2026-11-25T20:05:00Z"},
		// An opening exactly now is not next: the one after is.
		{"every: on the dot", five, "2026-11-25T20:05:00Z", "2026-11-25T20:10:00Z"},
		{"every: other zones", five, "2026-11-25T21:03:10+01:00", "2026-11-25T20:05:00Z"},
		{"daily: later today", daily, "2026-11-25T19:59:59.5Z", "2026-11-25T20:00:00Z"},
		{"daily: tomorrow", daily, "2026-11-25T20:00:00Z", "2026-11-26T20:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Next(at(tc.t)); !got.Equal(at(tc.want)) {
				t.Errorf("Next(%s) = %s, want %s", tc.t, got, tc.want)
			}
		})
	}
}
