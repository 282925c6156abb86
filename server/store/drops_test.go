package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// testDrop is a drop of scenario opening at t0 + minutes.
func testDrop(id, scenario string, minutes int) drop.Drop {
	at := t0.Add(time.Duration(minutes) * time.Minute)
	return drop.Drop{ID: id, Event: drop.EventID(id), Scenario: scenario, Level: drop.LevelHard, Crowd: 200_000,
		Seats: 2000, OpensAt: at, ClosesAt: at.Add(10 * time.Minute), Schedule: "hard", CreatedAt: t0.Add(-time.Hour), Held: true,
		Prefix: drop.CrowdPrefix}
}

func dur(d time.Duration) *time.Duration { return &d }
func at(d time.Duration) *time.Time      { v := t0.Add(d); return &v }

// testResult is user's race in d: a seat (row seatRow, bought after
// bought) when seat is not "".
func testResult(d drop.Drop, user string, position int64, reaction time.Duration, seat string, seatRow int, bought time.Duration) drop.Result {
	r := drop.Result{DropID: d.ID, UserID: user, Nickname: "nick-" + user, Seq: position + 10, Attempt: position + 10,
		AttemptAt: d.OpensAt.Add(reaction), Position: position, JoinedAt: d.OpensAt.Add(reaction), Reaction: reaction, Outcome: drop.OutcomeSoldOut,
		FalseStarts: 1, Scenario: d.Scenario, OpensAt: d.OpensAt}
	if seat != "" {
		r.Outcome, r.Seat, r.SeatRow, r.Bought = drop.OutcomeSeat, seat, seatRow, dur(bought)
		r.AdmittedAt, r.Wait = at(time.Minute), dur(1500*time.Millisecond)
	}
	return r
}

// MustCreateDrops stores drops or fails the test.
func MustCreateDrops(tb testing.TB, s *store.Store, ds ...drop.Drop) {
	tb.Helper()
	for _, d := range ds {
		if err := s.CreateDrop(context.Background(), d); err != nil {
			tb.Fatalf("create drop %s: %v", d.ID, err)
		}
	}
}

