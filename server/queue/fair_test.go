package queue_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rushline/rushline/internal/fair"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// MustLine returns the normal lane's waiting users, head first.
func MustLine(tb testing.TB, rdb redis.Cmdable, eventID string) []string {
	tb.Helper()
	line, err := rdb.ZRange(context.Background(), queue.Keys(eventID)[2], 0, -1).Result()
	if err != nil {
		tb.Fatalf("line: %v", err)
	}
	return line
}

// MustRandomStart creates a random_start event opening in an hour, its
// pre-queue open now, and returns it with its opening.
func MustRandomStart(tb testing.TB, eng *queue.Engine, id string) (queue.Event, time.Time) {
	tb.Helper()
	opens := eng.Now().Add(time.Hour)
	pre := eng.Now()
	ev := MustEvent(tb, eng, id, func(ev *queue.Event) {
		ev.QueueMode, ev.OpensAt, ev.PrequeueOpensAt = queue.ModeRandomStart, &opens, &pre
		ev.Capacity, ev.AdmitBatch = 1000, 1000
	})
	return ev, opens
}

// MustSeed reads the revealed seed of an opened event.
func MustSeed(tb testing.TB, eng *queue.Engine, ev queue.Event) []byte {
	tb.Helper()
	info, err := eng.DrawInfo(context.Background(), ev)
	if err != nil {
		tb.Fatalf("draw info: %v", err)
	}
	if info.Commitment != fair.DrawCommitment(info.Seed) {
		tb.Fatalf("commitment %s does not match seed %s", info.Commitment, info.Seed)
	}
	seed, err := hex.DecodeString(info.Seed)
	if err != nil || len(seed) != 32 {
		tb.Fatalf("seed %q: %v", info.Seed, err)
	}
	return seed
}

func TestPrequeueAndDraw(t *testing.T) {
	ctx := context.Background()
	eng, clk, rdb := MustEngine(t)
	ev, opens := MustRandomStart(t, eng, "rs")
	var pre []string
	for i := range 250 {
		u := fmt.Sprintf("p%03d", i)
		en, created, err := eng.Join(ctx, ev.ID, u)
		if err != nil || !created || en.Status != queue.StatusPrequeued || en.Position != 0 || en.Token != "" {
			t.Fatalf("pre-queue join %s: %+v created=%v err=%v", u, en, created, err)
		}
		pre = append(pre, u)
	}
	if en, created, err := eng.Join(ctx, ev.ID, "p000"); err != nil || created || en.Status != queue.StatusPrequeued {
		t.Fatalf("second pre-queue join: %+v created=%v err=%v", en, created, err)
	}
	_, err := eng.DrawInfo(ctx, ev)
	MustCode(t, err, queue.CodeEventNotOpen, "")
	if res := MustTick(t, eng, ev.ID); res.Promoted != 0 {
		t.Fatalf("tick before the opening promoted %d", res.Promoted)
	}

	clk.Advance(opens.Sub(clk.Now()))
	// The first join after the opening begins the draw: it queues behind
	// every pre-queued user though none is placed yet, and is not admitted.
	late := MustJoin(t, eng, ev.ID, "late-1")
	if late.Status != queue.StatusWaiting {
		t.Fatalf("late join during the draw: %+v, want WAITING", late)
	}
	if en, _, _ := eng.Join(ctx, ev.ID, "p001"); en.Status != queue.StatusPrequeued {
		t.Fatalf("pre-queued user before placement: %+v", en)
	}
	res, err := eng.Draw(ctx, ev.ID)
	if err != nil || res.Drawn != 250 || res.Placed != 250 {
		t.Fatalf("draw = %+v, %v", res, err)
	}
	MustJoin(t, eng, ev.ID, "late-2")
	want := append(fair.DrawOrder(MustSeed(t, eng, ev), pre), "late-1", "late-2")
	if got := MustLine(t, rdb, ev.ID); !slices.Equal(got, want) {
		t.Fatalf("line after the draw differs from the HMAC order then FIFO:\n got %v\nwant %v", got[:5], want[:5])
	}
	// Positions are exact, and a pre-queued user's join now returns their place.
	for i, u := range []string{want[0], want[137], "late-1"} {
		en := MustJoin(t, eng, ev.ID, u)
		if wantPos := []int64{1, 138, 251}[i]; en.Status != queue.StatusWaiting || en.Position != wantPos {
			t.Errorf("%s: %s at %d, want WAITING at %d", u, en.Status, en.Position, wantPos)
		}
	}
	if again, err := eng.Draw(ctx, ev.ID); err != nil || again.Placed != 0 || again.Drawn != 250 {
		t.Fatalf("second draw = %+v, %v; want nothing placed", again, err)
	}
	// Ticks admit the drawn first.
	MustTick(t, eng, ev.ID)
	if line := MustLine(t, rdb, ev.ID); len(line) != 0 {
		t.Fatalf("after a tick of 1000, %d wait", len(line))
	}
	for _, r := range MustRecords(t, eng, ev.ID) {
		if r.Kind == queue.RecordAdmitted && r.AdmissionNo <= 250 && r.UserID != want[r.AdmissionNo-1] {
			t.Fatalf("admission %d went to %s, want %s", r.AdmissionNo, r.UserID, want[r.AdmissionNo-1])
		}
	}
}

