package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/scenario"
)

func TestBuildKnownAnswers(t *testing.T) {
	r := MustBuild(t, fixture(), fixtureRules...)
	s := r.Summary

	if r.Schema != report.Schema || r.Scenario != "practice-small" || r.Event != "practice-small-x1" || r.Seed != 7 {
		t.Errorf("identity = %q %q %q %d", r.Schema, r.Scenario, r.Event, r.Seed)
	}
	if r.Duration != 10*time.Second {
		t.Errorf("duration = %v, want 10s", r.Duration)
	}
	// Outcomes.
	wantOutcomes := map[string]int64{"bought": 3, "sold_out": 1, "expired": 1, "abandoned": 1, "failed": 1}
	if s.Bots.Total != 7 || !reflect.DeepEqual(s.Bots.Outcomes, wantOutcomes) {
		t.Errorf("bots = %d %v, want 7 %v", s.Bots.Total, s.Bots.Outcomes, wantOutcomes)
	}
	if len(s.Bots.Behaviors) != 2 || s.Bots.Behaviors[0].Behavior != "casual" || s.Bots.Behaviors[0].Total != 4 ||
		s.Bots.Behaviors[1].Outcomes["bought"] != 2 {
		t.Errorf("behaviors = %+v", s.Bots.Behaviors)
	}

	// Waiting-room counts: 6 joined, 1 abandoned; 5 admitted; 3 bot seats of 4 sold.
	checkInt := func(name string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	checkInt("joined", s.Joined, 6)
	checkInt("abandoned", s.Abandoned, 1)
	checkInt("admitted", s.Admitted, 5)
	checkInt("orders", s.Orders, 3)
	checkInt("seats virtual", s.SeatsVirtual, 3)
	checkInt("seats actual", s.SeatsActual, 1)
	checkNear(t, "abandon rate", s.AbandonRate, 1.0/6)

	// Error rate: the 500 join, the transport error and NOT_ACTIVE while
	// WAITING are unexpected; SEAT_TAKEN, SOLD_OUT and NOT_ACTIVE/EXPIRED are not.
	checkInt("requests", s.Requests, 25)
	checkInt("unexpected", s.Unexpected, 3)
	checkNear(t, "error rate", s.ErrorRate, 3.0/25)

	// Promotion, streaming bots b1 b2 b3: 10 20 500 ms. Nearest rank: p50 = 2nd, p90 = 3rd.
	checkDist(t, "promotion", s.Promotion, report.Dist{Count: 3, Min: ms(10), Mean: 176666667 * time.Nanosecond /* 530 ms / 3, rounded */, P50: ms(20), P90: ms(500), P95: ms(500), P99: ms(500), Max: ms(500)})
	// Polling bots b4 b6 learn at their next poll: 30 40 ms, reported apart.
	checkDist(t, "promotion when polling", s.PromotionPoll, report.Dist{Count: 2, Min: ms(30), Mean: ms(35), P50: ms(30), P90: ms(40), P95: ms(40), P99: ms(40), Max: ms(40)})
	// Wait: 700 800 850 900 1600 ms.
	checkDist(t, "wait", s.Wait, report.Dist{Count: 5, Min: ms(700), Mean: ms(970), P50: ms(850), P90: ms(1600), P95: ms(1600), P99: ms(1600), Max: ms(1600)})
	// Reaction: all seven bots.
	if s.Reaction.Count != 7 || s.Reaction.Min != ms(40) || s.Reaction.Max != ms(100) || s.Reaction.P50 != ms(70) {
		t.Errorf("reaction = %+v", s.Reaction)
	}

	// FIFO: admissions 1 3 2 5 4 by join order: 2 inversions in 10 pairs, tau = (10−2·2)/10.
	checkInt("fifo admitted", s.FIFO.Admitted, 5)
	checkInt("fifo pairs", s.FIFO.Pairs, 10)
	checkInt("inversions", s.FIFO.Inversions, 2)
	if s.FIFO.KendallTau == nil {
		t.Fatal("kendall tau undefined")
	}
	checkNear(t, "kendall tau", *s.FIFO.KendallTau, 0.6)

	// Metrics hold the threshold values in their units.
	checkNear(t, "promotion_p99", s.Metrics["promotion_p99"], 0.5)
	checkNear(t, "wait_p50", s.Metrics["wait_p50"], 0.85)
	checkNear(t, "seats_actual", s.Metrics["seats_actual"], 1)
	checkNear(t, "order_p99", s.Metrics["order_p99"], s.Steps[stepIndex(t, s, "order")].Latency.P99.Seconds())

	// Thresholds: the first two fail.
	wantPass := []bool{false, false, true, true, true}
	for i, th := range r.Thresholds {
		if th.Pass != wantPass[i] || !th.Measured || th.Rule != fixtureRules[i] {
			t.Errorf("threshold %d = %+v, want pass %v", i, th, wantPass[i])
		}
	}
	if r.Passed() || r.Verdict != report.VerdictFail {
		t.Errorf("Passed = %v, verdict %q; want a failed run", r.Passed(), r.Verdict)
	}

	// Timeline: second 0 holds 5 arrivals (0, 100, 200, 300, 500 ms).
	if len(r.Timeline) == 0 || r.Timeline[0].T != -1 {
		t.Fatalf("timeline starts at %+v, want second -1 (the first sample)", r.Timeline[:min(1, len(r.Timeline))])
	}
	sec := func(k int64) report.Second { return r.Timeline[k-r.Timeline[0].T] }
	if s0 := sec(0); s0.Arrivals != 5 || s0.Joins != 5 || s0.Waiting == nil || *s0.Waiting != 5 {
		t.Errorf("second 0 = %+v", s0)
	}
	if s1 := sec(1); s1.Promotions != 3 || s1.Orders != 2 || *s1.Waiting != 2 || *s1.Active != 2 {
		t.Errorf("second 1 = %+v (last sample of the second: 1800 ms)", s1)
	}
	if s3 := sec(3); s3.Waiting != nil {
		t.Errorf("second 3 has no sample, got waiting %d", *s3.Waiting)
	}
	// Wait histogram: 1600 ms / 40 → 50 ms bars, 33 of them.
	if h := r.WaitHistogram; len(h) != 33 || h[0].To != ms(50) || h[14].Count != 1 || h[32].Count != 1 {
		t.Errorf("wait histogram = %+v", h)
	}
}

func stepIndex(t *testing.T, s report.Summary, step string) int {
	t.Helper()
	for i, st := range s.Steps {
		if st.Step == step {
			return i
		}
	}
	t.Fatalf("no step %q", step)
	return -1
}

func checkNear(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func checkDist(t *testing.T, name string, got, want report.Dist) {
	t.Helper()
	if len(got.Curve) != len(report.CurveQuantiles) || got.Curve[0].Value != want.Min || got.Curve[len(got.Curve)-1].Value != want.Max {
		t.Errorf("%s curve = %+v", name, got.Curve)
	}
	got.Curve = nil
	// Percentiles come from a histogram: within 0.8% of the exact values.
	near := func(g, w time.Duration) bool { return math.Abs(float64(g-w)) <= 0.008*float64(w) }
	if near(got.P50, want.P50) && near(got.P90, want.P90) && near(got.P95, want.P95) && near(got.P99, want.P99) {
		got.P50, got.P90, got.P95, got.P99 = want.P50, want.P90, want.P95, want.P99
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v\n want %+v", name, got, want)
	}
}

// Every metric a threshold may name is computed.
func TestEveryThresholdMetricMeasured(t *testing.T) {
	r := MustBuild(t, fixture())
	for _, m := range scenario.Metrics() {
		if _, ok := r.Summary.Metrics[m.Name]; !ok {
			t.Errorf("metric %s is not computed", m.Name)
		}
	}
	if len(r.Summary.Metrics) != len(scenario.Metrics()) {
		t.Errorf("metrics has %d entries, scenario.Metrics %d", len(r.Summary.Metrics), len(scenario.Metrics()))
	}
}

// Step figures come from the steps' histograms: percentiles within 0.8% of
// the exact nearest-rank ones, counts exact.
func TestStepsFromHistograms(t *testing.T) {
	raw := randomRaw(3, 2000)
	r := MustBuild(t, raw)
	for _, step := range []string{"join", "status", "order"} {
		var ls []time.Duration
		for _, q := range raw.Requests {
			if q.Step == step {
				ls = append(ls, q.Latency)
			}
		}
		slices.Sort(ls)
		st := r.Summary.Steps[stepIndex(t, r.Summary, step)]
		if st.Requests != uint64(len(ls)) || st.Latency.Min != ls[0] || st.Latency.Max != ls[len(ls)-1] {
			t.Errorf("%s: %d requests, min %v max %v; want %d %v %v", step, st.Requests, st.Latency.Min, st.Latency.Max,
				len(ls), ls[0], ls[len(ls)-1])
		}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			exact := ls[int(math.Ceil(q*float64(len(ls))))-1]
			if got := st.Latency.Curve[slices.IndexFunc(st.Latency.Curve, func(c report.Quantile) bool { return c.Q == q })].Value; math.Abs(float64(got-exact)) > 0.008*float64(exact) {
				t.Errorf("%s p%v = %v, exact %v", step, q*100, got, exact)
			}
		}
	}
	join := MustBuild(t, fixture()).Summary.Steps[0]
	if join.StatusCodes["500"] != 1 || join.Errors["500 INTERNAL"] != 1 || join.Unexpected != 1 {
		t.Errorf("join = %+v", join)
	}
}

func TestErrorRate(t *testing.T) {
	for _, c := range []struct {
		name string
		q    report.Request
		want bool // unexpected
	}{
		// 2xx and 3xx are fine.
		{"ok", report.Request{Step: "join", Code: 200}, false},
		{"no content", report.Request{Step: "leave", Code: 204}, false},
		// The expected refusals.
		{"seat taken", report.Request{Step: "order", Code: 409, ErrCode: "SEAT_TAKEN"}, false},
		{"sold out", report.Request{Step: "order", Code: 409, ErrCode: "SOLD_OUT"}, false},
		{"not active after expiry", report.Request{Step: "order", Code: 409, ErrCode: "NOT_ACTIVE", ErrStatus: "EXPIRED"}, false},
		// Everything else.
		{"not active while waiting", report.Request{Step: "order", Code: 409, ErrCode: "NOT_ACTIVE", ErrStatus: "WAITING"}, true},
		{"not active, status unknown", report.Request{Step: "order", Code: 409, ErrCode: "NOT_ACTIVE"}, true},
		{"other 4xx", report.Request{Step: "join", Code: 429, ErrCode: "RATE_LIMITED"}, true},
		{"5xx", report.Request{Step: "status", Code: 503}, true},
		{"transport error", report.Request{Step: "stream", Error: "connection refused"}, true},
		{"no status", report.Request{Step: "stream"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := c.q
			q.At = opens
			raw := report.Raw{Scenario: "x", OpensAt: opens, Requests: []report.Request{q, {Step: "join", At: opens, Code: 200}}}
			r := MustBuild(t, raw, "error_rate == 0")
			want := 0.0
			if c.want {
				want = 0.5
			}
			checkNear(t, "error_rate", r.Summary.Metrics["error_rate"], want)
			if r.Passed() == c.want {
				t.Errorf("Passed = %v", r.Passed())
			}
		})
	}
}

func TestThresholds(t *testing.T) {
	for _, c := range []struct {
		name     string
		raw      report.Raw
		rule     string
		pass     bool
		measured bool
	}{
		// Measured and passing.
		{"tau", fixture(), "kendall_tau >= 0.6", true, true},
		{"orders", fixture(), "orders == 3", true, true},
		{"seats actual", fixture(), "seats_actual <= 1", true, true},
		{"wait p95", fixture(), "wait_p95 <= 1.6s", true, true},
		// Measured and failing.
		{"inversions", fixture(), "fifo_inversions < 2", false, true},
		{"promotion", fixture(), "promotion_max < 500ms", false, true},
		{"admitted", fixture(), "admitted > 5", false, true},
		// Not measured fails: nobody admitted, nothing joined.
		{"no promotion", report.Raw{Scenario: "empty"}, "promotion_p99 < 1s", false, false},
		{"no tau", report.Raw{Scenario: "empty"}, "kendall_tau > 0", false, false},
		{"no abandon rate", report.Raw{Scenario: "empty"}, "abandon_rate < 1%", false, false},
		// Counts are always measured.
		{"empty inversions", report.Raw{Scenario: "empty"}, "fifo_inversions == 0", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := MustBuild(t, c.raw, c.rule)
			th := r.Thresholds[0]
			if th.Pass != c.pass || th.Measured != c.measured || r.Passed() != c.pass {
				t.Errorf("%s: %+v, Passed %v; want pass %v measured %v", c.rule, th, r.Passed(), c.pass, c.measured)
			}
			want := report.VerdictFail
			if c.pass {
				want = report.VerdictPass
			}
			if r.Verdict != want {
				t.Errorf("verdict %q, want %q", r.Verdict, want)
			}
		})
	}
	if r := MustBuild(t, fixture()); !r.Passed() || r.Verdict != report.VerdictPass {
		t.Error("a report without thresholds must pass")
	}
}

