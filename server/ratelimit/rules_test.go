package ratelimit

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	every := func(l Limit) Rules {
		r := Rules{}
		for _, rt := range Routes {
			r[rt] = l
		}
		return r
	}
	for _, tc := range []struct {
		name string
		spec string
		want string // Rules.String of the result
	}{
		// Nothing given: no limits.
		{"empty", "", "off"},
		// Off, explicitly.
		{"off", "off", "off"},
		// Off, padded.
		{"off padded", "  off ", "off"},
		// A bare limit covers every route; burst defaults to the rate.
		{"bare", "10/s", every(Limit{Rate: 10, Period: time.Second, Burst: 10}).String()},
		// Per route, with and without a burst.
		{"per route", "join=5/s:10,status=2/s:5,seats=2/s", "join=5/s:10,status=2/s:5,seats=2/s:2"},
		// Minutes and hours.
		{"minute and hour", "sessions=30/m,orders=100/h:3", "sessions=30/m:30,orders=100/h:3"},
		// A Go duration as the period.
		{"duration period", "join=3/10s:1", "join=3/10s:1"},
		// Sub-second period.
		{"millisecond period", "status=1/500ms", "status=1/500ms:1"},
		// Named items win over the bare one, whatever the order.
		{"named over bare", "join=1/s,5/s:7", "sessions=5/s:7,join=1/s:1,status=5/s:7,stream=5/s:7,leave=5/s:7,seats=5/s:7,orders=5/s:7,practice=5/s:7"},
		// A named off takes one route out of a bare limit.
		{"named off", "2/s,stream=off,leave=off", "sessions=2/s:2,join=2/s:2,status=2/s:2,seats=2/s:2,orders=2/s:2,practice=2/s:2"},
		// Spaces around items and parts are ignored.
		{"spaces", " join = 5 / s : 10 , seats=1/m ", "join=5/s:10,seats=1/m:1"},
		// The largest values.
		{"bounds", "join=1000000/24h:1000000", "join=1000000/24h0m0s:1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tc.spec)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.spec, err)
			}
			if got.String() != tc.want {
				t.Fatalf("Parse(%q) = %s, want %s", tc.spec, got, tc.want)
			}
			// What String writes, Parse reads back the same.
			again, err := Parse(got.String())
			if err != nil || again.String() != got.String() {
				t.Fatalf("Parse(%q) = %v, %v; want %s", got.String(), again, err, got)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec string
		want string // in the error
	}{
		// No slash.
		{"no period", "join=5", "RATE/PERIOD"},
		// Zero rate.
		{"zero rate", "join=0/s", "rate \"0\""},
		// Negative rate.
		{"negative rate", "-1/s", "rate \"-1\""},
		// Fractions are not whole numbers.
		{"fraction rate", "1.5/s", "rate \"1.5\""},
		// Too many per period.
		{"rate too big", "1000001/s", "from 1 to 1000000"},
		// Unknown unit.
		{"bad unit", "5/day", "period \"day\""},
		// Negative period.
		{"negative period", "5/-1s", "period \"-1s\""},
		// Below a millisecond.
		{"period too short", "5/10us", "from 1ms"},
		// Over a day.
		{"period too long", "5/25h", "to 24h"},
		// More than one call per microsecond.
		{"too fast", "1000000/100ms", "per microsecond"},
		// Zero burst.
		{"zero burst", "5/s:0", "burst \"0\""},
		// Burst not a number.
		{"bad burst", "5/s:lots", "burst \"lots\""},
		// Too big a burst.
		{"burst too big", "5/s:1000001", "burst"},
		// A name nobody knows, with the list of names.
		{"unknown route", "admin=5/s", "unknown route \"admin\" (routes: sessions, join"},
		// The same route twice.
		{"duplicate route", "join=5/s,join=6/s", "given twice"},
		// Two bare limits.
		{"two bare", "5/s,6/s", "only one limit"},
		// An empty item.
		{"empty item", "join=5/s,,seats=1/s", "item 2 is empty"},
		// A trailing comma.
		{"trailing comma", "join=5/s,", "item 2 is empty"},
		// off inside a list without a name.
		{"bare off in list", "off,join=5/s", "\"off\" must stand alone"},
		// A route with nothing after =.
		{"empty value", "join=", "RATE/PERIOD"},
		// A name with no limit.
		{"name only", "=5/s", "unknown route \"\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tc.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tc.spec, got)
			}
			if !strings.HasPrefix(err.Error(), "rate limit: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) error = %q, want it to contain %q", tc.spec, err, tc.want)
			}
		})
	}
}

// FuzzParse: no spec panics, and what Parse accepts it writes back in a
// form it reads to the same rules, every limit within bounds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "off", "10/s", "join=5/s:10,status=2/s:5,seats=2/s", "2/s,stream=off", "join=3/10s:1", "x=1/s", "1/0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := Parse(spec)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rate limit: ") {
				t.Fatalf("error %q lacks the prefix", err)
			}
			return
		}
		for rt, l := range r {
			if l.Rate < 1 || l.Rate > MaxRate || l.Burst < 1 || l.Burst > MaxBurst || l.Period < MinPeriod || l.Period > MaxPeriod || l.interval() < time.Microsecond {
				t.Fatalf("%s: limit out of bounds: %+v", rt, l)
			}
		}
		again, err := Parse(r.String())
		if err != nil || again.String() != r.String() {
			t.Fatalf("round trip of %q: %s → %v, %v", spec, r, again, err)
		}
	})
}
