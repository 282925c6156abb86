//go:build linux

package app_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/admission"
	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// statusBody is a token status answer, the fields that must survive a fault.
type statusBody struct {
	Status        string `json:"status"`
	Position      int    `json:"position"`
	AdmittedTotal int    `json:"admitted_total"`
	ExpiresAt     string `json:"expires_at"`
}

// eventStats is GET /events/{id}.
type eventStats struct {
	Stats queue.Stats `json:"stats"`
}

// stats reads an event's counters through base.
func stats(ctx context.Context, hc *http.Client, base, id string) (queue.Stats, error) {
	var ev eventStats
	err := call(ctx, hc, "GET", base+"/api/v1/events/"+id, nil, nil, 200, &ev)
	return ev.Stats, err
}

// checkAdmissions checks the event stream's admitted records: users admitted
// exactly once each, every one of want, numbered 1..len(want) without gaps, in
// stream order, and in seq order within each lane (no FIFO inversion).
func checkAdmissions(ctx context.Context, tb testing.TB, eng *queue.Engine, id string, want map[string]bool) {
	tb.Helper()
	recs := mustRecords(ctx, tb, eng, id)
	seen := map[string]bool{}
	lastSeq := map[queue.Lane]int64{}
	var no int64
	bad := 0
	fail := func(format string, args ...any) {
		tb.Helper()
		if bad++; bad <= 5 {
			tb.Errorf(format, args...)
		}
	}
	for _, r := range recs {
		if r.Kind != queue.RecordAdmitted {
			continue
		}
		if seen[r.UserID] {
			fail("%s admitted twice", r.UserID)
		}
		seen[r.UserID] = true
		if !want[r.UserID] {
			fail("%s admitted but never joined", r.UserID)
		}
		if no++; r.AdmissionNo != no {
			fail("admission %d of the stream is numbered %d", no, r.AdmissionNo)
		}
		if r.Seq <= lastSeq[r.Lane] {
			fail("FIFO inversion: seq %d (%s) admitted after seq %d in lane %q", r.Seq, r.UserID, lastSeq[r.Lane], r.Lane)
		}
		lastSeq[r.Lane] = r.Seq
	}
	for u := range want {
		if !seen[u] {
			fail("%s was never admitted", u)
		}
	}
	if bad > 0 {
		tb.Fatalf("%d admission faults among %d admitted records", bad, no)
	}
}

// A replica process is SIGKILLed while it holds the admission lease and is
// promoting: another replica takes the lease (a lease of at most the lease
// time, so a dead holder's lease lapses on its own), and every waiting token is admitted exactly once, in order, numbered without gaps.
func TestReplicaProcessKilledDuringAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("replica-kill test: runs in make test")
	}
	t.Parallel()
	const (
		n     = 1200
		event = "killed"
	)
	bin := MustServerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t, redistest.AppendOnly)
	rdb := redistest.MustClient(t, rp.Addr())
	eng := queue.New(rdb, nil)
	databaseURL := storetest.MustPostgresSchema(t)
	keys := newKeys(t)
	procs, bases := MustProcs(t, 3, bin, "redis://"+rp.Addr(), databaseURL, keys)
	hc := newHTTPClient(t)
	mustCreate(ctx, t, hc, bases[0], keys, event, n, 10, 50, true)
	tokens := mustJoinBots(ctx, t, hc, bases, keys, event, "k", n)
	mustAdmin(ctx, t, hc, bases[1], keys, event, "resume")

	// Wait until promotion is under way, then kill the lease holder.
	var st queue.Stats
	eventually(ctx, t, "promotion under way", func() (err error) {
		if st, err = stats(ctx, hc, bases[2], event); err == nil && st.AdmittedTotal < n/5 {
			err = fmt.Errorf("%d admitted", st.AdmittedTotal)
		}
		return err
	})
	leaseKey := queue.Keys(event)[9]
	holder := rdb.Get(ctx, leaseKey).Val()
	victim := slices.IndexFunc(procs, func(p *proc) bool { return p.Pid() == holderPid(holder) })
	if victim < 0 {
		t.Fatalf("lease holder %q is none of the replicas", holder)
	}
	procs[victim].Kill()
	killed := time.Now()
	before, err := stats(ctx, hc, bases[(victim+1)%3], event)
	if err != nil {
		t.Fatal(err)
	}
	if before.AdmittedTotal >= n {
		t.Fatalf("everyone was admitted before the kill: %+v", before)
	}
	var taken time.Duration
	var newHolder string
	eventually(ctx, t, "another replica takes the lease", func() error {
		newHolder = rdb.Get(ctx, leaseKey).Val()
		if newHolder == "" || newHolder == holder {
			return fmt.Errorf("holder %q", newHolder)
		}
		taken = time.Since(killed)
		return nil
	})
	// -1 would be a lease with no expiry; -2 (gone already) is fine.
	if ttl, err := rdb.PTTL(ctx, leaseKey).Result(); err != nil || ttl == -1 || ttl > admission.DefaultLease {
		t.Errorf("the new lease expires in %v (%v), want within the lease time %v", ttl, err, admission.DefaultLease)
	}
	if p := slices.IndexFunc(procs, func(p *proc) bool { return p.Pid() == holderPid(newHolder) }); p < 0 || p == victim {
		t.Fatalf("new holder %q is not a live replica", newHolder)
	}

	alive := bases[(victim+1)%3]
	eventually(ctx, t, "everyone admitted", func() error {
		st, err := stats(ctx, hc, alive, event)
		if err == nil && st.AdmittedTotal != n {
			err = fmt.Errorf("%d of %d admitted", st.AdmittedTotal, n)
		}
		return err
	})
	want := map[string]bool{}
	for _, tok := range tokens {
		want[tok.UserID] = true
	}
	checkAdmissions(ctx, t, eng, event, want)
	for i, tok := range tokens {
		var s statusBody
		if err := call(ctx, hc, "GET", alive+"/api/v1/events/"+event+"/queue/"+tok.Token, nil, nil, 200, &s); err != nil {
			t.Fatal(err)
		}
		if s.Status != "ACTIVE" {
			t.Fatalf("token %d: %+v after the run, want ACTIVE", i, s)
		}
	}
	t.Logf("killed replica %d (holder %s) after %d admissions; %s took the lease %v later",
		victim, holder, before.AdmittedTotal, newHolder, taken.Round(time.Millisecond))
}

