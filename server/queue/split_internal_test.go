package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

// TestLookupArgUnpacksInRedis sends lookupArg's msgpack through
// unpack_values as verify.lua reads it, on Redis (its cmsgpack) and on
// miniredis (the Lua reader, as make run's embedded store has no cmsgpack):
// every length class of user id and every width of seq comes back as it
// went, one lookup after the other.
func TestLookupArgUnpacksInRedis(t *testing.T) {
	for _, store := range []struct {
		name string
		rdb  redis.UniversalClient
	}{
		{"redis-server", redistest.MustClient(t, redistest.MustStart(t).Addr())},
		{"miniredis", redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})},
	} {
		t.Run(store.name, func(t *testing.T) { mustUnpackLookups(t, store.rdb) })
	}
}

// TestJoinArgvUnpacksInRedis sends joinArgv's msgpack through unpack_values
// as join.lua reads it, on Redis and on miniredis: every kind of join, with
// user ids, codes and devices in every length class of str, comes back as
// it went, alone and as a run.
func TestJoinArgvUnpacksInRedis(t *testing.T) {
	echo := script(`-- KEYS: cfg
local a = unpack_values(ARGV[3])
for i = 1, #a do
  if type(a[i]) == 'boolean' then a[i] = '<' .. tostring(a[i]) .. '>' end
end
return a`)
	cases := []struct {
		name string
		user string
		o    JoinOptions
		want []string
	}{
		{"plain", "u1", JoinOptions{}, []string{"u1"}},
		{"proven", "u2", JoinOptions{Proven: true}, []string{"<false>", "u2"}},
		{"priority code", "u3", JoinOptions{PriorityCode: "C1"}, []string{"<true>", "u3", "C1", "0", "", "0"}},
		{"forced priority, proven", "VIRTUAL:b", JoinOptions{Priority: true, Proven: true},
			[]string{"<true>", "VIRTUAL:b", "", "1", "", "1"}},
		{"device", "u4", JoinOptions{Device: strings.Repeat("d", 40)},
			[]string{"<true>", "u4", "", "0", strings.Repeat("d", 40), "0"}},
		{"fixstr edge", strings.Repeat("a", 31), JoinOptions{}, []string{strings.Repeat("a", 31)}},
		{"str8", strings.Repeat("b", 32), JoinOptions{}, []string{strings.Repeat("b", 32)}},
		{"str16", strings.Repeat("c", 256), JoinOptions{Proven: true}, []string{"<false>", strings.Repeat("c", 256)}},
		{"str16 edge", strings.Repeat("e", 1<<16-1), JoinOptions{}, []string{strings.Repeat("e", 1<<16-1)}},
		{"str32", strings.Repeat("f", 1<<16), JoinOptions{}, []string{strings.Repeat("f", 1<<16)}},
		{"any bytes", "é \x00\xc2\xc3 [1]", JoinOptions{}, []string{"é \x00\xc2\xc3 [1]"}},
	}
	for _, store := range []struct {
		name string
		rdb  redis.UniversalClient
	}{
		{"redis-server", redistest.MustClient(t, redistest.MustStart(t).Addr())},
		{"miniredis", redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})},
	} {
		t.Run(store.name, func(t *testing.T) {
			run := func(arg []byte) []string {
				t.Helper()
				got, err := echo.Run(context.Background(), store.rdb, echo.keysOf("e"), int64(0), int64(0), arg).StringSlice()
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			var all []byte
			var want []string
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					if got := run(joinArgv(tc.user, tc.o)[0].([]byte)); !slices.Equal(got, tc.want) {
						t.Errorf("unpacked %.80q, want %.80q", got, tc.want)
					}
				})
				all = append(all, joinArgv(tc.user, tc.o)[0].([]byte)...)
				want = append(want, tc.want...)
			}
			if got := run(all); !slices.Equal(got, want) {
				t.Errorf("a run's joins unpacked %.200q, want %.200q", got, want)
			}
		})
	}
}

// lookupCases are a lookup in every length class of user id and width of
// seq lookupArg writes.
var lookupCases = []struct {
	name string
	user string
	seq  int64
}{
	{"fixstr and fixint", "u", 0},
	{"fixstr edge and fixint edge", strings.Repeat("a", 31), 127},
	{"str8 and uint32", strings.Repeat("b", 32), 128},
	{"str8 edge and uint32 edge", strings.Repeat("c", 255), 1<<32 - 1},
	{"str16 and uint64", strings.Repeat("d", 256), 1 << 32},
	{"VIRTUAL id and a large seq", "VIRTUAL:bot-7", 1 << 50},
	{"str32", strings.Repeat("e", 1<<16), 5},
}

