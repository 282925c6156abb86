package queue_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// stallLimit is the longest any one command may hold Redis.
const stallLimit = 2 * time.Millisecond

// A command's time on a CPU also holds what Redis does for it beyond the
// script's own work: a Lua GC cycle (Redis steps the collector every 50
// scripts), the first compile of a script, page faults while a hash or a
// sorted set doubles its table; on a slow virtual machine one such call
// passes the limit now and then, whatever the script. Work that grows with
// the line passes it on every call past some size instead. So a kind of
// command (a script, or a command name) fails the check when more than
// stallShare of its calls, and at least two, pass stallLimit, or when any
// one passes stallHard; the rest are logged.
const (
	stallShare = 0.02
	stallHard  = 10 * stallLimit
)

// stallCheck is a go-redis hook that reads the Redis SLOWLOG after every
// command and reports those that ran longer than stallLimit. The SLOWLOG
// times a command by the wall clock, so on a busy machine (or a busy virtual
// machine's host) a short script can show up because Redis lost its CPU
// mid-call: an entry counts only when Redis also spent more than stallLimit
// running on a CPU during the call and more than stallLimit of its time was
// not spent waiting for one (both from /proc/<pid>/schedstat). The Redis
// must be the test's own, and the calls one at a time, so every entry
// belongs to the call just made. Safe for concurrent use.
type stallCheck struct {
	tb    testing.TB
	pid   int
	admin *redis.Client

	mu sync.Mutex
	// calls counts the checked commands; longest is the longest time one
	// of them held a CPU in Redis, for the log.
	calls   int
	longest time.Duration
	// lenient (for benchmarks) counts and logs the commands over the limit
	// in over instead of failing.
	lenient bool
	over    int
	// kinds counts the calls and the calls over the limit by kind.
	kinds map[string]*[2]int
}

// kindOf names cmd's kind: the script for EVALSHA, else the command.
func kindOf(args []any) string {
	name := strings.ToLower(fmt.Sprint(args[0]))
	if name == "evalsha" && len(args) > 1 {
		return name + " " + fmt.Sprint(args[1])
	}
	return name
}

// verdict fails the kinds of command that passed the limit more than now
// and then.
func (c *stallCheck) verdict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lenient {
		return
	}
	for kind, n := range c.kinds {
		// An EVAL is go-redis's first call of a script on this Redis, after
		// NOSCRIPT: it compiles the script, once in the Redis's life, and
		// on a loaded machine that alone passed the limit. The script's
		// runs are its EVALSHAs, checked as their own kind.
		if kind == "eval" {
			continue
		}
		if n[1] >= 2 && float64(n[1]) > stallShare*float64(n[0]) {
			c.tb.Errorf("%s passed %v on a CPU in %d of its %d calls", kind, stallLimit, n[1], n[0])
		}
	}
}

// mustStallCheck starts checking every command sent through rdb to the
// Redis of p, with the slow log at stallLimit.
func mustStallCheck(tb testing.TB, p interface{ Pid() int }, addr string, rdb *redis.Client) *stallCheck {
	tb.Helper()
	admin := redistest.MustClient(tb, addr)
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "slowlog-log-slower-than", strconv.Itoa(int(stallLimit.Microseconds()))).Err(); err != nil {
		tb.Fatal(err)
	}
	if err := admin.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		tb.Fatal(err)
	}
	c := &stallCheck{tb: tb, pid: p.Pid(), admin: admin, kinds: map[string]*[2]int{}}
	tb.Cleanup(c.verdict)
	c.schedstat() // fail early where the kernel keeps no schedstat
	rdb.AddHook(c)
	return c
}

// schedstat returns how long Redis's main thread has run on a CPU and
// waited for one.
func (c *stallCheck) schedstat() (run, wait time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", c.pid))
	if err != nil {
		c.tb.Fatalf("stall check: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		c.tb.Fatalf("stall check: schedstat %q", b)
	}
	r, _ := strconv.ParseInt(f[0], 10, 64)
	w, _ := strconv.ParseInt(f[1], 10, 64)
	return time.Duration(r), time.Duration(w)
}

// minflt returns how many minor page faults Redis has taken.
func (c *stallCheck) minflt() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.pid))
	if err != nil {
		c.tb.Fatalf("stall check: %v", err)
	}
	// Fields after the command name in parentheses: state is field 3,
	// minflt field 10.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n, _ := strconv.ParseInt(f[7], 10, 64)
	return n
}