// byArrival sorts entries joined concurrently into their order in line, so
// the first ones are the first admitted.
func byArrival(es []entry) []entry {
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return es
}

// redisDowns are the ways Redis goes away under a running server.
var redisDowns = []struct {
	name string
	down func(*redisproc.Process) error
}{
	// A crash: SIGKILL. appendfsync always (the managed default) keeps every
	// acknowledged write.
	{"kill with appendfsync always", (*redisproc.Process).Kill},
	// A graceful restart: SIGTERM flushes the AOF.
	{"graceful stop", (*redisproc.Process).Stop},
}

// Redis goes away under a running server and comes back: while it is away the
// API answers 503 UNAVAILABLE with Retry-After; afterwards every entry, place
// and sold seat is still there, and the server recovers by itself: new joins
// work, admission resumes, a waiting SSE client gets its admitted and the
// audit trail catches up.
func TestRedisRestartDuringRun(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: runs in make test")
	}
	t.Parallel()
	for _, tc := range redisDowns {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 100
			ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
			defer cancel()
			rp := redistest.MustStart(t, redistest.AppendOnly)
			databaseURL := storetest.MustPostgresSchema(t)
			srv, _ := MustStartServer(t, app.Config{RedisURL: "redis://" + rp.Addr(), DatabaseURL: databaseURL, DataDir: t.TempDir()})
			base, keys := "http://"+srv.Addr, srv.Keys
			sim := map[string]string{"X-Simulator-Key": keys.Simulator}
			hc := newHTTPClient(t)
			qurl := func(tok string) string { return base + "/api/v1/events/" + fifoEvent + "/queue/" + tok }

			// 10 every 250 ms: a pause that lands seconds late on a loaded
			// machine still leaves the tail of the line waiting.
			mustCreate(ctx, t, hc, base, keys, fifoEvent, 200, 10, 250, true)
			tokens := byArrival(mustJoinBots(ctx, t, hc, []string{base}, keys, fifoEvent, "r", n))
			mustAdmin(ctx, t, hc, base, keys, fifoEvent, "resume")
			eventually(ctx, t, "some admitted", func() error {
				st, err := stats(ctx, hc, base, fifoEvent)
				if err == nil && st.AdmittedTotal < 10 {
					err = fmt.Errorf("%d admitted", st.AdmittedTotal)
				}
				return err
			})
			mustAdmin(ctx, t, hc, base, keys, fifoEvent, "pause")
			// The leaver and the listener must still be waiting, or the
			// totals below mean nothing.
			var leaver statusBody
			if err := call(ctx, hc, "GET", qurl(tokens[90].Token), nil, nil, 200, &leaver); err != nil {
				t.Fatal(err)
			}
			if leaver.Status != "WAITING" {
				t.Fatalf("token 90 is %s at the pause, want WAITING: admission ran 80 places past the first 10", leaver.Status)
			}
			for i := range 5 {
				if err := call(ctx, hc, "POST", base+"/api/v1/events/"+fifoEvent+"/orders", sim,
					map[string]string{"token": tokens[i].Token, "seat": queue.SeatID(200, i)}, 201, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := call(ctx, hc, "DELETE", qurl(tokens[90].Token), sim, nil, 204, nil); err != nil {
				t.Fatal(err)
			}
			before := make([]statusBody, n)
			for i, tok := range tokens {
				if err := call(ctx, hc, "GET", qurl(tok.Token), nil, nil, 200, &before[i]); err != nil {
					t.Fatal(err)
				}
			}
			// A waiting client listens throughout.
			f := &follower{entry: entry{Token: tokens[99].Token, UserID: tokens[99].UserID}}
			reps := []*replica{{srv: srv, base: base}}
			ready := make(chan struct{})
			var followed sync.WaitGroup
			followed.Go(func() { follow(ctx, hc, reps, f, 0, func() { close(ready) }) })
			<-ready

			if err := tc.down(rp); err != nil {
				t.Fatal(err)
			}
			for _, req := range []struct{ method, url, body string }{
				{"POST", base + "/api/v1/events/" + fifoEvent + "/queue", `{"user_type":"VIRTUAL","bot_id":"during"}`},
				{"GET", qurl(tokens[10].Token), ""},
				{"POST", base + "/api/v1/events/" + fifoEvent + "/orders", fmt.Sprintf(`{"token":%q,"seat":"%s"}`, tokens[6].Token, queue.SeatID(200, 6))},
				{"GET", base + "/readyz", ""},
			} {
				if err := mustUnavailable(ctx, hc, req.method, req.url, sim, req.body); err != nil {
					t.Error(err)
				}
			}
			if err := rp.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "ready again", func() error {
				code, _, body, err := raw(ctx, hc, "GET", base+"/readyz", nil, "")
				if err == nil && code != http.StatusOK {
					err = fmt.Errorf("readyz %d: %s", code, body)
				}
				return err
			})

			// Nothing was lost: every token answers as before.
			for i, tok := range tokens {
				var got statusBody
				if err := call(ctx, hc, "GET", qurl(tok.Token), nil, nil, 200, &got); err != nil {
					t.Fatal(err)
				}
				if got != before[i] {
					t.Errorf("token %d after the restart %+v, before %+v", i, got, before[i])
				}
			}
			// Seats stay sold.
			if err := call(ctx, hc, "POST", base+"/api/v1/events/"+fifoEvent+"/orders", sim,
				map[string]string{"token": tokens[6].Token, "seat": queue.SeatID(200, 0)}, 409, nil); err != nil {
				t.Fatalf("a seat sold before the restart: %v", err)
			}
			// New joins work, at the back of the line.
			var late entry
			if err := call(ctx, hc, "POST", base+"/api/v1/events/"+fifoEvent+"/queue", sim,
				map[string]string{"user_type": "VIRTUAL", "bot_id": "after"}, 201, &late); err != nil {
				t.Fatal(err)
			}
			// Admission resumes and the listening client gets its admitted.
			mustAdmin(ctx, t, hc, base, keys, fifoEvent, "resume")
			eventually(ctx, t, "everyone admitted", func() error {
				st, err := stats(ctx, hc, base, fifoEvent)
				if err == nil && st.AdmittedTotal != n {
					err = fmt.Errorf("%d of %d admitted", st.AdmittedTotal, n)
				}
				return err
			})
			followed.Wait()
			if got := len(f.admitted()); got != 1 {
				t.Fatalf("the listening client got %d admitted, want 1: %+v (ends %v)", got, f.msgs, f.ends)
			}
			// The audit trail catches up with all of it.
			db, err := store.Open(ctx, databaseURL, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			eventually(ctx, t, "audit caught up", func() error {
				entries, err := db.Entries(ctx, fifoEvent)
				if err != nil {
					return err
				}
				count := map[queue.Status]int{}
				for _, e := range entries {
					count[e.Status]++
				}
				want := map[queue.Status]int{queue.StatusDone: 5, queue.StatusLeft: 1, queue.StatusActive: n - 5}
				if !maps.Equal(count, want) {
					return fmt.Errorf("audit holds %v, want %v", count, want)
				}
				orders, err := db.Orders(ctx, fifoEvent)
				if err == nil && len(orders) != 5 {
					err = fmt.Errorf("%d orders, want 5", len(orders))
				}
				return err
			})
		})
	}
}