func dropIDs(ds []drop.Drop) []string {
	ids := []string{}
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestDrops(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			a, b, c := testDrop("d-a", "concert-rush", 10), testDrop("d-b", "concert-rush", 5), testDrop("d-c", "practice-2k", 20)
			b.Prefix = "" // as stored before drops kept their crowd's prefix
			MustCreateDrops(t, s, a, b, c)

			got, err := s.Drop(ctx, "d-a")
			if err != nil || !reflect.DeepEqual(got, a) {
				t.Fatalf("Drop(d-a) = %+v, %v\nwant %+v", got, err, a)
			}
			if got, err := s.Drop(ctx, "d-b"); err != nil || got.VirtualPrefix() != "VIRTUAL:d-b-" {
				t.Fatalf("Drop(d-b) = %+v, %v; want the legacy prefix", got, err)
			}
			_, err = s.Drop(ctx, "d-zzz")
			mustCode(t, err, queue.CodeDropNotFound)
			mustCode(t, s.CreateDrop(ctx, a), queue.CodeEventExists)

			open, err := s.OpenDrops(ctx)
			if ids := dropIDs(open); err != nil || !reflect.DeepEqual(ids, []string{"d-b", "d-a", "d-c"}) {
				t.Fatalf("OpenDrops = %v, %v; want soonest first", ids, err)
			}

			final := drop.Final{FinishedAt: t0.Add(11 * time.Minute), SoldOut: true, Sold: 2000, PeopleJoined: 31,
				Joined: 200_031, CrowdJoined: 200_000, CrowdSold: 1990, CrowdP50: 1200 * time.Millisecond,
				CrowdP90: 2500 * time.Millisecond, CrowdP99: 4 * time.Second,
				CrowdSteps: []drop.StepQuantiles{{Step: "seat", P50: 1800, P90: 4400, N: 1990}, {Step: "total", P50: 9900, P90: 16000, N: 1990}}}
			if err := s.FinishDrop(ctx, "d-a", final); err != nil {
				t.Fatal(err)
			}
			// The first finish wins: a second, from another replica, changes nothing.
			later := final
			later.FinishedAt, later.Sold = final.FinishedAt.Add(time.Second), 3
			if err := s.FinishDrop(ctx, "d-a", later); err != nil {
				t.Fatal(err)
			}
			mustCode(t, s.FinishDrop(ctx, "d-zzz", final), queue.CodeDropNotFound)
			if err := s.FinishDrop(ctx, "d-c", drop.Final{FinishedAt: t0.Add(12 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			got, _ = s.Drop(ctx, "d-a")
			if got.Final == nil || !reflect.DeepEqual(*got.Final, final) {
				t.Errorf("finished drop's figures = %+v, want %+v", got.Final, final)
			}
			open, _ = s.OpenDrops(ctx)
			if ids := dropIDs(open); !reflect.DeepEqual(ids, []string{"d-b"}) {
				t.Errorf("OpenDrops after two finished = %v", ids)
			}
			done, err := s.FinishedDrops(ctx, 20)
			if ids := dropIDs(done); err != nil || !reflect.DeepEqual(ids, []string{"d-c", "d-a"}) {
				t.Errorf("FinishedDrops = %v, %v; want latest first", ids, err)
			}
			if done, _ := s.FinishedDrops(ctx, 1); len(done) != 1 {
				t.Errorf("FinishedDrops(limit 1) gave %d", len(done))
			}

			stale, err := s.StaleDrops(ctx, t0.Add(12*time.Minute))
			if ids := dropIDs(stale); err != nil || !reflect.DeepEqual(ids, []string{"d-a"}) {
				t.Errorf("StaleDrops(before 12m) = %v, %v", ids, err)
			}
			if err := s.ForgetDrop(ctx, "d-a"); err != nil {
				t.Fatal(err)
			}
			stale, _ = s.StaleDrops(ctx, t0.Add(time.Hour))
			if ids := dropIDs(stale); !reflect.DeepEqual(ids, []string{"d-c"}) {
				t.Errorf("StaleDrops after forgetting d-a = %v", ids)
			}
		})
	}
}

func TestDropResults(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			d := testDrop("d-a", "concert-rush", 0)
			MustCreateDrops(t, s, d)
			rs := []drop.Result{
				testResult(d, "u3", 300, 900*time.Millisecond, "", 0, 0),
				testResult(d, "u1", 12, 310*time.Millisecond, "B-4", 1, 4*time.Second),
				testResult(d, "u2", 40, 420*time.Millisecond, "A-7", 0, 6*time.Second),
			}
			if err := s.SaveResults(ctx, rs); err != nil {
				t.Fatal(err)
			}
			got, err := s.Results(ctx, "d-a")
			if err != nil {
				t.Fatal(err)
			}
			want := []drop.Result{rs[1], rs[2], rs[0]} // by place in line
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Results:\n got  %+v\n want %+v", got, want)
			}
			// A save replaces: u3 was still waiting and is now admitted.
			rs[0].Outcome, rs[0].AdmittedAt, rs[0].Wait, rs[0].FalseStarts = drop.OutcomeExpired, at(2*time.Minute), dur(time.Minute), 4
			if err := s.SaveResults(ctx, rs[:1]); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Result(ctx, "d-a", "u3"); err != nil || !reflect.DeepEqual(got, rs[0]) {
				t.Errorf("Result(u3) after the update:\n got  %+v (%v)\n want %+v", got, err, rs[0])
			}
			_, err = s.Result(ctx, "d-a", "u9")
			mustCode(t, err, queue.CodeResultNotFound)
			if got, _ := s.Results(ctx, "d-zzz"); len(got) != 0 {
				t.Errorf("results of an unknown drop: %v", got)
			}
		})
	}
}

