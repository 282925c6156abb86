package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// Quantiles land within 0.8% of the exact nearest-rank values; two halves
// merged equal the whole; the JSON form reads back to the same histogram.
func TestHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var whole, a, b Histogram
	var all []time.Duration
	for i := range 50_000 {
		d := time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond))
		if i%1000 == 0 {
			d = time.Duration(rng.IntN(200)) // tiny values are exact
		}
		all = append(all, d)
		whole.Add(d)
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	slices.Sort(all)
	for _, q := range []float64{0.001, 0.25, 0.5, 0.9, 0.99, 0.999} {
		exact := all[int(math.Ceil(q*float64(len(all))))-1]
		if got := whole.Quantile(q); math.Abs(float64(got-exact)) > 0.008*float64(exact)+1 {
			t.Errorf("q%v = %v, exact %v", q, got, exact)
		}
	}
	if whole.Quantile(0) != all[0] || whole.Quantile(1) != all[len(all)-1] || whole.Count != int64(len(all)) {
		t.Errorf("min/max/count = %v %v %d", whole.Quantile(0), whole.Quantile(1), whole.Count)
	}
	a.Merge(&b)
	if !reflect.DeepEqual(a.Dist(), whole.Dist()) {
		t.Errorf("merged halves %+v\n whole %+v", a.Dist(), whole.Dist())
	}
	js, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, whole) {
		t.Error("histogram changed on a JSON round trip")
	}
	for _, bad := range []string{`{"n":2,"buckets":[[5,1,5]]}`, `{"n":1,"buckets":[[5,1,900]]}`, `{"n":1,"buckets":[[-1,1,0]]}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestErrorKind(t *testing.T) {
	for _, c := range []struct {
		name string
		q    Request
		want string
	}{
		// Successes have no kind.
		{"ok", Request{Code: 200}, ""},
		// API errors: status code, API code, and the token's status.
		{"api error", Request{Code: 409, ErrCode: "SEAT_TAKEN"}, "409 SEAT_TAKEN"},
		{"not active", Request{Code: 409, ErrCode: "NOT_ACTIVE", ErrStatus: "WAITING"}, "409 NOT_ACTIVE (WAITING)"},
		{"bare 503", Request{Code: 503}, "503"},
		// Transport errors lose the URL's ids and every address.
		{"url with token", Request{Error: `Get "http://10.0.0.7:8080/api/v1/events/drop-1/queue/3f9a1c/stream": context deadline exceeded`},
			`Get /api/v1/events/{id}/queue/{id}/stream: context deadline exceeded`},
		{"dial", Request{Error: `Post "http://127.0.0.1:8080/api/v1/events/e2/queue": dial tcp 127.0.0.1:8080: socket: too many open files`},
			`Post /api/v1/events/{id}/queue: dial tcp ADDR: socket: too many open files`},
		{"reset", Request{Error: "read tcp 127.0.0.1:51234->127.0.0.1:8080: read: connection reset by peer"},
			"read tcp ADDR->ADDR: read: connection reset by peer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := errorKind(&c.q); got != c.want {
				t.Errorf("kind = %q, want %q", got, c.want)
			}
		})
	}
}

// Thousands of failures of one kind, each on its own token, are one line;
// kinds beyond maxErrorKinds fold into "other".
func TestErrorsGrouped(t *testing.T) {
	rec := NewRecorder(time.Now(), false, false)
	for i := range 5000 {
		rec.Request(Request{Step: "join", Error: `Post "http://h:1/api/v1/events/e/queue/tok` + string(rune('a'+i%26)) + `": EOF`})
	}
	for i := range maxErrorKinds + 5 {
		rec.Request(Request{Step: "status", Code: 400 + i})
	}
	a, _, _ := rec.Result()
	if e := a.Steps["join"].Errors; len(e) != 1 || e[0].Count != 5000 || e[0].Kind != "Post /api/v1/events/{id}/queue/{id}: EOF" {
		t.Errorf("join errors = %+v", e)
	}
	st := a.Steps["status"].Errors
	if len(st) != maxErrorKinds || st[len(st)-1].Kind != "other" || st[len(st)-1].Count != 6 {
		t.Errorf("status errors: %d kinds, last %+v", len(st), st[len(st)-1])
	}
}

// Arrivals later than the tolerance flag the generator as saturated.
func TestGeneratorSaturated(t *testing.T) {
	for _, c := range []struct {
		name      string
		lag       time.Duration
		started   int
		saturated bool
	}{
		{"on time", 5 * time.Millisecond, 100, false},
		{"late", 2 * time.Second, 100, true},
		// Planned arrivals that never started are a saturated generator too.
		{"missing", 0, 90, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			opens := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			rec := NewRecorder(opens, false, false)
			offs := make([]time.Duration, 100)
			for i := range offs {
				offs[i] = time.Duration(i) * 10 * time.Millisecond
			}
			rec.Plan(offs...)
			for i := range c.started {
				rec.Bot(Bot{Behavior: "b", ArrivedAt: opens.Add(offs[i] + c.lag), Scheduled: true, Lag: c.lag, Outcome: OutcomeBought})
			}
			a, _, _ := rec.Result()
			g := generatorOf(&a, []Raw{{Generator: Generator{LagTolerance: 100 * time.Millisecond}}})
			if g.Saturated != c.saturated || g.Planned != 100 || g.Arrived != int64(c.started) {
				t.Errorf("generator = %+v", g)
			}
			if c.lag > g.Tolerance && g.Late != int64(c.started) {
				t.Errorf("late = %d, want %d", g.Late, c.started)
			}
		})
	}
}