func bruteFIFO(seq, adm []int64) (inv int64, tau float64, ok bool) {
	var conc, disc, tx, ty, n0 float64
	for i := range seq {
		for j := i + 1; j < len(seq); j++ {
			n0++
			dx, dy := cmpSign(seq[i], seq[j]), cmpSign(adm[i], adm[j])
			if dx == 0 {
				tx++
			}
			if dy == 0 {
				ty++
			}
			switch {
			case dx*dy > 0:
				conc++
			case dx*dy < 0:
				disc++
				inv++
			}
		}
	}
	den := math.Sqrt((n0 - tx) * (n0 - ty))
	if den == 0 {
		return inv, 0, false
	}
	return inv, (conc - disc) / den, true
}

func cmpSign(a, b int64) int {
	switch {
	case a < b:
		return 1
	case a > b:
		return -1
	}
	return 0
}

// The O(n log n) count agrees with the O(n²) one, ties included.
func TestFIFOAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for trial := range 300 {
		n := rng.IntN(60)
		seq, adm := make([]int64, n), make([]int64, n)
		ties := trial%3 == 0 // a third of the cases draw from few values
		for i, p := range rng.Perm(n) {
			seq[i], adm[i] = int64(i+1), int64(p+1)
			if ties {
				seq[i], adm[i] = int64(rng.IntN(5)), int64(rng.IntN(5))
			}
		}
		wantInv, wantTau, wantOK := bruteFIFO(seq, adm)
		inv, tau, ok := report.CountFIFO(slices.Clone(seq), slices.Clone(adm))
		if inv != wantInv || ok != wantOK || math.Abs(tau-wantTau) > 1e-12 {
			t.Fatalf("trial %d (n=%d): got %d %v %v, brute force %d %v %v\nseq %v\nadm %v",
				trial, n, inv, tau, ok, wantInv, wantTau, wantOK, seq, adm)
		}
	}
}

