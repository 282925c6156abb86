package practice

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/report"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

const me = "u_me"

// testRace is a race of seats seats opening at t0, closing a minute later.
func testRace(seats int) *race {
	r := newRace("s", Racer{UserID: me, Nickname: "me"}, 0, t0, t0.Add(time.Minute), t0.Add(70*time.Second))
	r.id, r.ev = "practice-t", queue.Event{ID: "practice-t", Seats: seats}
	return r
}

// rec is a record of kind for attempt seq of user at t0+ms.
func rec(kind queue.RecordKind, seq int64, user string, ms int) queue.Record {
	return queue.Record{Kind: kind, Seq: seq, UserID: user, At: t0.Add(time.Duration(ms) * time.Millisecond)}
}

func bot(n int) string { return queue.VirtualPrefix + "b" + string(rune('a'+n)) }

func TestRaceOutcomes(t *testing.T) {
	done := func(seq int64, user, seat string, ms int) queue.Record {
		r := rec(queue.RecordDone, seq, user, ms)
		r.Seat = seat
		return r
	}
	for _, tc := range []struct {
		name     string
		seats    int
		recs     []queue.Record
		botsDone bool
		at       time.Duration // after t0
		finished bool
		want     You
	}{
		// Two bots first, then the person, who is let in and buys.
		{"bought", 5, []queue.Record{
			rec(queue.RecordJoined, 1, bot(0), 100), rec(queue.RecordJoined, 2, bot(1), 200),
			rec(queue.RecordJoined, 3, me, 420), rec(queue.RecordJoined, 4, bot(2), 500),
			rec(queue.RecordAdmitted, 1, bot(0), 600), rec(queue.RecordAdmitted, 2, bot(1), 600), rec(queue.RecordAdmitted, 3, me, 1100),
			done(3, me, "A-3", 2000),
		}, true, 3 * time.Second, true, You{Joined: true, ReactionMS: p(420), JoinRank: p(3), PositionAtJoin: p(3), BotsAhead: p(2),
			PeopleAhead: p(0), Admitted: true, WaitMS: p(680), Seat: ps("A-3"), Outcome: OutcomeBought, ReactionPercentile: pi(33)}},
		// The person is done but bots still run: not yet.
		{"bots still running", 5, []queue.Record{
			rec(queue.RecordJoined, 1, me, 10), rec(queue.RecordAdmitted, 1, me, 10), done(1, me, "A-1", 500),
		}, false, 3 * time.Second, false, You{}},
		// Never joined, seats left, the event still open: the person may still join.
		{"not joined, still open", 5, []queue.Record{rec(queue.RecordJoined, 1, bot(0), 100)}, true, 10 * time.Second, false, You{}},
		// Never joined and the event has closed.
		{"not joined, closed", 5, []queue.Record{rec(queue.RecordJoined, 1, bot(0), 100)}, true, 61 * time.Second, true,
			You{Outcome: OutcomeNotJoined}},
		// Still waiting when a bot bought the last seat.
		{"waiting when sold out", 1, []queue.Record{
			rec(queue.RecordJoined, 1, bot(0), 100), rec(queue.RecordAdmitted, 1, bot(0), 100), rec(queue.RecordJoined, 2, me, 300),
			done(1, bot(0), "A-1", 900),
		}, true, 2 * time.Second, true, You{Joined: true, ReactionMS: p(300), JoinRank: p(2), PositionAtJoin: p(1), BotsAhead: p(1),
			PeopleAhead: p(0), Outcome: OutcomeSoldOut, ReactionPercentile: pi(0)}},
		// Left the line.
		{"left", 5, []queue.Record{rec(queue.RecordJoined, 1, me, 50), rec(queue.RecordLeft, 1, me, 900)}, true, 2 * time.Second, true,
			You{Joined: true, ReactionMS: p(50), JoinRank: p(1), PositionAtJoin: p(1), BotsAhead: p(0), PeopleAhead: p(0),
				Outcome: OutcomeLeft, ReactionPercentile: pi(0)}},
		// Let in, but the window ran out with seats left.
		{"expired", 5, []queue.Record{
			rec(queue.RecordJoined, 1, me, 50), rec(queue.RecordAdmitted, 1, me, 50), rec(queue.RecordExpired, 1, me, 5050),
		}, true, 6 * time.Second, true, You{Joined: true, ReactionMS: p(50), JoinRank: p(1), PositionAtJoin: p(1), BotsAhead: p(0),
			PeopleAhead: p(0), Admitted: true, WaitMS: p(0), Outcome: OutcomeExpired, ReactionPercentile: pi(0)}},
		// Let in, but every seat was gone before the window ran out.
		{"expired after the sell-out", 1, []queue.Record{
			rec(queue.RecordJoined, 1, bot(0), 10), rec(queue.RecordJoined, 2, me, 50), rec(queue.RecordAdmitted, 1, bot(0), 60),
			rec(queue.RecordAdmitted, 2, me, 60), done(1, bot(0), "A-1", 500), rec(queue.RecordExpired, 2, me, 5060),
		}, true, 6 * time.Second, true, You{Joined: true, ReactionMS: p(50), JoinRank: p(2), PositionAtJoin: p(2), BotsAhead: p(1),
			PeopleAhead: p(0), Admitted: true, WaitMS: p(10), Outcome: OutcomeSoldOut, ReactionPercentile: pi(0)}},
		// The hard end finds the person still in line with seats left.
		{"waiting at the hard end", 5, []queue.Record{rec(queue.RecordJoined, 1, me, 50)}, false, 70 * time.Second, true,
			You{Joined: true, ReactionMS: p(50), JoinRank: p(1), PositionAtJoin: p(1), BotsAhead: p(0), PeopleAhead: p(0),
				Outcome: OutcomeWaitingWhenClosed, ReactionPercentile: pi(0)}},
		// The hard end finds the person let in, not buying.
		{"active at the hard end", 5, []queue.Record{rec(queue.RecordJoined, 1, me, 50), rec(queue.RecordAdmitted, 1, me, 80)},
			false, 70 * time.Second, true, You{Joined: true, ReactionMS: p(50), JoinRank: p(1), PositionAtJoin: p(1), BotsAhead: p(0),
				PeopleAhead: p(0), Admitted: true, WaitMS: p(30), Outcome: OutcomeExpired, ReactionPercentile: pi(0)}},
		// The person's second attempt does not replace the first.
		{"first attempt counts", 5, []queue.Record{
			rec(queue.RecordJoined, 1, me, 50), rec(queue.RecordLeft, 1, me, 100), rec(queue.RecordJoined, 2, me, 150),
			rec(queue.RecordAdmitted, 2, me, 150), done(2, me, "A-1", 300),
		}, true, time.Second, true, You{Joined: true, ReactionMS: p(50), JoinRank: p(1), PositionAtJoin: p(1), BotsAhead: p(0),
			PeopleAhead: p(0), Outcome: OutcomeLeft, ReactionPercentile: pi(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRace(tc.seats)
			for _, x := range tc.recs {
				r.apply(x)
			}
			if tc.botsDone {
				r.botsFinished(report.Raw{Bots: []report.Bot{{Outcome: report.OutcomeBought}, {Outcome: report.OutcomeSoldOut}}})
			}
			res, ok := r.finish(t0.Add(tc.at))
			if ok != tc.finished {
				t.Fatalf("finished = %v, want %v", ok, tc.finished)
			}
			if !ok {
				return
			}
			if got := res.You; !youEqual(got, tc.want) {
				t.Errorf("you:\n got  %s\n want %s", show(got), show(tc.want))
			}
			if _, again := r.finish(t0.Add(tc.at + time.Second)); again {
				t.Error("a race finished twice")
			}
		})
	}
}

func p(v int64) *int64       { return &v }
func pi(v int) *int          { return &v }
func ps(v string) *string    { return &v }
func show(y You) string      { return youString(y) }
func youEqual(a, b You) bool { return youString(a) == youString(b) }

func youString(y You) string {
	f := func(v *int64) any {
		if v == nil {
			return nil
		}
		return *v
	}
	var pct, seat any
	if y.ReactionPercentile != nil {
		pct = *y.ReactionPercentile
	}
	if y.Seat != nil {
		seat = *y.Seat
	}
	return fmt.Sprintln(y.Joined, f(y.ReactionMS), f(y.JoinRank), f(y.PositionAtJoin), f(y.BotsAhead), f(y.PeopleAhead),
		y.Admitted, f(y.WaitMS), seat, y.Outcome, pct)
}

func TestStoppedRaceEndsAtOnce(t *testing.T) {
	r := testRace(5)
	r.apply(rec(queue.RecordJoined, 1, me, 80))
	if _, ok := r.finish(t0.Add(time.Second)); ok {
		t.Fatal("finished while running")
	}
	r.stop()
	r.stop() // twice is fine
	res, ok := r.finish(t0.Add(time.Second))
	if !ok || res.You.Outcome != OutcomeWaitingWhenClosed {
		t.Fatalf("stopped race: finished %v, you %s", ok, show(res.You))
	}
}

func TestBotFigures(t *testing.T) {
	r := testRace(100)
	for i := range 10 {
		r.apply(rec(queue.RecordJoined, int64(i+1), bot(i), 100*(i+1)))
	}
	r.apply(rec(queue.RecordJoined, 11, me, 450))
	r.apply(rec(queue.RecordAdmitted, 1, bot(0), 1100)) // waited 1,000 ms
	r.apply(rec(queue.RecordAdmitted, 2, bot(1), 400))  // 200 ms
	r.botsFinished(report.Raw{Bots: []report.Bot{{Outcome: report.OutcomeBought}, {Outcome: report.OutcomeBought},
		{Outcome: report.OutcomeAbandoned}}})
	res, ok := r.finish(t0.Add(time.Hour))
	if !ok {
		t.Fatal("not finished at the hard end")
	}
	s := res.BotStats
	if s.Reaction != (Percentiles{P10: 100, P25: 300, P50: 500, P75: 800, P90: 900, P99: 1000}) {
		t.Errorf("reaction percentiles = %+v", s.Reaction)
	}
	if !slices.Equal(s.ReactionSamples, []int64{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}) {
		t.Errorf("samples = %v", s.ReactionSamples)
	}
	if s.Wait.P50 != 200 || s.Wait.P99 != 1000 {
		t.Errorf("wait percentiles = %+v", s.Wait)
	}
	if s.Bought != 2 || s.Outcomes[report.OutcomeAbandoned] != 1 || res.Bots != 3 {
		t.Errorf("outcomes = %v, bought %d, bots %d", s.Outcomes, s.Bought, res.Bots)
	}
	// 6 of the 10 bots (500 … 1,000 ms) were slower than 450 ms.
	if y := res.You; *y.ReactionPercentile != 60 || *y.BotsAhead != 10 || *y.PositionAtJoin != 11 {
		t.Errorf("you = %s", show(y))
	}
}

func TestSamples(t *testing.T) {
	var all []int64
	for i := range 2000 {
		all = append(all, int64(i))
	}
	got := samples(all, MaxSamples)
	if len(got) != MaxSamples || got[0] != 0 || got[len(got)-1] != 1999 || !slices.IsSorted(got) {
		t.Errorf("samples of 2,000: %d values from %d to %d", len(got), got[0], got[len(got)-1])
	}
	if got := samples(nil, MaxSamples); len(got) != 0 {
		t.Errorf("samples of none = %v", got)
	}
	if got := percentiles(nil); got != (Percentiles{}) {
		t.Errorf("percentiles of none = %+v", got)
	}
	if got := slowerShare(nil, 5); got != 0 {
		t.Errorf("slowerShare of none = %d", got)
	}
}