// PostgreSQL goes away (a proxy between the server and it cuts every
// connection): the queue keeps working, audit records wait in the Redis
// stream, and they are all written once PostgreSQL is reachable again.
func TestSQLDownQueueKeepsWorking(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: runs in make test")
	}
	t.Parallel()
	const (
		event  = "sqldown"
		first  = 50
		during = 100
		sold   = 10
	)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	databaseURL := storetest.MustPostgresSchema(t)
	pg, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := MustProxy(t, pg.Host)
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	logs := lockedWriter{&sync.Mutex{}, &bytes.Buffer{}}
	srv, _ := MustStartServer(t, app.Config{RedisURL: "redis://" + rp.Addr(), DatabaseURL: viaProxy(t, databaseURL, proxy.Addr()),
		DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	base, keys := "http://"+srv.Addr, srv.Keys
	sim := map[string]string{"X-Simulator-Key": keys.Simulator}
	hc := newHTTPClient(t)
	db, err := store.Open(ctx, databaseURL, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	audited := func(want int, done int) func() error {
		return func() error {
			entries, err := db.Entries(ctx, event)
			if err != nil {
				return err
			}
			active, finished := 0, 0
			for _, e := range entries {
				switch e.Status {
				case queue.StatusActive:
					active++
				case queue.StatusDone:
					finished++
				}
			}
			if len(entries) != want || active+finished != want || finished != done {
				return fmt.Errorf("audit holds %d entries, %d active, %d done; want %d, %d done", len(entries), active, finished, want, done)
			}
			orders, err := db.Orders(ctx, event)
			if err == nil && len(orders) != done {
				err = fmt.Errorf("%d orders, want %d", len(orders), done)
			}
			return err
		}
	}

	mustCreate(ctx, t, hc, base, keys, event, 100, 20, 50, false)
	mustJoinBots(ctx, t, hc, []string{base}, keys, event, "a", first)
	eventually(ctx, t, "audit before the cut", audited(first, 0))

	proxy.Cut()
	tokens := mustJoinBots(ctx, t, hc, []string{base}, keys, event, "b", during)
	eventually(ctx, t, "admission goes on without SQL", func() error {
		st, err := stats(ctx, hc, base, event)
		if err == nil && st.AdmittedTotal != first+during {
			err = fmt.Errorf("%d of %d admitted", st.AdmittedTotal, first+during)
		}
		return err
	})
	for i := range sold {
		if err := call(ctx, hc, "POST", base+"/api/v1/events/"+event+"/orders", sim,
			map[string]string{"token": tokens[i].Token, "seat": queue.SeatID(100, i)}, 201, nil); err != nil {
			t.Fatalf("order without SQL: %v", err)
		}
	}
	var s statusBody
	if err := call(ctx, hc, "GET", base+"/api/v1/events/"+event+"/queue/"+tokens[sold].Token, nil, nil, 200, &s); err != nil || s.Status != "ACTIVE" {
		t.Fatalf("status without SQL: %+v, %v", s, err)
	}
	// readyz reports the database as API.md says; the queue itself answered above.
	if code, _, body, err := raw(ctx, hc, "GET", base+"/readyz", nil, ""); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("readyz without SQL: %d %s %v", code, body, err)
	}
	// The audit worker tries the outage's records and fails; nothing of the
	// outage reaches SQL, and nothing is trimmed from the stream meanwhile.
	eventually(ctx, t, "the audit worker's failed write", func() error {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if !strings.Contains(logs.b.String(), "audit: write behind failed") {
			return errors.New("no failed write logged")
		}
		return nil
	})
	if err := audited(first, 0)(); err != nil {
		t.Fatalf("during the outage: %v", err)
	}
	// joined + admitted per token, a done per order, all since the cut (an
	// admission call writes one batch entry that holds a record per token).
	recs, err := queue.New(rdb, nil).Records(ctx, event, "0", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(recs); n < 2*during+sold {
		t.Fatalf("the stream holds %d records, fewer than the %d of the outage", n, 2*during+sold)
	}

	proxy.Restore()
	eventually(ctx, t, "audit caught up after the outage", audited(first+during, sold))
}

// Redis restarts empty (no persistence) under a running replica: the
// replica finds the event in SQL but not in Redis and rebuilds it by itself;
// the same tokens answer as before. The `rushline-server recover` command
// stays for operators: it refuses the live event without --force and, with
// it, rebuilds it again; the line moves on, admissions numbered past every
// number handed out before, in seq order.
func TestRecoverCommandAfterRedisLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: runs in make test")
	}
	t.Parallel()
	const (
		n     = 60
		event = "lost"
	)
	bin := MustServerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t) // no AOF: a restart comes back empty
	redisURL := "redis://" + rp.Addr()
	databaseURL := storetest.MustPostgresSchema(t)
	keys := newKeys(t)
	p := MustProc(t, bin, redisURL, databaseURL, keys)
	hc := newHTTPClient(t)
	sim := map[string]string{"X-Simulator-Key": keys.Simulator}
	qurl := func(tok string) string { return p.base + "/api/v1/events/" + event + "/queue/" + tok }

	// 5 every 250 ms: a pause that lands seconds late on a loaded machine
	// still leaves the tail of the line waiting for after the recovery.
	mustCreate(ctx, t, hc, p.base, keys, event, 100, 5, 250, true)
	tokens := byArrival(mustJoinBots(ctx, t, hc, []string{p.base}, keys, event, "z", n))
	mustAdmin(ctx, t, hc, p.base, keys, event, "resume")
	eventually(ctx, t, "some admitted", func() error {
		st, err := stats(ctx, hc, p.base, event)
		if err == nil && st.AdmittedTotal < 10 {
			err = fmt.Errorf("%d admitted", st.AdmittedTotal)
		}
		return err
	})
	mustAdmin(ctx, t, hc, p.base, keys, event, "pause")
	if err := call(ctx, hc, "POST", p.base+"/api/v1/events/"+event+"/orders", sim,
		map[string]string{"token": tokens[0].Token, "seat": queue.SeatID(100, 0)}, 201, nil); err != nil {
		t.Fatal(err)
	}
	before := make([]statusBody, n)
	for i, tok := range tokens {
		if err := call(ctx, hc, "GET", qurl(tok.Token), nil, nil, 200, &before[i]); err != nil {
			t.Fatal(err)
		}
	}
	admitted := before[n-1].AdmittedTotal
	if before[n-1].Status != "WAITING" {
		t.Fatalf("the last token is %s at the pause, want WAITING: admission ran 50 places past the first 10", before[n-1].Status)
	}
	rdb := redistest.MustClient(t, rp.Addr())
	eventually(ctx, t, "audit caught up", func() error { return auditAcked(ctx, rdb, event) })

	if err := rp.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := rp.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	same := func(when string) {
		t.Helper()
		for i, tok := range tokens {
			var got statusBody
			if err := call(ctx, hc, "GET", qurl(tok.Token), nil, nil, 200, &got); err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			got.AdmittedTotal, before[i].AdmittedTotal = 0, 0 // resumes past the reserved admission numbers
			if got != before[i] {
				t.Errorf("token %d %s %+v, before %+v", i, when, got, before[i])
			}
		}
	}
	eventually(ctx, t, "the replica rebuilds the event by itself", func() error {
		return call(ctx, hc, "GET", qurl(tokens[n-1].Token), nil, nil, 200, nil)
	})
	same("after the replica's rebuild")
	recoverCmd := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, append([]string{"recover", "--event", event, "--redis-url", redisURL,
			"--database-url", databaseURL, "--data", t.TempDir()}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := recoverCmd(); err == nil || !strings.Contains(out, "live queue state") {
		t.Fatalf("recover without --force on a live event: %v\n%s", err, out)
	}
	if out, err := recoverCmd("--force"); err != nil || !strings.Contains(out, "recovered event "+event) {
		t.Fatalf("recover --force: %v\n%s", err, out)
	}
	same("after recover --force")
	mustAdmin(ctx, t, hc, p.base, keys, event, "resume")
	eventually(ctx, t, "the line moves on", func() error {
		st, err := stats(ctx, hc, p.base, event)
		if err == nil && st.Waiting != 0 {
			err = fmt.Errorf("%d waiting", st.Waiting)
		}
		return err
	})
	// The rebuilt stream: admissions numbered past the caps of both lost
	// incarnations (the replica's rebuild reserved a second block), in seq order.
	recs := mustRecords(ctx, t, queue.New(rdb, nil), event)
	no, last, count := int64(2*queue.AdmitBlock), int64(0), 0
	for _, r := range recs {
		if r.Kind != queue.RecordAdmitted {
			continue
		}
		count++
		if no++; r.AdmissionNo != no || r.Seq <= last {
			t.Fatalf("admitted record %+v after recovery: want admission %d and a seq after %d", r, no, last)
		}
		last = r.Seq
	}
	if count == 0 || count+admitted != n {
		t.Fatalf("%d admitted after recovery, %d before, want %d in all", count, admitted, n)
	}
}