// TestDrawWithJoinsAndReplicas hammers a draw: two engines draw at once
// while later joins pour in; the drawn still lead the line in HMAC order and
// every later join follows in seq order.
func TestDrawWithJoinsAndReplicas(t *testing.T) {
	ctx := context.Background()
	eng, clk, rdb := MustEngine(t)
	other := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now))
	ev, opens := MustRandomStart(t, eng, "rs-race")
	var pre []string
	for i := range 3000 {
		u := fmt.Sprintf("p%04d", i)
		MustJoin(t, eng, ev.ID, u)
		pre = append(pre, u)
	}
	clk.Advance(opens.Sub(clk.Now()))
	var wg sync.WaitGroup
	for _, e := range []*queue.Engine{eng, other} {
		wg.Go(func() {
			if _, err := e.Draw(ctx, ev.ID); err != nil {
				t.Errorf("draw: %v", err)
			}
		})
	}
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if _, _, err := other.Join(ctx, ev.ID, fmt.Sprintf("late-%d-%d", g, i)); err != nil {
					t.Errorf("late join: %v", err)
				}
			}
		})
	}
	wg.Wait()
	line := MustLine(t, rdb, ev.ID)
	if want := fair.DrawOrder(MustSeed(t, eng, ev), pre); !slices.Equal(line[:len(pre)], want) {
		t.Fatalf("the line's head is not the HMAC order")
	}
	if len(line) != len(pre)+400 {
		t.Fatalf("%d wait, want %d", len(line), len(pre)+400)
	}
	seqs, err := rdb.ZRangeWithScores(ctx, queue.Keys(ev.ID)[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i].Score != seqs[i-1].Score+1 {
			t.Fatalf("seqs not consecutive at %d: %v then %v", i, seqs[i-1], seqs[i])
		}
	}
}

