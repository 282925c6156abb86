package practice

import (
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/scenario"
)

// rush is a scenario of 1,000 users in a 1 s spike.
func rush() *scenario.Scenario {
	return &scenario.Scenario{Name: "rush", Seed: 1,
		Event: scenario.Event{Create: &scenario.EventCreate{Seats: 10, Capacity: 5, AdmitBatch: 5,
			AdmitIntervalMS: 100, ActiveTTLS: 30, Policy: "capacity"}},
		Phases: []scenario.Phase{{Name: "rush", Arrival: scenario.ArrivalSpike, Users: 1000,
			Over: scenario.Duration(time.Second), Duration: scenario.Duration(time.Second)}}}
}

// MustService is a practice service over a drop service that does no I/O:
// enough for the figures, which come from the result and the crowd plan.
func MustService(tb testing.TB) *Service {
	tb.Helper()
	drops, err := drop.New(nil, nil, nil, "test", drop.WithScenarios(rush()))
	if err != nil {
		tb.Fatal(err)
	}
	return New(drops, nil)
}

func TestYou(t *testing.T) {
	s := MustService(t)
	opens := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	d := drop.Drop{ID: "d-solo-1", Event: "drop-solo-1", Scenario: "rush", Level: drop.LevelNormal, Crowd: 1000, OpensAt: opens}
	soldOut := d
	soldOut.Final = &drop.Final{SoldOut: true}
	wait := 1500 * time.Millisecond
	admitted := opens.Add(2 * time.Second)
	result := func(o drop.Outcome, seat string) *drop.Result {
		r := &drop.Result{Seq: 41, Position: 30, Reaction: 250 * time.Millisecond, Outcome: o, Seat: seat}
		if o == drop.OutcomeSeat || o == drop.OutcomeExpired {
			r.AdmittedAt, r.Wait = &admitted, &wait
		}
		return r
	}
	tests := []struct {
		name    string
		d       drop.Drop
		r       *drop.Result
		outcome string
		seat    string
	}{
		{"did not join", d, nil, OutcomeNotJoined, ""},
		{"bought", d, result(drop.OutcomeSeat, "A-3"), OutcomeBought, "A-3"},
		{"sold out", d, result(drop.OutcomeSoldOut, ""), OutcomeSoldOut, ""},
		{"window ran out", d, result(drop.OutcomeExpired, ""), OutcomeExpired, ""},
		{"left", d, result(drop.OutcomeLeft, ""), OutcomeLeft, ""},
		{"waiting when the race closed", d, result(drop.OutcomeWaiting, ""), OutcomeWaitingWhenClosed, ""},
		{"waiting when the seats ran out", soldOut, result(drop.OutcomeWaiting, ""), OutcomeSoldOut, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := s.you(tc.d, tc.r)
			if y.Outcome != tc.outcome || y.Joined != (tc.r != nil) {
				t.Fatalf("outcome %q joined %v, want %q %v", y.Outcome, y.Joined, tc.outcome, tc.r != nil)
			}
			if got := deref(y.Seat); got != tc.seat {
				t.Errorf("seat %q, want %q", got, tc.seat)
			}
			if tc.r == nil {
				if y.ReactionMS != nil || y.JoinRank != nil || y.ReactionPercentile != nil {
					t.Errorf("figures for a race not joined: %+v", y)
				}
				return
			}
			if *y.ReactionMS != 250 || *y.JoinRank != 41 || *y.BotsAhead != 40 || *y.PositionAtJoin != 30 || *y.PeopleAhead != 0 {
				t.Errorf("figures %+v", y.Figures)
			}
			if y.Admitted != (tc.r.AdmittedAt != nil) || (y.WaitMS != nil) != y.Admitted || (y.Admitted && *y.WaitMS != 1500) {
				t.Errorf("admitted %v, wait %v", y.Admitted, y.WaitMS)
			}
			// A 250 ms press beats most of a crowd reacting like people.
			if p := y.ReactionPercentile; p == nil || *p < 50 || *p > 100 {
				t.Errorf("reaction percentile %v", p)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The reaction percentile falls as the press comes later, from 100 before
// anyone of the crowd to 0 after everyone.
func TestReactionPercentileFalls(t *testing.T) {
	s := MustService(t)
	d := drop.Drop{Scenario: "rush", Level: drop.LevelNormal}
	last := 101
	for _, ms := range []int64{0, 200, 400, 800, 1600, 3200, 60_000} {
		y := s.you(d, &drop.Result{Seq: 1, Reaction: time.Duration(ms) * time.Millisecond, Outcome: drop.OutcomeSeat, Seat: "A-1"})
		p := *y.ReactionPercentile
		if p > last {
			t.Errorf("percentile rose to %d at %d ms", p, ms)
		}
		last = p
		if (ms == 0 && p != 100) || (ms == 60_000 && p != 0) {
			t.Errorf("percentile %d at %d ms", p, ms)
		}
	}
}

// TestRunning: a running race's result is ready once the person's stored
// attempt has an end; before that the 409 says why.
func TestRunning(t *testing.T) {
	opens := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := opens.Add(time.Duration(s) * time.Second); return &v }
	tests := []struct {
		name string
		ok   bool
		r    drop.Result
		// says is the 409's words; "" for a result that is ready.
		says string
	}{
		{"not joined", false, drop.Result{}, "have not joined"},
		{"waiting", true, drop.Result{Outcome: drop.OutcomeWaiting, AttemptAt: *at(1)}, "still waiting in line"},
		{"buying", true, drop.Result{Outcome: drop.OutcomeWaiting, AttemptAt: *at(1), AdmittedAt: at(3)}, "your turn to buy"},
		// Admitted on an earlier attempt, in line again on this one.
		{"waiting again", true, drop.Result{Outcome: drop.OutcomeWaiting, AttemptAt: *at(9), AdmittedAt: at(3)}, "still waiting in line"},
		{"bought", true, drop.Result{Outcome: drop.OutcomeSeat, Seat: "A-1", AttemptAt: *at(1), AdmittedAt: at(3)}, ""},
		{"turn ran out", true, drop.Result{Outcome: drop.OutcomeExpired, AttemptAt: *at(1), AdmittedAt: at(3)}, ""},
		{"left", true, drop.Result{Outcome: drop.OutcomeLeft, AttemptAt: *at(1)}, ""},
		{"sold out while waiting", true, drop.Result{Outcome: drop.OutcomeSoldOut, AttemptAt: *at(1)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := running(tc.ok, tc.r)
			if tc.says == "" {
				if err != nil {
					t.Fatalf("running = %v, want the result ready", err)
				}
				return
			}
			if queue.ErrorCode(err) != queue.CodeRaceNotFinished || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("running = %v, want %s saying %q", err, queue.CodeRaceNotFinished, tc.says)
			}
		})
	}
}