func mustUnpackLookups(t *testing.T, rdb redis.UniversalClient) {
	echo := script(`-- KEYS: cfg
local a = unpack_values(ARGV[3])
for i = 2, #a, 2 do a[i] = string.format('%.0f', a[i]) end
return a`)
	run := func(arg []byte) ([]string, error) {
		return echo.Run(context.Background(), rdb, echo.keysOf("e"), int64(0), int64(0), arg).StringSlice()
	}
	cases := lookupCases
	var all []byte
	var want []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(lookupArg(tc.user, tc.seq))
			if err != nil {
				t.Fatal(err)
			}
			if w := []string{tc.user, fmt.Sprint(tc.seq)}; fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("unpacked %q, want %q", got, w)
			}
		})
		all = append(all, lookupArg(tc.user, tc.seq)...)
		want = append(want, tc.user, fmt.Sprint(tc.seq))
	}
	got, err := run(all)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a run's lookups unpacked %q, want %q", got, want)
	}
}

// TestLookupPartsReadsLookupArg reads back what lookupArg writes, in every
// length class of user id and width of seq, and refuses anything else: a
// run of two lookups, a cut one, a foreign type byte.
func TestLookupPartsReadsLookupArg(t *testing.T) {
	for _, tc := range lookupCases {
		t.Run(tc.name, func(t *testing.T) {
			user, seq, ok := lookupParts(lookupArg(tc.user, tc.seq))
			if !ok || user != tc.user || seq != tc.seq {
				t.Errorf("read back %q, %d, %v; want %q, %d", user, seq, ok, tc.user, tc.seq)
			}
		})
	}
	one := lookupArg("VIRTUAL:u1", 70000)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"two lookups", append(append([]byte(nil), one...), lookupArg("u2", 3)...)},
		{"cut in the seq", one[:len(one)-2]},
		{"cut in the user", one[:4]},
		{"a map, not a str", append([]byte{0x81}, one[1:]...)},
		{"a negative fixint seq", append(lookupArg("u", 1)[:2], 0xff)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if user, seq, ok := lookupParts(tc.b); ok {
				t.Errorf("read %q, %d from % x; want a refusal", user, seq, tc.b)
			}
		})
	}
}

// TestSplitRefusesMalformedReplies holds the splitters to replies that do
// not answer exactly the calls of the run: each is an error, never a call
// answered with another's values.
func TestSplitRefusesMalformedReplies(t *testing.T) {
	full := []any{"EXISTS", "WAITING", int64(4), int64(2), int64(9), int64(0), int64(0), "", int64(0)}
	shared := []any{int64(0), int64(10), int64(250)}
	cases := []struct {
		name  string
		split splitter
		reply []any
		calls int
		ok    bool
	}{
		{"join: a run and a full answer", splitJoin, append(append([]any{int64(2), int64(7), int64(3), int64(0)}, full...), shared...), 3, true},
		{"join: a run longer than the calls", splitJoin, append([]any{int64(3), int64(7), int64(3), int64(0)}, shared...), 2, false},
		{"join: fewer answers than calls", splitJoin, append(append([]any{}, full...), shared...), 2, false},
		{"join: a cut full answer", splitJoin, append(append([]any{}, full[:5]...), shared...), 1, false},
		{"join: no shared values", splitJoin, []any{int64(1)}, 1, false},
		{"status: places and a full answer", splitVerify, []any{int64(3), "ACTIVE", int64(9), int64(1), int64(2), "", int64(5), int64(0), int64(0), int64(10), int64(250)}, 2, true},
		{"status: a value left over", splitVerify, []any{int64(3), int64(4), int64(5), int64(0), int64(0), int64(10), int64(250)}, 1, false},
		{"status: fewer answers than calls", splitVerify, []any{int64(3), int64(5), int64(0), int64(0), int64(10), int64(250)}, 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			into := make([][]any, tc.calls)
			err := tc.split(tc.reply, into)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %t", err, tc.ok)
			}
		})
	}
}

// TestSplitJoinExpandsRuns checks a run's answers: seq and place one more
// for each join, the place also the line's length, as join.lua answers a
// plain join alone.
func TestSplitJoinExpandsRuns(t *testing.T) {
	into := make([][]any, 3)
	if err := splitJoin([]any{int64(3), int64(41), int64(8), int64(5), int64(100), int64(10), int64(250)}, into); err != nil {
		t.Fatal(err)
	}
	for i, got := range into {
		want := fmt.Sprint([]any{"NEW", "WAITING", 41 + i, 8 + i, 8 + i, 0, 0, "", 5, 100, 10, 250})
		if fmt.Sprint(got) != want {
			t.Errorf("join %d answered %v, want %s", i, got, want)
		}
	}
}