// A million admitted bots: k adjacent swaps give k inversions; a full
// reversal gives n(n−1)/2 and tau −1.
func TestFIFOMillion(t *testing.T) {
	const n = 1_000_000
	seq, adm := make([]int64, n), make([]int64, n)
	for i := range seq {
		seq[i], adm[i] = int64(i+1), int64(i+1)
	}
	for i := 0; i+1 < n; i += 1000 {
		adm[i], adm[i+1] = adm[i+1], adm[i]
	}
	inv, tau, ok := report.CountFIFO(seq, adm)
	if inv != n/1000 || !ok || tau < 0.999999 {
		t.Errorf("swaps: %d inversions, tau %v; want %d", inv, tau, n/1000)
	}
	for i := range adm {
		seq[i], adm[i] = int64(i+1), int64(n-i)
	}
	inv, tau, _ = report.CountFIFO(seq, adm)
	if inv != n*(n-1)/2 || tau != -1 {
		t.Errorf("reversed: %d inversions, tau %v", inv, tau)
	}
}

// --shard 1/2 and --shard 2/2, merged, give the totals of one run.
func TestMergeShardsEqualsWhole(t *testing.T) {
	raw := randomRaw(11, 400)
	whole := MustBuild(t, raw, fixtureRules...)
	a, b := split(raw)
	ra, rb := MustBuild(t, a, fixtureRules...), MustBuild(t, b)
	merged := MustMerge(t, ra, rb)

	if whole.Summary.FIFO.Inversions == 0 {
		t.Fatal("the fixture should have inversions")
	}
	if ra.Summary.FIFO.Inversions+rb.Summary.FIFO.Inversions == whole.Summary.FIFO.Inversions {
		t.Fatal("the shards' seqs should interleave, so inversions don't just add up")
	}
	if !reflect.DeepEqual(merged.Summary, whole.Summary) {
		g, _ := json.MarshalIndent(merged.Summary, "", " ")
		w, _ := json.MarshalIndent(whole.Summary, "", " ")
		t.Errorf("merged summary differs from the whole run's\nmerged: %.3000s\nwhole: %.3000s", g, w)
	}
	if !reflect.DeepEqual(merged.Timeline, whole.Timeline) || !reflect.DeepEqual(merged.WaitHistogram, whole.WaitHistogram) {
		t.Error("merged timeline or histogram differs from the whole run's")
	}
	if !reflect.DeepEqual(merged.Thresholds, whole.Thresholds) {
		t.Errorf("thresholds: merged %+v\nwhole %+v", merged.Thresholds, whole.Thresholds)
	}
	if len(merged.Runs) != 1 || !reflect.DeepEqual(merged.Shards, []string{"1/2", "2/2"}) || merged.Runs[0].Final != raw.Final {
		t.Errorf("runs = %+v, shards %v", merged.Runs, merged.Shards)
	}
	// Argument order doesn't matter, except for whose thresholds count.
	other := MustMerge(t, rb, ra)
	if !reflect.DeepEqual(other.Summary, merged.Summary) || !reflect.DeepEqual(other.Raw, merged.Raw) || len(other.Thresholds) != 0 {
		t.Error("Merge(b, a) differs from Merge(a, b)")
	}
	// Merging a merge with nothing new changes nothing.
	again := MustMerge(t, merged)
	if !reflect.DeepEqual(again.Summary, merged.Summary) {
		t.Error("re-merging changed the summary")
	}
}

