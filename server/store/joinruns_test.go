package store_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// joinEntry is the n joined records of one stream entry id, seqs from
// first, users prefix+seq, the parts in lanes 'p' in the priority lane.
func joinEntry(id string, first int64, n int, prefix, lanes string, at time.Time) []queue.Record {
	recs := make([]queue.Record, n)
	for i := range recs {
		seq := first + int64(i)
		recs[i] = rec(id, queue.RecordJoined, seq, fmt.Sprintf("%s%d", prefix, seq), at)
		recs[i].Part = i + 1
		if i < len(lanes) && lanes[i] == 'p' {
			recs[i].Lane = queue.LanePriority
		}
	}
	return recs
}

// A token's joined record goes in its stream entry's join run: one row per
// entry, the same whatever batch the entry comes in, in whatever order, and
// however often; Entries and Transitions read the tokens back from it.
func TestJoinRunsAreStreamEntries(t *testing.T) {
	t.Parallel()
	lanes := "nnpnnnp" + strings.Repeat("n", 33)
	a := joinEntry("7000-0", 1, 40, "a", lanes, t0)
	b := joinEntry("7000-1", 41, 40, "b", "", t0.Add(ms))
	solo := rec("7000-2", queue.RecordJoined, 81, "solo", t0.Add(2*ms))
	admitted := rec("7001-0", queue.RecordAdmitted, 5, "a5", t0.Add(time.Second))
	admitted.AdmissionNo = 1
	left := rec("7001-1", queue.RecordLeft, 45, "b45", t0.Add(2*time.Second))

	var interleaved []queue.Record
	for i := range a {
		interleaved = append(interleaved, b[i], a[i])
	}
	interleaved = append(interleaved, left, solo, admitted)
	inOrder := slices.Concat(a, b, []queue.Record{solo, admitted, left})
	reversed := slices.Clone(inOrder)
	slices.Reverse(reversed)
	deliveries := []struct {
		name  string
		batch []queue.Record
	}{
		{"interleaved", interleaved},
		{"reversed", reversed},
		{"one entry again", a[:40:40]},
		{"all again in stream order", inOrder},
	}
	wantRuns := []store.JoinRun{
		{EventID: "ev1", FirstSeq: 1, N: 40, JoinedAt: t0, StreamID: "7000-0", FirstPart: 1, Lanes: lanes,
			Users: strings.Join(usersOf(a), "\n")},
		{EventID: "ev1", FirstSeq: 41, N: 40, JoinedAt: t0.Add(ms), StreamID: "7000-1", FirstPart: 1,
			Users: strings.Join(usersOf(b), "\n")},
		{EventID: "ev1", FirstSeq: 81, N: 1, JoinedAt: t0.Add(2 * ms), StreamID: "7000-2", Users: "solo"},
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.MustOpen(t, dialect)
			if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
				t.Fatal(err)
			}
			var first snapshot
			for i, d := range deliveries {
				mustWrite(t, ctx, s, slices.Clone(d.batch))
				runs, err := s.RunRows(ctx, "ev1")
				if err != nil {
					t.Fatal(err)
				}
				mustEqual(t, d.name+": runs", runs, wantRuns)
				snap := mustSnapshot(t, ctx, s, "ev1")
				if i == 0 {
					first = snap
					continue
				}
				mustEqual(t, d.name+": what SQL holds", snap, first)
			}

			es := first.Entries
			if len(es) != 81 {
				t.Fatalf("%d entries, want 81", len(es))
			}
			for i, e := range es {
				if e.Seq != int64(i+1) || e.JoinedAt == nil || e.UserID == "" {
					t.Fatalf("entry %d: %+v, want seq %d with its joined record", i, e, i+1)
				}
			}
			mustEqual(t, "entry 3's lane", es[2].Lane, queue.LanePriority)
			mustEqual(t, "entry 4's lane", es[3].Lane, queue.LaneNormal)
			active := es[4]
			if active.Status != queue.StatusActive || active.JoinedID != "7000-0/5" || active.AdmissionNo != 1 ||
				active.AdmittedAt == nil || !active.JoinedAt.Equal(t0) {
				t.Errorf("entry 5: %+v, want ACTIVE, number 1, joined by 7000-0/5 at t0", active)
			}
			if e := es[44]; e.Status != queue.StatusLeft || e.JoinedID != "7000-1/5" || e.UserID != "b45" {
				t.Errorf("entry 45: %+v, want b45 LEFT, joined by 7000-1/5", e)
			}
			if e := es[80]; e.Status != queue.StatusWaiting || e.JoinedID != "7000-2" || !e.StatusAt.Equal(t0.Add(2*ms)) {
				t.Errorf("entry 81: %+v, want WAITING since its joined record 7000-2", e)
			}
			mustEqual(t, "transitions of 45", transitionsOf(t, first.Transitions[45]), []store.Transition{
				{StreamID: "7000-1/5", EventID: "ev1", Seq: 45, UserID: "b45", Status: queue.StatusWaiting, At: t0.Add(ms)},
				{StreamID: "7001-1", EventID: "ev1", Seq: 45, UserID: "b45", Status: queue.StatusLeft, At: t0.Add(2 * time.Second)},
			})
			mustEqual(t, "transitions of 7", transitionsOf(t, first.Transitions[7]), []store.Transition{
				{StreamID: "7000-0/7", EventID: "ev1", Seq: 7, UserID: "a7", Status: queue.StatusWaiting, At: t0, Lane: queue.LanePriority},
			})
			if trs, err := s.Transitions(ctx, "ev1", 82); err != nil || len(trs) != 0 {
				t.Errorf("transitions of seq 82, past every run: %+v, %v", trs, err)
			}

			if err := s.DeleteEvent(ctx, "ev1"); err != nil {
				t.Fatal(err)
			}
			if runs, err := s.RunRows(ctx, "ev1"); err != nil || len(runs) != 0 {
				t.Errorf("runs outlived their event: %d, %v", len(runs), err)
			}
		})
	}
}