// TestPackedConfigFollowsEveryWrite: join.lua and verify.lua read the
// config packed in fields b and m (join.lua, where Redis has struct and
// cmsgpack), j and v,
// so every write of the config repacks it (a PutEvent pausing the event
// refuses the next join its direct admission), and an event stored before
// those fields existed still joins and answers status from j, or from the
// plain fields.
func TestPackedConfigFollowsEveryWrite(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("test-token-key"))
	ev := Event{ID: "pk", Name: "pk", Seats: 10, Capacity: 5, AdmitBatch: 3, AdmitIntervalMS: 100, ActiveTTLS: 60,
		Policy: PolicyCapacity}
	if err := eng.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	en, _, err := eng.Join(ctx, "pk", "u1")
	if err != nil || en.Status != StatusActive {
		t.Fatalf("first join on a capacity event: %+v %v, want ACTIVE", en, err)
	}
	ev.Paused, ev.AdmitBatch = true, 7
	if err := eng.PutEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if v, _ := rdb.HGet(ctx, key("pk", keyCfg), "v").Result(); !strings.HasPrefix(v, "7|") {
		t.Errorf("field v %q after the batch became 7", v)
	}
	// The line is empty: a paused capacity event queues instead of admitting.
	en, _, err = eng.Join(ctx, "pk", "u2")
	if err != nil || en.Status != StatusWaiting {
		t.Fatalf("join on the paused event: %+v %v, want WAITING", en, err)
	}
	// A server from before field m (a replica not yet upgraded) rewrites j
	// and the plain fields alone: join.lua follows j, here a closing time
	// already past, then b again once a write of this version repacks it.
	cfgKey := key("pk", keyCfg)
	j, err := rdb.HGet(ctx, cfgKey, "j").Result()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(j, "|")
	f[4] = strconv.FormatInt(eng.now().Add(-time.Second).UnixMilli(), 10) // closes
	if err := rdb.HSet(ctx, cfgKey, "closes", f[4], "j", strings.Join(f, "|")).Err(); err != nil {
		t.Fatal(err)
	}
	var qe *Error
	if _, _, err := eng.Join(ctx, "pk", "u9"); !errors.As(err, &qe) || qe.Code != CodeEventClosed {
		t.Fatalf("join after an older server closed the event in j alone: %v, want %s", err, CodeEventClosed)
	}
	if err := eng.PutEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	// Field b is what join.lua reads first: the same j beside a b that
	// says the event closed a second ago closes it, whatever the other
	// fields say. Then b goes, and the config comes from m again.
	b, err := rdb.HGet(ctx, cfgKey, "b").Result()
	if err != nil {
		t.Fatalf("field b after a write: %v", err)
	}
	closed := rdb.Eval(ctx, `local f = {struct.unpack(ARGV[1], ARGV[2])}
		f[4] = tonumber(ARGV[3])
		redis.call('HSET', KEYS[1], 'b', struct.pack(ARGV[1], unpack(f, 1, 14)))
		return 1`, []string{cfgKey}, "<dBdddddddddsBs", b, eng.now().Add(-time.Second).UnixMilli())
	if err := closed.Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := eng.Join(ctx, "pk", "u8"); !errors.As(err, &qe) || qe.Code != CodeEventClosed {
		t.Fatalf("join after field b closed the event: %v, want %s", err, CodeEventClosed)
	}
	if n, err := rdb.HDel(ctx, cfgKey, "b").Result(); err != nil || n != 1 {
		t.Fatalf("field b: HDEL answered %d, %v; want it there", n, err)
	}
	if en, _, err := eng.Join(ctx, "pk", "u7"); err != nil || en.Status != StatusWaiting || en.Position != 2 {
		t.Fatalf("join without field b: %+v %v, want WAITING at 2", en, err)
	}
	// Field m (msgpack, where Redis has cmsgpack) goes next, then j and v:
	// each older form still reads the same config.
	if n, err := rdb.HDel(ctx, key("pk", keyCfg), "m").Result(); err != nil || n != 1 {
		t.Fatalf("field m: HDEL answered %d, %v; want it there", n, err)
	}
	if en, _, err := eng.Join(ctx, "pk", "u3"); err != nil || en.Status != StatusWaiting || en.Position != 3 {
		t.Fatalf("join without field m: %+v %v, want WAITING at 3", en, err)
	}
	if err := rdb.HDel(ctx, key("pk", keyCfg), "j", "v").Err(); err != nil {
		t.Fatal(err)
	}
	en4, _, err := eng.Join(ctx, "pk", "u4")
	if err != nil || en4.Status != StatusWaiting || en4.Position != 4 {
		t.Fatalf("join without the packed fields: %+v %v, want WAITING at 4", en4, err)
	}
	st, err := eng.Status(ctx, "pk", en4.Token)
	if err != nil || st.Status != StatusWaiting || st.Position != 4 {
		t.Fatalf("status without the packed fields: %+v %v, want WAITING at 4", st, err)
	}
	if _, err := eng.Status(ctx, "nope", en4.Token); err == nil {
		t.Error("status on an unknown event answered")
	}
}

