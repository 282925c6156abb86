package queue

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

//go:embed testdata/join_one.lua
var luaJoinOne string

// joinArgs is one join's ARGV past NOW and MAXLEN.
type joinArgs struct{ user, code, force, dev, proven string }

// TestJoinBatchMatchesOneByOne holds join.lua's batches to the one-join
// script they replaced (testdata/join_one.lua): two identical events, one
// given a random run of joins as one batch, the other the same joins one
// call each, must answer every join alike and end with the same line,
// active set, counters, grants, device bindings and records. The runs mix
// repeated users, shared devices, priority codes good and bad, forced
// priority, direct admissions up to the capacity, expired windows, the
// reserved seq and admission caps, every policy and paused events, and every
// queue mode: closed, passthrough, random_start before its opening (joins
// pre-queue) and after it (the first join begins the draw), with and
// without a proof-of-work challenge, with and without priority grants.
func TestJoinBatchMatchesOneByOne(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	one := script(luaJoinOne)
	eng := New(rdb, []byte("test-token-key"), WithBatching(Batching{}))
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	policies := []Policy{PolicyCapacity, PolicyCapacity, PolicyBatch, PolicyAdaptive}
	answers := map[string]int{} // how often each answer came, over all trials
	plain := 0                  // new waiting joins on fifo events without grants: join.lua's short way
	shortest := 0               // batches of the shortest way's kind all put in line
	pool := []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "pre0", "pre1", "pre2", "g1", "VIRTUAL:b"}
	for trial := range 120 {
		rng := rand.New(rand.NewPCG(uint64(trial), 15))
		ev := Event{Seats: 10, Capacity: 1 + rng.IntN(4), AdmitBatch: 1 + rng.IntN(4), AdmitIntervalMS: 100,
			ActiveTTLS: 60, Policy: policies[rng.IntN(len(policies))], MaxTPS: 10, PriorityShare: 0.3,
			Paused: rng.IntN(5) == 0}
		modes := []QueueMode{ModeFIFO, ModeFIFO, ModeClosed, ModePassthrough, ModeRandomStart}
		if ev.QueueMode = modes[rng.IntN(len(modes))]; ev.QueueMode == ModeRandomStart {
			// The pre-queue opens an hour before t0, or 10 s after it (a
			// join at t0 is then too early even for the pre-queue).
			pre := time.UnixMilli(t0).Add([]time.Duration{-time.Hour, 10 * time.Second}[rng.IntN(2)])
			opens := time.UnixMilli(t0).Add(30 * time.Second)
			ev.PrequeueOpensAt, ev.OpensAt = &pre, &opens
		}
		if rng.IntN(3) == 0 {
			ev.Challenge, ev.PowBits = ChallengePow, 8
		}
		inc := Incarnation{Mark: "m", SeqCap: int64(6 + rng.IntN(20)), AdmitCap: int64(1 + rng.IntN(6))}
		pre := make([]joinArgs, rng.IntN(4))
		for i := range pre {
			pre[i] = joinArgs{user: fmt.Sprintf("pre%d", i), dev: []string{"", "d0"}[rng.IntN(2)], proven: "1"}
		}
		// Some trials come back after the pre-joined windows ran out.
		now := t0 + int64(rng.IntN(2))*61_000
		joins := make([]joinArgs, 1+rng.IntN(24))
		for i := range joins {
			j := joinArgs{user: pool[rng.IntN(len(pool))]}
			switch rng.IntN(8) {
			case 0:
				j.code = []string{"C1", "C2", "BAD"}[rng.IntN(3)]
			case 1:
				j.force = "1"
			}
			if rng.IntN(3) == 0 {
				j.dev = fmt.Sprintf("d%d", rng.IntN(3))
			}
			if rng.IntN(4) != 0 {
				j.proven = "1"
			}
			joins[i] = j
		}
		// Half the events grant no priority: plain joins take join.lua's
		// short way only then.
		grants := rng.IntN(2) == 0
		// A fifth of the trials send a batch of plain joins of distinct
		// users to a fifo event without grants: join.lua's shortest way
		// when nobody of them holds anything and the priority lane is empty.
		short := trial%5 == 0
		if short {
			ev.QueueMode, ev.PrequeueOpensAt, ev.OpensAt, grants = ModeFIFO, nil, nil, false
			joins = joins[:0]
			for _, k := range rng.Perm(8)[:1+rng.IntN(8)] {
				joins = append(joins, joinArgs{user: pool[k], proven: []string{"", "1"}[rng.IntN(2)]})
			}
			// The shortest way puts the batch in line before it knows
			// whether the lane keeps anyone out, and takes it back when it
			// does: some batches, on a batch-policy event (nobody admitted
			// on join), bring a user twice, a user who waits already, or
			// one join past the reserved seqs.
			if (trial/5)%4 != 0 {
				ev.Policy, ev.Challenge, ev.PowBits = PolicyBatch, "", 0
			}
			// Some bring no proof to an event that asks for it: plain
			// joins, every one refused.
			if (trial/5)%8 == 4 {
				ev.Challenge, ev.PowBits = ChallengePow, 8
				for i := range joins {
					joins[i].proven = ""
				}
			}
			switch (trial / 5) % 4 {
			case 1:
				joins = slices.Insert(joins, rng.IntN(len(joins)+1), joins[rng.IntN(len(joins))])
			case 2:
				pre = append(pre, joinArgs{user: "pre9", proven: "1"})
				joins = slices.Insert(joins, rng.IntN(len(joins)+1), joinArgs{user: "pre9", proven: "1"})
			case 3:
				joins = append(joins, joinArgs{user: "u9", proven: "1"})
				inc.SeqCap = int64(len(pre) + len(joins) - 1) // at least 1: 0 would mean no cap
			}
		}
		name := fmt.Sprintf("trial %d: %d joins, %s, %s, %s, cap %d/%d, grants %t", trial, len(joins), ev.Policy,
			ev.QueueMode, ev.Challenge, inc.SeqCap, inc.AdmitCap, grants)
		t.Run(name, func(t *testing.T) {
			ids := [2]string{fmt.Sprintf("b%d", trial), fmt.Sprintf("s%d", trial)}
			for _, id := range ids {
				ev.ID, ev.Name = id, id
				if err := eng.CreateMarked(ctx, ev, inc); err != nil {
					t.Fatal(err)
				}
				if grants {
					if err := rdb.HSet(ctx, key(id, keyGrants), "c:C1", "", "c:C2", "", "u:g1", "1").Err(); err != nil {
						t.Fatal(err)
					}
				}
				for _, j := range pre {
					mustJoinOne(t, rdb, one, id, t0, j)
				}
			}
			calls := make([]*call, len(joins))
			for i, j := range joins {
				calls[i] = &call{args: append([]any{now, DefaultStreamMaxLen}, joinArgv(j.user, JoinOptions{
					PriorityCode: j.code, Priority: j.force == "1", Device: j.dev, Proven: j.proven == "1"})...)}
			}
			args := concatArgs(now, calls)
			batch := mustSplit(t, splitJoin, len(joins), scriptJoin.Run(ctx, rdb, scriptJoin.keysOf(ids[0]), args...))
			allNew := true
			for i, j := range joins {
				want := fmt.Sprint(mustJoinOne(t, rdb, one, ids[1], now, j))
				got := batch[i]
				allNew = allNew && got[0] == "NEW" && got[1] == "WAITING" && got[7] == ""
				if short && i == len(joins)-1 && allNew {
					shortest++
				}
				answers[got[0].(string)]++
				if !grants && ev.QueueMode == ModeFIFO && got[0] == "NEW" && got[1] == "WAITING" {
					plain++
				}
				switch got[0].(string) {
				case "NEW", "EXISTS":
				case "PREQUEUED":
					got = got[:3] // whether new, and the pre-queue's length
				default:
					got = got[:1] // an error's padding is no answer
				}
				if fmt.Sprint(got) != want {
					t.Errorf("join %d %+v: batch answered %v, one by one %v", i, j, got, want)
				}
			}
			b, s := dumpEvent(t, rdb, ids[0]), dumpEvent(t, rdb, ids[1])
			if b != s {
				t.Errorf("state after the batch:\n%s\none by one:\n%s", b, s)
			}
			br, sr := mustRecordLines(t, eng, ids[0]), mustRecordLines(t, eng, ids[1])
			if !slices.Equal(sorted(br), sorted(sr)) {
				t.Errorf("records after the batch:\n%s\none by one:\n%s", strings.Join(br, "\n"), strings.Join(sr, "\n"))
			}
			// An attempt's records keep their order: joined before admitted.
			joined := map[string]bool{}
			for _, r := range br {
				f := strings.Fields(r)
				joined[f[1]] = joined[f[1]] || f[0] == string(RecordJoined)
				if f[0] == string(RecordAdmitted) && !joined[f[1]] {
					t.Errorf("admitted before joined: %s", r)
				}
			}
		})
	}
	if shortest == 0 {
		t.Error("no batch of plain joins of distinct users all put in line: the trials miss join.lua's shortest way")
	}
	// The shortest way took a run's adds back (a user twice, or waiting
	// already) and its seqs back (past the cap, too): only it runs these.
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"zremrangebyscore", "decrby"} {
		if !strings.Contains(stats, "cmdstat_"+cmd+":") {
			t.Errorf("no %s ran: the trials miss the shortest way's take-back", strings.ToUpper(cmd))
		}
	}
	if plain == 0 {
		t.Error("no plain new join on a fifo event without grants: the trials miss join.lua's short way")
	}
	// The runs reach every kind of answer the modes bring.
	for _, a := range []string{"NEW", "EXISTS", "PREQUEUED", "EVENT_CLOSED", "EVENT_NOT_OPEN", "CHALLENGE_FAILED", "DEVICE_BUSY"} {
		if answers[a] == 0 {
			t.Errorf("no join answered %s: the trials miss a case (answers %v)", a, answers)
		}
	}
}