// An entry longer than a join_runs row holds goes in rows of MaxJoinRun
// tokens, cut by part whatever order its records come in, and Transitions
// finds each token in the row that starts less than MaxJoinRun below it.
func TestJoinRunsLongEntry(t *testing.T) {
	t.Parallel()
	n := store.MaxJoinRun + 44
	long := joinEntry("8000-0", 1, n, "c", "", t0)
	reversed := slices.Clone(long)
	slices.Reverse(reversed)
	wantRuns := []store.JoinRun{
		{EventID: "ev1", FirstSeq: 1, N: store.MaxJoinRun, JoinedAt: t0, StreamID: "8000-0", FirstPart: 1,
			Users: strings.Join(usersOf(long[:store.MaxJoinRun]), "\n")},
		{EventID: "ev1", FirstSeq: int64(store.MaxJoinRun + 1), N: 44, JoinedAt: t0, StreamID: "8000-0",
			FirstPart: store.MaxJoinRun + 1, Users: strings.Join(usersOf(long[store.MaxJoinRun:]), "\n")},
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.MustOpen(t, dialect)
			if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
				t.Fatal(err)
			}
			for _, batch := range [][]queue.Record{reversed, long} {
				mustWrite(t, ctx, s, slices.Clone(batch))
				runs, err := s.RunRows(ctx, "ev1")
				if err != nil {
					t.Fatal(err)
				}
				mustEqual(t, "runs", runs, wantRuns)
			}
			snap := mustSnapshot(t, ctx, s, "ev1")
			if len(snap.Entries) != n {
				t.Fatalf("%d entries, want %d", len(snap.Entries), n)
			}
			for _, seq := range []int64{1, int64(store.MaxJoinRun), int64(store.MaxJoinRun + 1), int64(n)} {
				user := fmt.Sprintf("c%d", seq)
				if e := snap.Entries[seq-1]; e.Seq != seq || e.UserID != user || e.JoinedID != fmt.Sprintf("8000-0/%d", seq) {
					t.Errorf("entry %d: %+v, want %s joined by 8000-0/%d", seq, e, user, seq)
				}
				mustEqual(t, fmt.Sprint("transitions of ", seq), transitionsOf(t, snap.Transitions[seq]), []store.Transition{
					{StreamID: fmt.Sprintf("8000-0/%d", seq), EventID: "ev1", Seq: seq, UserID: user, Status: queue.StatusWaiting, At: t0},
				})
			}
			if trs, err := s.Transitions(ctx, "ev1", int64(n+1)); err != nil || len(trs) != 0 {
				t.Errorf("transitions of seq %d, past every run: %+v, %v", n+1, trs, err)
			}
		})
	}
}

