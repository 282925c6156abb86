package engine_test

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/internal/simtest"
	"github.com/rushline/rushline/simulator/scenario"
)

// polling is a short run of polling bots: many status calls, light load.
const polling = `
name: polling
seed: 5
event:
  create: {seats: 5, capacity: 1, admit_batch: 1, admit_interval_ms: 60000, active_ttl_s: 30}
phases:
  - {name: arrive, arrival: constant, rate: 40/s, duration: 1s}
bots:
  - name: poller
    wait: poll
    poll_interval: 100ms
    patience: {dist: constant, value: 1500ms}
`

// serverHistogram is one route's request-duration histogram from the
// server's /metrics: cumulative counts by upper bound (seconds).
type serverHistogram struct {
	les    []float64
	counts []int64
}

func mustServerHistogram(t *testing.T, target, route, code string) serverHistogram {
	t.Helper()
	res, err := http.Get(target + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	re := regexp.MustCompile(`^rushline_http_request_duration_seconds_bucket\{(.*)\} (\d+)$`)
	var h serverHistogram
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil || !regexp.MustCompile(`route="`+regexp.QuoteMeta(route)+`"`).MatchString(m[1]) ||
			!regexp.MustCompile(`code="`+code+`"`).MatchString(m[1]) {
			continue
		}
		le := regexp.MustCompile(`le="([^"]+)"`).FindStringSubmatch(m[1])[1]
		bound, err := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			bound, err = math.Inf(1), nil
		}
		n, _ := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		h.les, h.counts = append(h.les, bound), append(h.counts, n)
	}
	if len(h.les) == 0 {
		t.Fatalf("the server has no histogram for %s %s", code, route)
	}
	return h
}

// bucket is the [lo, hi] of the bucket holding the q-quantile.
func (h serverHistogram) bucket(q float64) (lo, hi float64) {
	total := h.counts[len(h.counts)-1]
	rank := int64(math.Ceil(q * float64(total)))
	i := slices.IndexFunc(h.counts, func(c int64) bool { return c >= rank })
	if i > 0 {
		lo = h.les[i-1]
	}
	return lo, h.les[i]
}

// The simulator times a request from when it was written: its figures
// agree with the server's own histogram of the same requests — the same
// count, and each quantile no faster than the server's bucket for it and,
// on this light load, not far above it. The client's wait is kept apart.
func TestLatencyAgreesWithServerHistogram(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bots against a server for a few seconds")
	}
	target := simtest.MustServer(t)
	sc, err := scenario.Parse([]byte(polling))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := engine.Run(context.Background(), sc, engine.Config{Target: target, SimulatorKey: simtest.Keys.Simulator,
		AdminKey: simtest.Keys.Admin, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := raw.Agg.Steps["status"]
	if st == nil || st.Codes["200"] < 100 {
		t.Fatalf("status step %+v: want some hundreds of polls", st)
	}
	h := mustServerHistogram(t, target, "/api/v1/events/:event/queue/:token", "200")
	if got := h.counts[len(h.counts)-1]; got != st.Codes["200"] {
		t.Errorf("the server answered %d status calls with 200, the simulator counted %d", got, st.Codes["200"])
	}
	// On loopback under this light load the transport adds well under 50 ms.
	const slack = 50 * time.Millisecond
	for _, q := range []float64{0.5, 0.9} {
		lo, hi := h.bucket(q)
		sim := st.Latency.Quantile(q)
		if sim.Seconds() < lo || sim > time.Duration(hi*float64(time.Second))+slack {
			t.Errorf("status p%v: simulator %v, server's bucket (%gs, %gs]", q*100, sim, lo, hi)
		}
	}
	if st.Wait.Count != st.Latency.Count {
		t.Errorf("client wait recorded for %d of %d requests", st.Wait.Count, st.Latency.Count)
	}
}