func TestDropLeaderboard(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			d1, d2, d3 := testDrop("d-1", "concert-rush", 0), testDrop("d-2", "concert-rush", 60), testDrop("d-3", "practice-2k", 120)
			MustCreateDrops(t, s, d1, d2, d3)
			save := func(rs ...drop.Result) {
				if err := s.SaveResults(ctx, rs); err != nil {
					t.Fatal(err)
				}
			}
			save(
				testResult(d1, "ann", 1, 200*time.Millisecond, "A-1", 0, 3*time.Second),
				testResult(d1, "bob", 2, 250*time.Millisecond, "B-1", 1, 2*time.Second),
				testResult(d1, "cat", 9, 100*time.Millisecond, "", 0, 0),
				testResult(d2, "bob", 1, 150*time.Millisecond, "A-2", 0, 5*time.Second),
				testResult(d2, "dan", 2, 300*time.Millisecond, "A-3", 0, 2500*time.Millisecond),
				testResult(d2, "eve", 7, 600*time.Millisecond, "", 0, 0),
				testResult(d3, "fay", 1, 90*time.Millisecond, "A-1", 0, time.Second),
			)
			board := func(since time.Time, scenario string, limit int) []string {
				t.Helper()
				rs, err := s.Leaderboard(ctx, since, scenario, limit)
				if err != nil {
					t.Fatal(err)
				}
				out := []string{}
				for _, r := range rs {
					out = append(out, fmt.Sprintf("%s@%s", r.UserID, r.DropID))
				}
				return out
			}
			for _, tc := range []struct {
				name     string
				since    time.Time
				scenario string
				limit    int
				want     []string
			}{
				// Seats first, front row first, then the quicker purchase;
				// bob's best (d2's A-2) stands for him once; no seat last,
				// the faster reaction first.
				{"all", t0.Add(-time.Hour), "", 50, []string{"fay@d-3", "dan@d-2", "ann@d-1", "bob@d-2", "cat@d-1", "eve@d-2"}},
				{"one scenario", t0.Add(-time.Hour), "concert-rush", 50, []string{"dan@d-2", "ann@d-1", "bob@d-2", "cat@d-1", "eve@d-2"}},
				// d-1 opened before since.
				{"since", t0.Add(time.Minute), "concert-rush", 50, []string{"dan@d-2", "bob@d-2", "eve@d-2"}},
				{"limit", t0.Add(-time.Hour), "", 2, []string{"fay@d-3", "dan@d-2"}},
				{"nothing", t0.Add(24 * time.Hour), "", 50, []string{}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := board(tc.since, tc.scenario, tc.limit); !reflect.DeepEqual(got, tc.want) {
						t.Errorf("Leaderboard = %v\n want %v", got, tc.want)
					}
				})
			}
		})
	}
}

// TestCreateDropRace: replicas creating one schedule's drop at once make
// one; the others are told it exists.
func TestCreateDropRace(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			s := storetest.MustOpen(t, dialect)
			const n = 16
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for range n {
				wg.Go(func() { errs <- s.CreateDrop(context.Background(), testDrop("d-race", "concert-rush", 0)) })
			}
			wg.Wait()
			close(errs)
			won := 0
			for err := range errs {
				switch queue.ErrorCode(err) {
				case "":
					won++
				case queue.CodeEventExists:
				default:
					t.Errorf("create: %v", err)
				}
			}
			if won != 1 {
				t.Errorf("%d creates won, want exactly 1", won)
			}
		})
	}
}

// TestDropsSurviveARestart: a drop and its results are there after the
// store is closed and opened again.
func TestDropsSurviveARestart(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url, dir := "", t.TempDir()
			if dialect == store.DialectPostgres {
				url = storetest.MustPostgresSchema(t)
			}
			d := testDrop("d-a", "concert-rush", 0)
			r := testResult(d, "u1", 3, 280*time.Millisecond, "A-3", 0, 2*time.Second)
			s, err := store.Open(ctx, url, dir)
			if err != nil {
				t.Fatal(err)
			}
			MustCreateDrops(t, s, d)
			if err := s.SaveResults(ctx, []drop.Result{r}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = store.Open(ctx, url, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got, err := s.Drop(ctx, "d-a"); err != nil || !reflect.DeepEqual(got, d) {
				t.Errorf("drop after a restart = %+v, %v", got, err)
			}
			if got, err := s.Result(ctx, "d-a", "u1"); err != nil || !reflect.DeepEqual(got, r) {
				t.Errorf("result after a restart = %+v, %v", got, err)
			}
		})
	}
}