// A Redis that lost its last writes hands their seqs out again: a run
// that starts where a lost one did and reaches further keeps the tokens
// past it, the first run written keeps the seqs both hold, and a record
// twice in one batch makes no run of its own.
func TestJoinRunsSeqsHandedOutAgain(t *testing.T) {
	t.Parallel()
	lost := joinEntry("8000-0", 100, 3, "a", "", t0)
	again := joinEntry("9000-0", 100, 10, "b", "", t0.Add(time.Second))
	inside := joinEntry("9500-0", 101, 3, "c", "", t0.Add(2*time.Second))
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.MustOpen(t, dialect)
			mustWrite(t, ctx, s, lost)
			mustWrite(t, ctx, s, append(slices.Clone(again), again[0], again[9]))
			mustWrite(t, ctx, s, inside)
			runs, err := s.RunRows(ctx, "ev1")
			if err != nil || len(runs) != 3 || runs[0].N != 3 || runs[1].N != 10 || runs[2].N != 3 {
				t.Fatalf("runs = %+v, %v; want the three, whole", runs, err)
			}
			es, err := s.Entries(ctx, "ev1")
			if err != nil || len(es) != 10 {
				t.Fatalf("%d entries, %v; want seqs 100-109", len(es), err)
			}
			for i, e := range es {
				seq := int64(100 + i)
				want, key := fmt.Sprintf("b%d", seq), fmt.Sprintf("9000-0/%d", i+1)
				if seq < 103 {
					want, key = fmt.Sprintf("a%d", seq), fmt.Sprintf("8000-0/%d", i+1)
				}
				if e.Seq != seq || e.UserID != want || e.JoinedID != key {
					t.Errorf("entry %d: %+v, want %s joined by %s", seq, e, want, key)
				}
				trs, err := s.Transitions(ctx, "ev1", seq)
				if err != nil || len(trs) != 1 || trs[0].StreamID != key || trs[0].UserID != want {
					t.Errorf("transitions of %d: %+v, %v; want the joined record %s", seq, trs, err, key)
				}
			}
		})
	}
}

// Writers racing with overlapping batches, each entry's joins in several
// of them in different orders, leave one run per entry and every token
// once: on PostgreSQL they lock the runs and then the entries in key
// order, and none deadlocks.
func TestJoinRunsHammered(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.MustOpen(t, dialect)
			const entries, size, writers = 24, 25, 8
			var all []queue.Record
			for e := range entries {
				all = append(all, joinEntry(fmt.Sprintf("%d-0", 9000+e), int64(e*size+1), size, "u", "", t0)...)
			}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					// Writer w writes every entry but one, its admitted
					// records for seqs w, w+writers, ..., in its own order.
					batch := slices.Clone(all)
					batch = slices.DeleteFunc(batch, func(r queue.Record) bool { return r.ID == fmt.Sprintf("%d-0", 9000+w) })
					for seq := int64(w + 1); seq <= entries*size; seq += writers {
						batch = append(batch, rec(fmt.Sprintf("%d-%d", 20000+seq, w), queue.RecordAdmitted, seq,
							fmt.Sprintf("u%d", seq), t0.Add(time.Second)))
					}
					if w%2 == 1 {
						slices.Reverse(batch)
					}
					if _, err := s.WriteRecords(ctx, batch); err != nil {
						t.Errorf("writer %d: %v", w, err)
					}
				})
			}
			wg.Wait()
			runs, err := s.RunRows(ctx, "ev1")
			if err != nil || len(runs) != entries {
				t.Fatalf("%d runs, %v; want %d, one per stream entry", len(runs), err, entries)
			}
			es, err := s.Entries(ctx, "ev1")
			if err != nil || len(es) != entries*size {
				t.Fatalf("%d entries, %v; want %d", len(es), err, entries*size)
			}
			for i, e := range es {
				if e.Seq != int64(i+1) || e.Status != queue.StatusActive || e.UserID != fmt.Sprintf("u%d", i+1) ||
					e.JoinedID != fmt.Sprintf("%d-0/%d", 9000+i/size, i%size+1) {
					t.Fatalf("entry %d: %+v, want seq %d ACTIVE with its joined record", i, e, i+1)
				}
			}
		})
	}
}

func usersOf(recs []queue.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.UserID
	}
	return out
}
