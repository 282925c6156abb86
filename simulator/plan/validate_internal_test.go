package plan

import (
	"math"
	"testing"
	"time"

	"github.com/rushline/rushline/simulator/report"
)

// TestLiveTimed checks the live-timed crowd: joins move to when the live run
// answered them (and the crowd is re-sorted), a streamer's service counts
// from the admission, a poller's from when it saw it, and bots that never
// joined or were cut short keep the plan's timing.
func TestLiveTimed(t *testing.T) {
	opens := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return opens.Add(secs(s)) }
	crowd := &Crowd{Users: []User{
		{Arrival: 0, Join: 1, Think: 2, Buys: true},                // streams
		{Arrival: 1, Join: 1.5, Think: 2, Buys: true, PollRate: 1}, // polls
		{Arrival: 2, Join: 2, Think: 2, Buys: true},                // never joined
		{Arrival: 3, Join: 3, Think: 2, Buys: true},                // cancelled
	}}
	raw := &report.Raw{OpensAt: opens, Bots: []report.Bot{
		{ID: "run-a-0", JoinedAt: at(1.25), AdmittedAt: at(4), AdmittedSeen: at(4.5), FinishedAt: at(7), Outcome: report.OutcomeBought},
		{ID: "run-a-1", JoinedAt: at(1.1), AdmittedAt: at(4), AdmittedSeen: at(4.5), FinishedAt: at(7), Outcome: report.OutcomeBought},
		{ID: "run-a-2", Outcome: report.OutcomeFailed},
		{ID: "run-a-3", JoinedAt: at(3.5), AdmittedAt: at(5), AdmittedSeen: at(5), FinishedAt: at(5.5), Outcome: report.OutcomeCancelled},
	}}
	timed, lags, service := liveTimed(crowd, raw)
	for _, tc := range []struct {
		name          string
		i             int
		arrival       int
		join, service float64
	}{
		{"poller answered first comes first", 0, 1, 1.1, 0.5},
		{"streamer counts from the admission", 1, 0, 1.25, 1},
		{"never joined keeps the plan", 2, 2, 2, 0},
		{"cancelled joins late but gets no service", 3, 3, 3.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := timed.Users[tc.i]
			if u.Arrival != tc.arrival || !near(u.Join, tc.join) || !near(u.Service, tc.service) {
				t.Errorf("user %d = arrival %d, join %g, service %g; want %d, %g, %g", tc.i, u.Arrival, u.Join, u.Service,
					tc.arrival, tc.join, tc.service)
			}
		})
	}
	if crowd.Users[0].Join != 1 || crowd.Users[0].Service != 0 {
		t.Errorf("the planned crowd changed: %+v", crowd.Users[0])
	}
	if len(lags) != 3 || len(service) != 2 {
		t.Errorf("%d lags and %d service times, want 3 and 2", len(lags), len(service))
	}
	if got := p50p99(lags); got != [2]time.Duration{250 * time.Millisecond, 500 * time.Millisecond} {
		t.Errorf("join lag p50/p99 = %v, want 250ms/500ms (the early poller counts as 0)", got)
	}
}

// TestServiceSlowsCapacityLine checks the model honours Service: holding a
// capacity-bound slot longer makes the line wait longer.
func TestServiceSlowsCapacityLine(t *testing.T) {
	mk := func(service float64) *Crowd {
		users := make([]User, 200)
		for i := range users {
			users[i] = User{Arrival: i, Join: float64(i) * 0.01, Patience: math.Inf(1), Think: 1, Service: service, Buys: true}
		}
		return &Crowd{Users: users}
	}
	s := Setting{Policy: PolicyCapacity, Batch: 10, Capacity: 10, Interval: 100 * time.Millisecond}
	ev := Event{Window: time.Minute}
	fast, slow := Simulate(mk(0), s, ev), Simulate(mk(1), s, ev)
	if fast.Admitted != 200 || slow.Admitted != 200 {
		t.Fatalf("admitted %d and %d, want 200 each", fast.Admitted, slow.Admitted)
	}
	// 10 slots, each held 1 s or 2 s: about 10/s or 5/s.
	if ratio := slow.Wait.P50.Seconds() / fast.Wait.P50.Seconds(); ratio < 1.7 || ratio > 2.3 {
		t.Errorf("wait p50 %s with 1 s of service against %s without: ratio %.2f, want about 2", slow.Wait.P50,
			fast.Wait.P50, ratio)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestAgreement checks the two verdicts on rows built as Validate builds
// them: OK holds the measurement to the live-timed model, PredictionAgrees
// to the bare prediction (tolerance: 20% of live-timed or 1 s).
func TestAgreement(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		pred, live, meas     float64 // seconds
		ok, predictionAgrees bool
	}{
		{"all agree", 10, 10.5, 10.2, true, true},
		{"slow machine: only live-timed agrees", 10, 15, 15.4, true, false},
		{"model wrong both ways", 10, 10, 20, false, false},
		{"prediction lucky, live-timed off", 2, 8, 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validation{Rows: []Agreement{durationRow("wait p50", secs(tc.pred), secs(tc.live), secs(tc.meas), time.Second)}}
			if v.OK() != tc.ok || v.PredictionAgrees() != tc.predictionAgrees {
				t.Errorf("OK %v, PredictionAgrees %v; want %v, %v (%+v)", v.OK(), v.PredictionAgrees(), tc.ok,
					tc.predictionAgrees, v.Rows[0])
			}
		})
	}
}
