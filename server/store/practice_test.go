package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/rushline/rushline/server/practice/record"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store/storetest"
)

func i64(v int64) *int64   { return &v }
func str(s string) *string { return &s }
func pct(v int) *int       { return &v }

// raceRecord is a finished race of user on scenario at t0+minutes; reaction
// nil means the person never joined.
func raceRecord(event, user, scenario string, minutes int, reaction *int64) record.Record {
	r := record.Record{EventID: event, Scenario: scenario, UserID: user, Nickname: "nick-" + user,
		OpensAt: t0.Add(time.Duration(minutes) * time.Minute), FinishedAt: t0.Add(time.Duration(minutes)*time.Minute + 30*time.Second),
		Bots: 300, Seats: 100, Sold: 100, You: record.You{Outcome: record.OutcomeNotJoined}}
	if reaction != nil {
		r.You = record.You{Joined: true, ReactionMS: reaction, JoinRank: i64(12), PositionAtJoin: i64(10), BotsAhead: i64(11),
			PeopleAhead: i64(0), Admitted: true, WaitMS: i64(5300), Seat: str("A-12"), Outcome: record.OutcomeBought,
			ReactionPercentile: pct(61)}
	}
	return r
}

func TestPracticeResults(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			recs := []record.Record{
				raceRecord("practice-a", "u1", "practice-small", 0, i64(420)),
				raceRecord("practice-b", "u1", "practice-small", 5, nil),
				raceRecord("practice-c", "u2", "practice-small", 1, i64(300)),
				raceRecord("practice-d", "u1", "practice-2k", 2, i64(100)),
				raceRecord("practice-e", "u3", "practice-small", 3, i64(420)),
			}
			for _, r := range recs {
				if err := s.SavePracticeResult(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			// A second save of the same race changes nothing.
			again := recs[0]
			again.You.Outcome = record.OutcomeExpired
			if err := s.SavePracticeResult(ctx, again); err != nil {
				t.Fatal(err)
			}

			got, err := s.PracticeResult(ctx, "practice-a")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, recs[0]) {
				t.Errorf("stored race:\n got  %+v\n want %+v", got, recs[0])
			}
			if got, err := s.PracticeResult(ctx, "practice-b"); err != nil || !reflect.DeepEqual(got, recs[1]) {
				t.Errorf("a race without a join:\n got  %+v (%v)\n want %+v", got, err, recs[1])
			}
			_, err = s.PracticeResult(ctx, "practice-zzz")
			mustCode(t, err, queue.CodeEventNotFound)

			for _, tc := range []struct {
				name string
				got  func() ([]record.Record, error)
				want []string
			}{
				// Newest first, every scenario, joined or not.
				{"history of u1", func() ([]record.Record, error) { return s.PracticeHistory(ctx, "u1", 50) }, []string{"practice-b", "practice-d", "practice-a"}},
				// The limit cuts the oldest.
				{"history limited", func() ([]record.Record, error) { return s.PracticeHistory(ctx, "u1", 2) }, []string{"practice-b", "practice-d"}},
				// Someone with no races.
				{"history of nobody", func() ([]record.Record, error) { return s.PracticeHistory(ctx, "u9", 50) }, []string{}},
				// Fastest first, the earlier race wins a tie, races without a join are left out.
				{"leaderboard", func() ([]record.Record, error) { return s.PracticeLeaderboard(ctx, "practice-small", 20) }, []string{"practice-c", "practice-a", "practice-e"}},
				// The limit keeps the fastest.
				{"leaderboard limited", func() ([]record.Record, error) { return s.PracticeLeaderboard(ctx, "practice-small", 1) }, []string{"practice-c"}},
				// Another scenario has its own board.
				{"leaderboard of another scenario", func() ([]record.Record, error) { return s.PracticeLeaderboard(ctx, "practice-2k", 20) }, []string{"practice-d"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					rs, err := tc.got()
					if err != nil {
						t.Fatal(err)
					}
					ids := []string{}
					for _, r := range rs {
						ids = append(ids, r.EventID)
					}
					if !reflect.DeepEqual(ids, tc.want) {
						t.Errorf("got %v, want %v", ids, tc.want)
					}
				})
			}
		})
	}
}

func TestPracticeFlagSurvivesTheEventsTable(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			ev := testEvent("practice-x", t0)
			ev.Practice = true
			if err := s.CreateEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			got, err := s.Event(ctx, "practice-x")
			if err != nil {
				t.Fatal(err)
			}
			if !got.Practice {
				t.Error("the practice flag was lost")
			}
		})
	}
}