// Crowd chunks: stored once, listed by index; the floor is past the chunks
// and past every virtual user of the crowd the audit trail has.
func TestCrowdChunksAndFloor(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			const prefix = "VIRTUAL:d-x-"
			floor := func() int64 {
				f, err := s.CrowdFloor(ctx, "ev1", prefix)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			if f := floor(); f != 0 {
				t.Errorf("floor of nothing = %d", f)
			}
			cs := []queue.CrowdChunk{{EventID: "ev1", Prefix: prefix, Cursor: 0, N: 250, FirstSeq: 3},
				{EventID: "ev1", Prefix: prefix, Cursor: 250, N: 100, FirstSeq: 260}}
			if err := s.SaveCrowdChunks(ctx, cs); err != nil {
				t.Fatal(err)
			}
			// Saving again changes nothing; another event's chunk is its own.
			if err := s.SaveCrowdChunks(ctx, append(cs[:1:1], queue.CrowdChunk{EventID: "ev2", Prefix: prefix, N: 900})); err != nil {
				t.Fatal(err)
			}
			got, err := s.CrowdChunks(ctx, "ev1")
			if err != nil || !reflect.DeepEqual(got, cs) {
				t.Fatalf("CrowdChunks = %+v, %v; want %+v", got, err, cs)
			}
			if f := floor(); f != 350 {
				t.Errorf("floor = %d, want 350 (the chunks' end)", f)
			}
			// An admission SQL has of index 400 (its chunk not saved yet),
			// and users that only look like the crowd's.
			if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, ctx, s, []queue.Record{
				rec("1-0", queue.RecordAdmitted, 500, prefix+"400", t0),
				rec("1-1", queue.RecordAdmitted, 501, "VIRTUAL:d-x-other-9000", t0),
				rec("1-2", queue.RecordAdmitted, 502, "VIRTUAL:d-xy-9000", t0),
			})
			if f := floor(); f != 401 {
				t.Errorf("floor = %d, want 401 (past the admitted user)", f)
			}
			// A user who has only joined lives in a join run.
			run := []queue.Record{rec("2-0", queue.RecordJoined, 600, "someone", t0), rec("2-0", queue.RecordJoined, 601, prefix+"455", t0),
				rec("2-0", queue.RecordJoined, 602, prefix+"other-9999", t0)}
			for i := range run {
				run[i].Part = i + 1
			}
			mustWrite(t, ctx, s, run)
			if f := floor(); f != 456 {
				t.Errorf("floor = %d, want 456 (past the joined user)", f)
			}
			if err := s.DeleteEvent(ctx, "ev1"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.CrowdChunks(ctx, "ev1"); len(got) != 0 {
				t.Errorf("chunks outlived their event: %+v", got)
			}
		})
	}
}

// Solo races' results stay out of the public leaderboard and list of
// finished drops, and make the person's history and the scenario's board.
func TestSoloResults(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.MustOpen(t, dialect)
			pub := testDrop("d-pub", "concert-rush", 0)
			solo1, solo2 := testDrop("d-solo-1", "concert-rush", 1), testDrop("d-solo-2", "concert-rush", 2)
			solo1.Owner, solo2.Owner, solo2.Client = "u1", "u1", "10.0.0.1"
			MustCreateDrops(t, s, pub, solo1, solo2)
			r1, r2 := testResult(solo1, "u1", 3, 900*time.Millisecond, "", 0, 0), testResult(solo2, "u1", 2, 300*time.Millisecond, "A-1", 0, time.Second)
			r1.Private, r2.Private, r2.Crowd = true, true, 2000
			rp := testResult(pub, "u2", 5, 500*time.Millisecond, "B-2", 1, 2*time.Second)
			if err := s.SaveResults(ctx, []drop.Result{r1, r2, rp}); err != nil {
				t.Fatal(err)
			}
			for _, d := range []drop.Drop{pub, solo1, solo2} {
				if err := s.FinishDrop(ctx, d.ID, drop.Final{FinishedAt: d.OpensAt.Add(time.Minute)}); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := s.Drop(ctx, "d-solo-2"); err != nil || got.Owner != "u1" || got.Client != "10.0.0.1" {
				t.Errorf("solo drop = %+v, %v", got, err)
			}
			if ds, err := s.FinishedDrops(ctx, 10); err != nil || !reflect.DeepEqual(dropIDs(ds), []string{"d-pub"}) {
				t.Errorf("finished drops %v, %v; want the public one", dropIDs(ds), err)
			}
			if b, err := s.Leaderboard(ctx, time.Time{}, "", 10); err != nil || len(b) != 1 || b[0].UserID != "u2" {
				t.Errorf("leaderboard %+v, %v; want u2's public result alone", b, err)
			}
			if h, err := s.SoloHistory(ctx, "u1", 10); err != nil || !reflect.DeepEqual(h, []drop.Result{r2, r1}) {
				t.Errorf("history %+v, %v; want the latest race first", h, err)
			}
			if b, err := s.SoloBoard(ctx, "concert-rush", 10); err != nil || len(b) != 2 || b[0].DropID != "d-solo-2" {
				t.Errorf("solo board %+v, %v; want the fastest reaction first", b, err)
			}
			if err := s.DeleteDrop(ctx, "d-solo-1"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Drop(ctx, "d-solo-1"); queue.ErrorCode(err) != queue.CodeDropNotFound {
				t.Errorf("deleted drop: %v", err)
			}
			if h, _ := s.SoloHistory(ctx, "u1", 10); len(h) != 1 {
				t.Errorf("a deleted drop's result stayed: %+v", h)
			}
		})
	}
}