// Different runs keep their own event stats: finals and queues add up.
func TestMergeRuns(t *testing.T) {
	one, two := fixture(), fixture()
	two.EventID, two.Started = "practice-small-x2", two.Started.Add(time.Hour)
	two.OpensAt, two.Finished = two.OpensAt.Add(time.Hour), two.Finished.Add(time.Hour)
	for i := range two.Bots {
		b := &two.Bots[i]
		for _, ts := range []*time.Time{&b.ArrivedAt, &b.JoinedAt, &b.AdmittedAt, &b.AdmittedSeen, &b.FinishedAt} {
			if !ts.IsZero() {
				*ts = ts.Add(time.Hour)
			}
		}
	}
	for i := range two.Samples {
		two.Samples[i].At = two.Samples[i].At.Add(time.Hour)
	}
	two.Requests = slices.Clone(two.Requests)
	for i := range two.Requests {
		two.Requests[i].At = two.Requests[i].At.Add(time.Hour)
	}
	r1, r2 := MustBuild(t, one), MustBuild(t, two)
	m := MustMerge(t, r2, r1)
	s, s1 := m.Summary, r1.Summary
	if len(m.Runs) != 2 || m.Runs[0].Event != "practice-small-x1" || m.Event != "practice-small-x1" {
		t.Errorf("runs = %+v", m.Runs)
	}
	if s.Bots.Total != 2*s1.Bots.Total || s.Requests != 2*s1.Requests || s.SeatsActual != 2*s1.SeatsActual ||
		s.Event.Sold != 2*s1.Event.Sold || s.FIFO.Inversions != 2*s1.FIFO.Inversions || s.FIFO.Pairs != 2*s1.FIFO.Pairs {
		t.Errorf("merged %+v\n one run %+v", s, s1)
	}
	// Each run counts from its own opening, so the timelines line up and add.
	if len(m.Timeline) != len(r1.Timeline) || m.Timeline[1].Arrivals != 2*r1.Timeline[1].Arrivals ||
		*m.Timeline[1].Waiting != 2**r1.Timeline[1].Waiting {
		t.Errorf("timeline: merged %+v\n one %+v", m.Timeline[:2], r1.Timeline[:2])
	}
	if m.Duration != time.Hour+10*time.Second {
		t.Errorf("duration = %v", m.Duration)
	}
}

