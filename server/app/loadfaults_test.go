//go:build linux

package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// The load test's shape: the offered join rate and how long it lasts, when
// the faults strike, and the event.
const (
	loadRate     = 2000 // joins per second offered
	loadFor      = 30 * time.Second
	loadRedisAt  = 10 * time.Second // Redis is SIGKILLed and restarted
	loadKillAt   = 20 * time.Second // the lease-holding replica is SIGKILLed
	loadEvent    = "surge"
	loadSeats    = 2500
	loadBuyShare = 10 // one admitted user in loadBuyShare buys a seat
	// loadRetryFor is how long a client keeps retrying one request.
	loadRetryFor = 20 * time.Second
)

// queueTokenKey is the queue-token key a server derives from its JWT secret
// (app.tokenKey), so the test can read token states straight from Redis.
func queueTokenKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("rushline queue tokens v1"))
	return m.Sum(nil)
}

// failover sends one request to the replicas in turn, starting at first and
// skipping dead ones, until one answers something other than a transport
// error or a 5xx, or loadRetryFor passes. It returns the answer's status and body.
func failover(ctx context.Context, hc *http.Client, bases []string, dead *atomic.Int64, first int, method, path string,
	hdr map[string]string, body string) (int, []byte, error) {
	deadline := time.Now().Add(loadRetryFor)
	var last error
	for i := first; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		r := i % len(bases)
		if int64(r) == dead.Load() {
			continue
		}
		code, _, b, err := raw(ctx, hc, method, bases[r]+path, hdr, body)
		if err == nil && code < 500 {
			return code, []byte(b), nil
		}
		if err == nil {
			err = fmt.Errorf("%d %s", code, b)
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return 0, nil, fmt.Errorf("%s %s: gave up: %v", method, path, last)
}

// loadTally is what the clients saw.
type loadTally struct {
	offered, shed, accepted, failed, again atomic.Int64
	ordered, refused, doubleSold           atomic.Int64
	tokens                                 sync.Map // user id -> token
}

// Three replicas (real processes) share one AOF Redis and one PostgreSQL.
// Bots join at a paced 2,000/s for 30 s, a share of the admitted buy seats,
// Redis is SIGKILLed and restarted once and the lease-holding replica is
// SIGKILLed once; clients fail over and retry idempotently. At the end every
// accepted join is accounted for, nobody holds two places, admissions follow
// arrival order within each lane, no seat is sold twice or beyond the seat
// count, and the audit trail holds every accepted join.
func TestLoadWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("load test with faults: runs in make test")
	}
	t.Parallel()
	bin := MustServerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rp := redistest.MustStart(t, redistest.AppendOnly)
	rdb := redistest.MustClient(t, rp.Addr())
	databaseURL := storetest.MustPostgresSchema(t)
	keys := newKeys(t)
	eng := queue.New(rdb, queueTokenKey(keys.JWTSecret))
	procs, bases := MustProcs(t, 3, bin, "redis://"+rp.Addr(), databaseURL, keys)
	hc := newHTTPClient(t)
	mustCreate(ctx, t, hc, bases[0], keys, loadEvent, loadSeats, 50, 50, false)
	sim := map[string]string{"X-Simulator-Key": keys.Simulator}
	var dead atomic.Int64
	dead.Store(-1)
	var tally loadTally

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var clients sync.WaitGroup

	// Joins: a pacer offers loadRate a second to a fixed pool of workers;
	// arrivals no worker can take in time are shed and counted.
	arrivals := make(chan int, 256)
	for range 96 {
		clients.Go(func() {
			for i := range arrivals {
				body := fmt.Sprintf(`{"user_type":"VIRTUAL","bot_id":"l-%06d"}`, i)
				code, b, err := failover(ctx, hc, bases, &dead, i, "POST", "/api/v1/events/"+loadEvent+"/queue", sim, body)
				var j entry
				if err == nil && (code == 201 || code == 200) && json.Unmarshal(b, &j) == nil && j.Token != "" {
					if prev, loaded := tally.tokens.LoadOrStore(j.UserID, j.Token); loaded && prev != j.Token {
						t.Errorf("%s got two tokens", j.UserID)
					}
					tally.accepted.Add(1)
					if code == 200 {
						tally.again.Add(1) // a retry whose first try had got through
					}
					continue
				}
				tally.failed.Add(1)
				if tally.failed.Load() <= 5 {
					t.Logf("join %d not accepted: %d %s %v", i, code, b, err)
				}
			}
		})
	}
	start := time.Now()
	var paced sync.WaitGroup
	paced.Go(func() {
		defer close(arrivals)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		sent := 0
		for range tick.C {
			el := time.Since(start)
			if el >= loadFor {
				return
			}
			for due := int(el.Seconds() * loadRate); sent < due; sent++ {
				tally.offered.Add(1)
				select {
				case arrivals <- sent:
				default:
					tally.shed.Add(1)
				}
			}
		}
	})

	// Orders: tail the stream's admitted records; one user in loadBuyShare
	// buys the next seat, and every so often someone tries a sold one.
	orders := make(chan [2]string, 4096)
	var tailed atomic.Value // the last record id the order tail has read
	tailed.Store("0")
	clients.Go(func() {
		defer close(orders)
		after := "0"
		for runCtx.Err() == nil {
			recs, err := eng.Tail(runCtx, loadEvent, after, 500, 200*time.Millisecond)
			if err != nil {
				time.Sleep(50 * time.Millisecond) // Redis restarting
				continue
			}
			for _, r := range recs {
				after = r.ID
				tailed.Store(after)
				h := fnv.New32a()
				h.Write([]byte(r.UserID))
				if r.Kind != queue.RecordAdmitted || h.Sum32()%loadBuyShare != 0 {
					continue
				}
				if tok, ok := tally.tokens.Load(r.UserID); ok {
					select {
					case orders <- [2]string{r.UserID, tok.(string)}:
					default:
					}
				}
			}
		}
	})
	var seatNo atomic.Int64
	sold := sync.Map{} // seat -> user
	for w := range 8 {
		clients.Go(func() {
			for o := range orders {
				n := seatNo.Add(1)
				seat := queue.SeatID(loadSeats, int((n-1)%loadSeats))
				if n%7 == 0 && n > 1 {
					seat = queue.SeatID(loadSeats, 0) // surely sold by now, or about to be
				}
				body := fmt.Sprintf(`{"token":%q,"seat":%q}`, o[1], seat)
				code, b, err := failover(ctx, hc, bases, &dead, w, "POST", "/api/v1/events/"+loadEvent+"/orders", sim, body)
				switch {
				case err != nil:
					t.Logf("order %s: %v", seat, err)
				case code == 201:
					tally.ordered.Add(1)
					if prev, loaded := sold.LoadOrStore(seat, o[0]); loaded {
						tally.doubleSold.Add(1)
						t.Errorf("seat %s sold to %s and again to %s", seat, prev, o[0])
					}
				case code == 409:
					// SEAT_TAKEN, SOLD_OUT, or NOT_ACTIVE for a retried
					// order whose first try went through
					tally.refused.Add(1)
				default:
					t.Errorf("order %s: %d %s", seat, code, b)
				}
			}
		})
	}

	// The faults.
	leaseKey := queue.Keys(loadEvent)[9]
	var killedHolder string
	faults := []struct {
		at   time.Duration
		name string
		do   func() error
	}{
		{loadRedisAt, "redis SIGKILL + restart", func() error {
			if err := rp.Kill(); err != nil {
				return err
			}
			return rp.Restart(ctx)
		}},
		{loadKillAt, "lease holder SIGKILL", func() error {
			victim := -1
			for try := 0; victim < 0; try++ {
				if try == 100 {
					return fmt.Errorf("lease holder %q is none of the replicas", killedHolder)
				}
				time.Sleep(time.Duration(min(try, 1)) * 50 * time.Millisecond)
				killedHolder = rdb.Get(ctx, leaseKey).Val()
				victim = slices.IndexFunc(procs, func(p *proc) bool { return p.Pid() == holderPid(killedHolder) })
			}
			dead.Store(int64(victim))
			procs[victim].Kill()
			return nil
		}},
	}
	acceptedAt := make([]int64, len(faults))
	for i, f := range faults {
		time.Sleep(time.Until(start.Add(f.at)))
		if err := f.do(); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		acceptedAt[i] = tally.accepted.Load()
		t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), f.name)
	}
	paced.Wait()
	for i, f := range faults {
		if end := tally.accepted.Load(); end <= acceptedAt[i] {
			t.Fatalf("no join was accepted after %s (%d before, %d at the end)", f.name, acceptedAt[i], end)
		}
	}
	elapsed := time.Since(start)
	// The admissions of the load reach the order tail.
	endID, err := eng.LastRecordID(ctx, loadEvent)
	if err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "the order tail reads the load's records", func() error {
		if got := tailed.Load().(string); queue.CompareIDs(got, endID) < 0 {
			return fmt.Errorf("tail at %s, the load ended at %s", got, endID)
		}
		return nil
	})
	stopRun()
	clients.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Freeze the line, so states and the stream are read at one point.
	alive := bases[(dead.Load()+1)%int64(len(bases))]
	mustAdmin(ctx, t, hc, alive, keys, loadEvent, "pause")
	mustSettle(ctx, t, hc, alive, loadEvent)

	// Every accepted join is accounted for, once.
	users := map[string]string{}
	tally.tokens.Range(func(k, v any) bool { users[k.(string)] = v.(string); return true })
	if int64(len(users)) != tally.accepted.Load() {
		t.Fatalf("%d users hold tokens, %d joins accepted: someone holds two places", len(users), tally.accepted.Load())
	}
	count := map[queue.Status]int{}
	var maxAdmittedSeq int64
	minWaitingSeq := int64(1 << 62)
	var mu sync.Mutex
	var lost []string
	var checkers sync.WaitGroup
	work := make(chan string, 1024)
	for range 16 {
		checkers.Go(func() {
			for u := range work {
				en, err := eng.Status(ctx, loadEvent, users[u])
				mu.Lock()
				switch {
				case err != nil:
					lost = append(lost, fmt.Sprintf("%s: %v", u, err))
				default:
					count[en.Status]++
					if en.Status == queue.StatusWaiting {
						minWaitingSeq = min(minWaitingSeq, en.Seq)
					}
				}
				mu.Unlock()
			}
		})
	}
	for u := range users {
		work <- u
	}
	close(work)
	checkers.Wait()
	if len(lost) > 0 {
		t.Fatalf("%d accepted joins are not accounted for, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}

	// The stream: one joined record per user, admissions unique, numbered
	// without gaps and in seq order per lane; nobody still waiting joined
	// before someone admitted.
	recs := mustRecords(ctx, t, eng, loadEvent)
	joinedBy := map[string]int{}
	admittedBy := map[string]int{}
	lastSeq := map[queue.Lane]int64{}
	var no int64
	inversions, gaps := 0, 0
	for _, r := range recs {
		switch r.Kind {
		case queue.RecordJoined:
			joinedBy[r.UserID]++
		case queue.RecordAdmitted:
			admittedBy[r.UserID]++
			if no++; r.AdmissionNo != no {
				gaps++
			}
			if r.Seq <= lastSeq[r.Lane] {
				inversions++
			}
			lastSeq[r.Lane] = r.Seq
			maxAdmittedSeq = max(maxAdmittedSeq, r.Seq)
		}
	}
	dups := 0
	// A join may reach Redis without its answer reaching the client (the
	// replica died mid-request); it still holds one place only.
	for u, n := range joinedBy {
		if n > 1 || admittedBy[u] > 1 {
			dups++
		}
	}
	if dups > 0 || inversions > 0 || gaps > 0 || maxAdmittedSeq >= minWaitingSeq {
		t.Fatalf("%d duplicates, %d FIFO inversions, %d admission-number gaps; last admitted seq %d, first waiting %d",
			dups, inversions, gaps, maxAdmittedSeq, minWaitingSeq)
	}

	// Seats: never more sold than exist, each to one done attempt.
	ev, err := eng.Event(ctx, loadEvent)
	if err != nil {
		t.Fatal(err)
	}
	st, err := eng.Stats(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sold > loadSeats || tally.doubleSold.Load() > 0 || tally.ordered.Load() > st.Sold || int64(count[queue.StatusDone]) != st.Sold {
		t.Fatalf("oversold: %d seats sold of %d, %d orders answered 201, %d DONE tokens, %d double sales",
			st.Sold, loadSeats, tally.ordered.Load(), count[queue.StatusDone], tally.doubleSold.Load())
	}
	if h := rdb.Get(ctx, leaseKey).Val(); h == "" || h == killedHolder {
		t.Fatalf("lease holder after the kill: %q (killed %q)", h, killedHolder)
	}

	// The audit trail holds every join that reached Redis (a dead replica's
	// unacknowledged records are claimed after audit.DefaultClaimAfter).
	db, err := store.Open(ctx, databaseURL, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	auditCtx, auditCancel := context.WithTimeout(ctx, 90*time.Second)
	defer auditCancel()
	eventually(auditCtx, t, "audit caught up", func() error {
		entries, err := db.Entries(ctx, loadEvent)
		if err == nil && len(entries) != len(joinedBy) {
			err = fmt.Errorf("%d entries in SQL, %d joined", len(entries), len(joinedBy))
		}
		return err
	})

	achieved := float64(tally.accepted.Load()) / elapsed.Seconds()
	t.Logf("offered %d joins in %v (%d shed by the pacer: no free client), accepted %d (%.0f/s; %d answered 200 on a retry), "+
		"%d not accepted; statuses %v; %d admitted; orders: %d sold, %d refused (409)",
		tally.offered.Load(), elapsed.Round(time.Millisecond), tally.shed.Load(), tally.accepted.Load(), achieved,
		tally.again.Load(), tally.failed.Load(), count, no, st.Sold, tally.refused.Load())
}

// mustRecords reads an event's whole stream.
func mustRecords(ctx context.Context, tb testing.TB, eng *queue.Engine, id string) []queue.Record {
	tb.Helper()
	var recs []queue.Record
	after := "0"
	for {
		batch, err := eng.Records(ctx, id, after, 10_000)
		if err != nil && !errors.Is(err, redis.Nil) {
			tb.Fatal(err)
		}
		if len(batch) == 0 {
			return recs
		}
		recs = append(recs, batch...)
		after = batch[len(batch)-1].ID
	}
}