func TestQueueModesSwitchLive(t *testing.T) {
	ctx := context.Background()
	eng, _, _ := MustEngine(t)
	ev := MustEvent(t, eng, "modes", func(ev *queue.Event) { ev.Capacity = 1 })
	first := MustJoin(t, eng, ev.ID, "a") // admitted: capacity 1
	waiting := MustJoin(t, eng, ev.ID, "b")
	if first.Status != queue.StatusActive || waiting.Status != queue.StatusWaiting {
		t.Fatalf("fifo: %s, %s", first.Status, waiting.Status)
	}
	switchTo := func(m queue.QueueMode) {
		ev.QueueMode = m
		if err := eng.PutEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		mode   queue.QueueMode
		user   string
		want   queue.Status
		code   queue.Code
		thenB1 bool
	}{
		{name: "closed refuses new joins", mode: queue.ModeClosed, user: "c", code: queue.CodeEventClosed},
		{name: "passthrough admits past capacity", mode: queue.ModePassthrough, user: "d", want: queue.StatusActive},
		{name: "fifo queues again", mode: queue.ModeFIFO, user: "e", want: queue.StatusWaiting},
	} {
		t.Run(c.name, func(t *testing.T) {
			switchTo(c.mode)
			en, _, err := eng.Join(ctx, ev.ID, c.user)
			if c.code != "" {
				MustCode(t, err, c.code, "")
			} else if err != nil || en.Status != c.want {
				t.Fatalf("join: %+v, %v; want %s", en, err, c.want)
			}
			// Whoever waits keeps their place whatever the mode.
			if st := MustStatus(t, eng, ev.ID, waiting.Token); st.Status != queue.StatusWaiting || st.Position != 1 {
				t.Fatalf("b: %s at %d, want WAITING at 1", st.Status, st.Position)
			}
			if again := MustJoin(t, eng, ev.ID, "b"); again.Token != waiting.Token {
				t.Fatalf("b's join again gave another attempt")
			}
		})
	}
}

// TestPrequeueSurvivesRestore: a restore from a snapshot (what recovery
// reads from SQL) brings back the pre-queue, or the finished draw.
func TestPrequeueSurvivesRestore(t *testing.T) {
	ctx := context.Background()
	eng, clk, rdb := MustEngine(t)
	ev, opens := MustRandomStart(t, eng, "rs-restore")
	ev.DrawSeed = queue.NewDrawSeed()
	var pre []string
	snap := queue.Snapshot{Event: ev, MaxSeq: 0}
	for i := range 120 {
		u := fmt.Sprintf("p%03d", i)
		pre = append(pre, u)
		snap.Attempts = append(snap.Attempts, queue.RestoredAttempt{UserID: u, Seq: -int64(i + 1), Status: queue.StatusPrequeued})
	}
	if err := eng.Restore(ctx, snap, true); err != nil {
		t.Fatal(err)
	}
	if en, created, err := eng.Join(ctx, ev.ID, "p007"); err != nil || created || en.Status != queue.StatusPrequeued {
		t.Fatalf("restored pre-queued user: %+v created=%v err=%v", en, created, err)
	}
	if en, created, err := eng.Join(ctx, ev.ID, "new"); err != nil || !created || en.Status != queue.StatusPrequeued {
		t.Fatalf("a new pre-queue join after the restore: %+v created=%v err=%v", en, created, err)
	}
	if recs := MustRecords(t, eng, ev.ID); len(recs) != 1 || recs[0].Kind != queue.RecordPrequeued || recs[0].Seq != -121 {
		t.Fatalf("records after the restore: %+v, want one prequeued record numbered -121", recs)
	}
	clk.Advance(opens.Sub(clk.Now()))
	MustTick(t, eng, ev.ID) // the tick runs the draw, then admits
	admitted := MustRecords(t, eng, ev.ID)
	var order []string
	for _, r := range admitted {
		if r.Kind == queue.RecordAdmitted {
			order = append(order, r.UserID)
		}
	}
	seed, _ := hex.DecodeString(ev.DrawSeed)
	if want := fair.DrawOrder(seed, append(pre, "new")); !slices.Equal(order, want) {
		t.Fatalf("admissions after the restored draw are not in HMAC order")
	}

	// After the draw, a restore of the drawn attempts keeps the draw done.
	snap.Attempts = []queue.RestoredAttempt{
		{UserID: "p000", Seq: -1, Status: queue.StatusPrequeued},
		{UserID: "p000", Seq: 5, Status: queue.StatusWaiting},
	}
	if err := eng.Restore(ctx, snap, true); err != nil {
		t.Fatal(err)
	}
	info, err := eng.DrawInfo(ctx, ev)
	if err != nil || !info.Done || info.Drawn != 1 {
		t.Fatalf("draw after restoring a drawn line: %+v, %v; want done, 1 drawn", info, err)
	}
	if line := MustLine(t, rdb, ev.ID); !slices.Equal(line, []string{"p000"}) {
		t.Fatalf("line %v, want [p000]", line)
	}
}