func (c *stallCheck) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *stallCheck) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *stallCheck) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		// Entries of commands sent around the check are not this call's.
		if err := c.admin.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
			c.tb.Errorf("stall check: %v", err)
		}
		run0, wait0 := c.schedstat()
		f0 := c.minflt()
		err := next(ctx, cmd)
		run1, wait1 := c.schedstat()
		f1 := c.minflt()
		c.calls++
		c.longest = max(c.longest, run1-run0)
		kind := kindOf(cmd.Args())
		n := c.kinds[kind]
		if n == nil {
			n = new([2]int)
			c.kinds[kind] = n
		}
		n[0]++
		over := false
		slow, lerr := c.admin.SlowLogGet(ctx, -1).Result()
		if lerr != nil {
			c.tb.Errorf("stall check: %v", lerr)
			return err
		}
		for _, s := range slow {
			if s.Duration-(wait1-wait0) > stallLimit && run1-run0 > stallLimit {
				report := c.tb.Logf
				if run1-run0 > stallHard && !c.lenient {
					report = c.tb.Errorf
				}
				if !over {
					over = true
					c.over++
					n[1]++
				}
				report("%s held Redis %v (%v of it on a CPU, %d page faults): %.80q", s.Args[0], s.Duration, run1-run0, f1-f0,
					strings.Join(s.Args, " "))
			}
		}
		return err
	}
}

// TestNoScriptStallsRedis runs the work that grows with a line at sizes
// that took seconds in one script (a tick admitting 100,000 of 200,000
// waiting, their expiry, a restore of 200,000 attempts, dropping the event)
// and checks in the SLOWLOG that no command held Redis for more than 2 ms,
// and that the tick admitted in exact arrival order.
func TestNoScriptStallsRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a line of 200,000 (about a minute under -race)")
	}
	const waiting, batch = 200_000, 100_000
	p := redistest.MustStart(t)
	rdb := redistest.MustClient(t, p.Addr())
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng := queue.New(rdb, []byte("test-token-key"), queue.WithClock(clk.Now))
	ctx := context.Background()
	ev := MustEvent(t, eng, "stall", func(e *queue.Event) {
		e.Policy, e.AdmitBatch, e.Capacity, e.Paused = queue.PolicyBatch, batch, 1_000_000, true
	})
	queue.MustFillLine(t, rdb, ev.ID, "u_", waiting)
	ev.Paused = false
	if err := eng.PutEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	check := mustStallCheck(t, p, p.Addr(), rdb)
	// The test's own reads of 100,000 at once go around the check.
	plain := redistest.MustClient(t, p.Addr())

	res := MustTick(t, eng, ev.ID)
	if res.Promoted != batch || res.Waiting != waiting-batch || res.Room != batch {
		t.Fatalf("tick %+v, want %d promoted and %d left", res, batch, waiting-batch)
	}
	// Exact order: u_i (seq i) got admission number i, and the line now
	// starts at the first one not admitted.
	keys := queue.Keys(ev.ID)
	as, err := plain.HGetAll(ctx, keys[4]).Result()
	if err != nil || len(as) != batch {
		t.Fatalf("%d active attempts, %v", len(as), err)
	}
	for user, v := range as {
		f := strings.Split(v, "|")
		if len(f) < 3 || "u_"+f[0] != user || f[2] != f[0] {
			t.Fatalf("%s admitted as %q, want seq = admission number", user, v)
		}
	}
	head, err := plain.ZRangeWithScores(ctx, keys[2], 0, 0).Result()
	if err != nil || len(head) != 1 || head[0].Member != fmt.Sprintf("u_%d", batch+1) {
		t.Fatalf("head of the line %v, %v", head, err)
	}
	recs := MustRecords(t, queue.New(plain, nil), ev.ID)
	if len(recs) != batch {
		t.Fatalf("%d records, want %d admitted", len(recs), batch)
	}
	for i, r := range recs {
		if r.Kind != queue.RecordAdmitted || r.AdmissionNo != int64(i+1) || r.Seq != int64(i+1) || r.UserID != fmt.Sprintf("u_%d", i+1) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}

	clk.Advance(time.Duration(ev.ActiveTTLS)*time.Second + time.Millisecond)
	expired := 0
	for {
		sw, err := eng.Expire(ctx, ev.ID, "r1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if sw.Expired == 0 {
			break
		}
		expired += sw.Expired
	}
	if expired != batch {
		t.Fatalf("expired %d, want %d", expired, batch)
	}

	snap := queue.Snapshot{Event: ev, Attempts: waitingLine(waiting)}
	snap.Event.ID = "stall-restored"
	if err := eng.Restore(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	if n, err := plain.ZCard(ctx, queue.Keys(snap.Event.ID)[2]).Result(); err != nil || n != waiting {
		t.Fatalf("restored line of %d, %v", n, err)
	}
	if err := eng.DropEvent(ctx, snap.Event.ID); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commands checked; the longest held a CPU in Redis for %v", check.calls, check.longest)
}