// TestJoinConfigEveryWay: join_cfg gives join.lua the same config from cfg
// field b as from each older form it falls back to (m, then j, then the
// plain fields), value by value, for events that set every field it reads
// and events that leave most out.
func TestJoinConfigEveryWay(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	ctx := context.Background()
	eng := New(rdb, []byte("test-token-key"))
	read := script("-- KEYS: cfg\nlocal t = {join_cfg()}\nfor i = 1, 13 do t[i] = tostring(t[i]) end\nreturn t\n")
	at := func(d time.Duration) *time.Time { x := eng.now().Add(d); return &x }
	base := Event{Name: "cfg", Seats: 10, Capacity: 5, AdmitBatch: 3, AdmitIntervalMS: 100, ActiveTTLS: 60}
	for _, tc := range []struct {
		name string
		edit func(*Event)
		inc  Incarnation
		// want is capacity, direct, opens, closes, ttl, batch, pshare,
		// interval, seq_cap, adm_cap, preopens, mode, pow; OPENS, CLOSES
		// and PREOPENS stand for the event's times in ms.
		want string
	}{
		{"capacity, open, no caps", func(e *Event) { e.Policy = PolicyCapacity }, Incarnation{},
			"5 true 0 0 60 3 0 100 nil nil 0 f false"},
		{"capacity, paused, caps", func(e *Event) { e.Policy, e.Paused = PolicyCapacity, true }, Incarnation{Mark: "m", SeqCap: 10, AdmitCap: 3},
			"5 false 0 0 60 3 0 100 10 3 0 f false"},
		{"batch, random start, proof of work, every time", func(e *Event) {
			e.Policy, e.QueueMode, e.Challenge, e.PriorityShare = PolicyBatch, ModeRandomStart, ChallengePow, 0.25
			e.PrequeueOpensAt, e.OpensAt, e.ClosesAt = at(time.Minute), at(2*time.Minute), at(time.Hour)
		}, Incarnation{Mark: "m", SeqCap: 1, AdmitCap: 1}, "5 false OPENS CLOSES 60 3 250000 100 1 1 PREOPENS r true"},
		{"passthrough", func(e *Event) { e.Policy, e.QueueMode = PolicyBatch, ModePassthrough }, Incarnation{}, "5 false 0 0 60 3 0 100 nil nil 0 p false"},
		{"closed", func(e *Event) { e.Policy, e.QueueMode = PolicyAdaptive, ModeClosed }, Incarnation{}, "5 false 0 0 60 3 0 100 nil nil 0 c false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := base
			ev.ID = "cfg-" + strings.ReplaceAll(tc.name, " ", "")
			tc.edit(&ev)
			if err := eng.CreateMarked(ctx, ev, tc.inc); err != nil {
				t.Fatal(err)
			}
			cfgKey := key(ev.ID, keyCfg)
			got := func(form string) string {
				t.Helper()
				res, err := read.Run(ctx, rdb, read.keysOf(ev.ID), eng.now().UnixMilli(), "0").StringSlice()
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				return strings.Join(res, " ")
			}
			if n, err := rdb.HExists(ctx, cfgKey, "b").Result(); err != nil || !n {
				t.Fatalf("no field b: %v", err)
			}
			fromB := got("field b")
			want := strings.NewReplacer("PREOPENS", strconv.FormatInt(unixMilli(ev.PrequeueOpensAt), 10),
				"OPENS", strconv.FormatInt(unixMilli(ev.OpensAt), 10), "CLOSES", strconv.FormatInt(unixMilli(ev.ClosesAt), 10)).Replace(tc.want)
			if fromB != want {
				t.Errorf("from field b: %s, want %s", fromB, want)
			}
			for _, drop := range [][]string{{"b"}, {"m"}, {"j", "v"}} {
				if err := rdb.HDel(ctx, cfgKey, drop...).Err(); err != nil {
					t.Fatal(err)
				}
				if g := got("without " + drop[0]); g != fromB {
					t.Errorf("without field %s and those before it: %s, want %s as from field b", drop[0], g, fromB)
				}
			}
		})
	}
}