// mustSplit cuts a script's reply to n calls into their answers with split.
func mustSplit(t *testing.T, split splitter, n int, cmd *redis.Cmd) [][]any {
	t.Helper()
	reply, err := cmd.Slice()
	if err != nil {
		t.Fatal(err)
	}
	into := make([][]any, n)
	if err := split(reply, into); err != nil {
		t.Fatalf("%v: %v", err, reply)
	}
	return into
}

// mustJoinOne runs one join through the one-join script at now.
func mustJoinOne(t *testing.T, rdb redis.UniversalClient, one *luaScript, id string, now int64, j joinArgs) []any {
	t.Helper()
	r, err := one.Run(context.Background(), rdb, one.keysOf(id), now, DefaultStreamMaxLen, j.user, j.code, j.force,
		j.dev, j.proven).Slice()
	if err != nil {
		t.Fatalf("join %+v: %v", j, err)
	}
	return r
}

// dumpEvent prints what Redis holds of event id but its config and stream.
func dumpEvent(t *testing.T, rdb redis.UniversalClient, id string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	seq, _ := rdb.Get(ctx, key(id, keySeq)).Result()
	fmt.Fprintf(&b, "seq %s\n", seq)
	for _, k := range []int{keyWaiting, keyPriority, keyActive, keyPrequeue} {
		zs, err := rdb.ZRangeWithScores(ctx, key(id, k), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %v\n", keyNames[k], zs)
	}
	for _, k := range []int{keyActiveSeq, keyFinished, keyCounters, keyGrants, keyDevices} {
		h, err := rdb.HGetAll(ctx, key(id, k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %v\n", keyNames[k], h)
	}
	return b.String()
}

// mustRecordLines prints event id's records in stream order, one a line:
// kind, seq, then the rest.
func mustRecordLines(t *testing.T, eng *Engine, id string) []string {
	t.Helper()
	recs, err := eng.Records(context.Background(), id, "0", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%s %d user=%s lane=%s code=%s no=%d exp=%d at=%d", r.Kind, r.Seq, r.UserID, r.Lane,
			r.PriorityCode, r.AdmissionNo, r.ExpiresAt.UnixMilli(), r.At.UnixMilli())
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestJoinRunScoresAcrossTens: the shortest way writes a run's seqs as
// strings it builds a ten at a time (lib.lua's scored); runs that cross
// 9→10, 99→100 and 999→1000 put each user in line at exactly its seq, and
// the run entry records them so.
func TestJoinRunScoresAcrossTens(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("test-token-key"), WithBatching(Batching{}))
	if err := eng.CreateEvent(ctx, Event{ID: "tens", Name: "tens", Seats: 10, Capacity: 10, AdmitBatch: 1,
		AdmitIntervalMS: 100, ActiveTTLS: 60, Policy: PolicyBatch}); err != nil {
		t.Fatal(err)
	}
	seq := 0
	for _, n := range []int{7, 95, 3, 890, 17} {
		now := eng.now().UnixMilli()
		calls := make([]*call, n)
		for i := range n {
			calls[i] = &call{args: append([]any{now, DefaultStreamMaxLen}, joinArgv(fmt.Sprintf("u%d", seq+i+1), JoinOptions{})...)}
		}
		args := concatArgs(now, calls)
		answers := mustSplit(t, splitJoin, n, scriptJoin.Run(ctx, rdb, scriptJoin.keysOf("tens"), args...))
		for i, a := range answers {
			if a[0] != "NEW" || a[2] != int64(seq+i+1) {
				t.Fatalf("run of %d from seq %d: join %d answered %v, want NEW at seq %d", n, seq+1, i, a, seq+i+1)
			}
		}
		seq += n
	}
	line, err := rdb.ZRangeWithScores(ctx, key("tens", keyWaiting), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(line) != seq {
		t.Fatalf("line holds %d, want %d", len(line), seq)
	}
	for i, z := range line {
		if want := fmt.Sprintf("u%d", i+1); z.Member != want || z.Score != float64(i+1) {
			t.Fatalf("place %d = %v@%v, want %s@%d", i+1, z.Member, z.Score, want, i+1)
		}
	}
	recs := mustRecordLines(t, eng, "tens")
	if len(recs) != seq {
		t.Fatalf("%d records, want %d", len(recs), seq)
	}
	for i, r := range recs {
		if want := fmt.Sprintf("%s %d user=u%d ", RecordJoined, i+1, i+1); !strings.HasPrefix(r, want) {
			t.Fatalf("record %d = %q, want it to start %q", i, r, want)
		}
	}
}