// TestFairOnCluster: the pre-queue, the draw and the single-use challenge
// work on a 3-master Redis Cluster, for events whose slots spread over every
// master (every key of an event shares its hash tag).
func TestFairOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-master Redis Cluster: runs in make test")
	}
	ctx := context.Background()
	c := redistest.MustCluster(t, 3)
	cc := redistest.MustClusterClient(t, c)
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(cc, []byte("test-token-key"), queue.WithClock(clk.Now))
	pre := map[string][]string{}
	var opens time.Time
	events := map[string]queue.Event{}
	for i := range 6 {
		ev, o := MustRandomStart(t, eng, fmt.Sprintf("cl-fair-%d", i))
		events[ev.ID], opens = ev, o
		for j := range 30 {
			u := fmt.Sprintf("u_%d_%d", i, j)
			if en := MustJoin(t, eng, ev.ID, u); en.Status != queue.StatusPrequeued {
				t.Fatalf("%s: %+v", u, en)
			}
			pre[ev.ID] = append(pre[ev.ID], u)
		}
		ch := eng.IssueChallenge(ev.ID, 4)
		sol, _, err := fair.SolvePow(ctx, ch.Challenge, ch.Bits)
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.CheckChallenge(ctx, ev.ID, ch.Challenge, sol); err != nil {
			t.Fatalf("first use: %v", err)
		}
		MustCode(t, eng.CheckChallenge(ctx, ev.ID, ch.Challenge, sol), queue.CodeChallengeFailed, "")
	}
	clk.t = opens
	for id, ev := range events {
		if _, err := eng.Draw(ctx, id); err != nil {
			t.Fatal(err)
		}
		if line := MustLine(t, cc, id); !slices.Equal(line, fair.DrawOrder(MustSeed(t, eng, ev), pre[id])) {
			t.Fatalf("%s: the line is not the HMAC order", id)
		}
	}
}

// TestPrequeueSurvivesRedisRestart: with AOF, a Redis crash and restart in
// the middle of the pre-queue keeps it, the seed and the challenge spent,
// and the draw after it goes as if nothing happened.
func TestPrequeueSurvivesRedisRestart(t *testing.T) {
	ctx := context.Background()
	p := redistest.MustStart(t, redistest.AppendOnly)
	rdb := redistest.MustClient(t, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now))
	ev, opens := MustRandomStart(t, eng, "rs-aof")
	var pre []string
	for i := range 50 {
		u := fmt.Sprintf("p%02d", i)
		MustJoin(t, eng, ev.ID, u)
		pre = append(pre, u)
	}
	ch := eng.IssueChallenge(ev.ID, 4)
	sol, _, err := fair.SolvePow(ctx, ch.Challenge, ch.Bits)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.CheckChallenge(ctx, ev.ID, ch.Challenge, sol); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	MustCode(t, eng.CheckChallenge(ctx, ev.ID, ch.Challenge, sol), queue.CodeChallengeFailed, "")
	clk.t = opens
	MustJoin(t, eng, ev.ID, "late")
	if _, err := eng.Draw(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	want := append(fair.DrawOrder(MustSeed(t, eng, ev), pre), "late")
	if line := MustLine(t, rdb, ev.ID); !slices.Equal(line, want) {
		t.Fatalf("line after a restart and the draw is not the HMAC order, then FIFO")
	}
}