func TestMergeRefusesDuplicates(t *testing.T) {
	r := MustBuild(t, fixture())
	if _, err := report.Merge(r, r); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("merging a run with itself: %v", err)
	}
	a, _ := split(randomRaw(1, 20))
	ra := MustBuild(t, a)
	if _, err := report.Merge(ra, ra); err == nil || !strings.Contains(err.Error(), "shard 1/2") {
		t.Errorf("merging a shard with itself: %v", err)
	}
	if _, err := report.Merge(); err == nil {
		t.Error("Merge() must fail")
	}
	bad := fixture()
	bad.Shard = "3/2"
	if _, err := report.Build(bad, nil); err == nil {
		t.Error("shard 3/2 accepted")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := MustBuild(t, fixture(), fixtureRules...)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatalf("invalid JSON:\n%s", buf.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "scenario", "seed", "target", "event", "shards", "started", "finished", "duration_ns",
		"verdict", "runs", "summary", "thresholds", "timeline", "wait_histogram", "raw"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	back, err := report.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := back.WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	if again.String() != buf.String() {
		t.Errorf("JSON changed on a round trip:\n%s\n---\n%s", buf.String(), again.String())
	}
	if back.Passed() || len(back.Summary.Steps) == 0 {
		t.Error("Read lost the thresholds or the steps")
	}

	_, err = report.Read(strings.NewReader(`{"schema":"other/v9"}`))
	if !errors.Is(err, report.ErrSchema) {
		t.Errorf("Read of another schema: %v", err)
	}
}

func TestEmptyRun(t *testing.T) {
	r := MustBuild(t, report.Raw{Scenario: "empty"})
	var text, page, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if _, err := report.Read(&js); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkBuild summarises a run of 100,000 bots (about 250,000 requests).
func BenchmarkBuild(b *testing.B) {
	raw := randomRaw(5, 100_000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := report.Build(raw, nil); err != nil {
			b.Fatal(err)
		}
	}
}
