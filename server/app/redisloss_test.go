//go:build linux

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// lossDatabase is the database URL a Redis-loss test runs on: "" (SQLite
// under the data dir) or a fresh PostgreSQL schema.
func lossDatabase(tb testing.TB, dialect string) string {
	tb.Helper()
	if dialect == store.DialectPostgres {
		return storetest.MustPostgresSchema(tb)
	}
	return ""
}

// tokenState is what a token answers, the fields a rebuild must keep.
type tokenState struct {
	Status      string `json:"status"`
	Position    int    `json:"position"`
	AdmissionNo int64  `json:"admission_no"`
	ExpiresAt   string `json:"expires_at"`
}

// mustSeatOwners checks that SQL and Redis name the same owner for every
// sold seat of event (once the audit trail has caught up), that no order was
// kept aside, and returns the owners.
func mustSeatOwners(ctx context.Context, tb testing.TB, db *store.Store, rdb *redis.Client, event string, want int) map[string]string {
	tb.Helper()
	var sqlOwners map[string]string
	eventually(ctx, tb, "SQL and Redis agree on every seat's owner", func() error {
		orders, err := db.Orders(ctx, event)
		if err != nil {
			return err
		}
		sqlOwners = map[string]string{}
		for _, o := range orders {
			sqlOwners[o.Seat] = o.UserID
		}
		taken, err := rdb.HGetAll(ctx, queue.Keys(event)[7]).Result()
		if err != nil {
			return err
		}
		redisOwners := map[string]string{}
		for seat, v := range taken {
			redisOwners[seat], _, _ = strings.Cut(v, "|")
		}
		if len(sqlOwners) != want || !maps.Equal(sqlOwners, redisOwners) {
			return fmt.Errorf("SQL %v, Redis %v; want %d sold", sqlOwners, redisOwners, want)
		}
		return nil
	})
	if cs, err := db.Conflicts(ctx, event); err != nil || len(cs) != 0 {
		tb.Fatalf("orders kept aside: %+v (%v)", cs, err)
	}
	return sqlOwners
}

// TestFlushAllThenRestartThenBuy: Redis loses everything (FLUSHALL) while no
// server runs; a server starts and finds the event in SQL but not in Redis.
// While another replica holds the event's restore lease, every call on the
// event answers 503 UNAVAILABLE with Retry-After, never 404 and never an
// empty line; then the server rebuilds it: the same tokens in the same order
// and states, the same seats taken, capacity respected, a new join behind the
// line, admissions numbered past every number handed out before, and a late
// buyer cannot buy a seat SQL has sold.
func TestFlushAllThenRestartThenBuy(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: runs in make test")
	}
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			const (
				event    = "br2"
				seats    = 20
				capacity = 5
				n        = 12
			)
			ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
			defer cancel()
			rp := redistest.MustStart(t)
			rdb := redistest.MustClient(t, rp.Addr())
			cfg := app.Config{RedisURL: "redis://" + rp.Addr(), DatabaseURL: lossDatabase(t, dialect), DataDir: t.TempDir()}
			db, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			runCtx, stop := context.WithCancel(ctx)
			cfg1 := cfg
			cfg1.Addr = "127.0.0.1:0"
			srv, err := app.Start(runCtx, cfg1)
			if err != nil {
				stop()
				t.Fatal(err)
			}
			base, keys := "http://"+srv.Addr, srv.Keys
			hc := newHTTPClient(t)
			admin := map[string]string{"X-Admin-Key": keys.Admin}
			sim := map[string]string{"X-Simulator-Key": keys.Simulator}
			if err := call(ctx, hc, "POST", base+"/api/v1/admin/events", admin, map[string]any{
				"id": event, "name": event, "seats": seats, "capacity": capacity, "admit_batch": capacity,
				"admit_interval_ms": 50, "active_ttl_s": 600, "policy": "capacity",
			}, 201, nil); err != nil {
				t.Fatal(err)
			}
			mustAdmin(ctx, t, hc, base, keys, event, "pause")
			tokens := byArrival(mustJoinBots(ctx, t, hc, []string{base}, keys, event, "b", n))
			qurl := func(b, tok string) string { return b + "/api/v1/events/" + event + "/queue/" + tok }
			state := func(b, tok string) (tokenState, error) {
				var s tokenState
				err := call(ctx, hc, "GET", qurl(b, tok), nil, nil, 200, &s)
				return s, err
			}
			// 5 admitted; 3 of them buy; 3 more admitted into the freed room.
			mustAdmin(ctx, t, hc, base, keys, event, "resume")
			waitActive := func(b string, want int) {
				eventually(ctx, t, fmt.Sprintf("%d admitted", want), func() error {
					st, err := stats(ctx, hc, b, event)
					if err == nil && st.AdmittedTotal != int64(want) {
						err = fmt.Errorf("%d admitted", st.AdmittedTotal)
					}
					return err
				})
			}
			waitActive(base, capacity)
			for i := range 3 {
				if err := call(ctx, hc, "POST", base+"/api/v1/events/"+event+"/orders", sim,
					map[string]string{"token": tokens[i].Token, "seat": queue.SeatID(seats, i)}, 201, nil); err != nil {
					t.Fatal(err)
				}
			}
			waitActive(base, capacity+3)
			mustAdmin(ctx, t, hc, base, keys, event, "pause")
			before := make([]tokenState, n)
			for i, tok := range tokens {
				if before[i], err = state(base, tok.Token); err != nil {
					t.Fatal(err)
				}
			}
			eventually(ctx, t, "audit caught up", func() error {
				entries, err := db.Entries(ctx, event)
				if err != nil {
					return err
				}
				count := map[queue.Status]int{}
				for _, e := range entries {
					count[e.Status]++
				}
				if want := map[queue.Status]int{queue.StatusDone: 3, queue.StatusActive: 5, queue.StatusWaiting: 4}; !maps.Equal(count, want) {
					return fmt.Errorf("audit holds %v, want %v", count, want)
				}
				return nil
			})
			stop()
			if err := srv.Wait(); err != nil {
				t.Fatal(err)
			}

			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// Another replica is rebuilding: this one must not serve the event.
			lease := queue.RestoreLockKey(event)
			if err := rdb.Set(ctx, lease, "another-replica", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			srv2, _ := MustStartServer(t, cfg)
			base2 := "http://" + srv2.Addr
			late := `{"user_type":"VIRTUAL","bot_id":"late"}`
			order := fmt.Sprintf(`{"token":%q,"seat":%q}`, tokens[4].Token, queue.SeatID(seats, 0))
			while := []struct{ method, url, body string }{
				{"GET", base2 + "/api/v1/events/" + event, ""},
				{"POST", base2 + "/api/v1/events/" + event + "/queue", late},
				{"GET", qurl(base2, tokens[8].Token), ""},
				{"POST", base2 + "/api/v1/events/" + event + "/orders", order},
			}
			for _, req := range while {
				if err := mustUnavailable(ctx, hc, req.method, req.url, sim, req.body); err != nil {
					t.Error(err)
				}
			}
			if err := mustUnavailable(ctx, hc, "GET", base2+"/api/v1/events/"+event+"/seats", map[string]string{"X-Queue-Token": tokens[4].Token}, ""); err != nil {
				t.Error(err)
			}
			// An event SQL does not hold is still unknown.
			if code, _, body, err := raw(ctx, hc, "GET", base2+"/api/v1/events/nope", nil, ""); err != nil || code != http.StatusNotFound {
				t.Errorf("an unknown event: %d %s %v, want 404", code, body, err)
			}
			if n := rdb.Exists(ctx, queue.Keys(event)[0], queue.Keys(event)[1]).Val(); n != 0 {
				t.Fatalf("the event was served around the loss: %d of its keys exist", n)
			}

			// The lease lapses (here: goes): the server rebuilds by itself.
			rdb.Del(ctx, lease)
			eventually(ctx, t, "the event is rebuilt", func() error {
				_, err := stats(ctx, hc, base2, event)
				return err
			})
			for i, tok := range tokens {
				got, err := state(base2, tok.Token)
				if err != nil {
					t.Fatal(err)
				}
				if got != before[i] {
					t.Errorf("token %d after the rebuild %+v, before %+v", i, got, before[i])
				}
			}
			st, err := stats(ctx, hc, base2, event)
			if err != nil || st.Sold != 3 || st.SeatsLeft != seats-3 || st.Active != capacity || st.Waiting != n-8 {
				t.Fatalf("stats after the rebuild %+v (%v): want 3 sold, %d active, %d waiting", st, err, capacity, n-8)
			}
			// The late buyer queues behind everyone, and a seat SQL sold stays sold.
			var lateEntry entry
			if err := call(ctx, hc, "POST", base2+"/api/v1/events/"+event+"/queue", sim,
				map[string]string{"user_type": "VIRTUAL", "bot_id": "late"}, 201, &lateEntry); err != nil {
				t.Fatal(err)
			}
			if lateEntry.Status != "WAITING" || lateEntry.Position != n-8+1 || lateEntry.Seq <= queue.SeqBlock {
				t.Fatalf("the late join %+v: want WAITING at %d with a seq past %d", lateEntry, n-8+1, queue.SeqBlock)
			}
			if code, _, body, err := raw(ctx, hc, "POST", base2+"/api/v1/events/"+event+"/orders", sim, order); err != nil ||
				code != http.StatusConflict || !strings.Contains(body, "SEAT_TAKEN") {
				t.Fatalf("buying a seat SQL sold: %d %s %v, want 409 SEAT_TAKEN", code, body, err)
			}
			// The line moves on: two buy, two more are admitted, in seq order,
			// numbered past every admission number handed out before the loss.
			for i := 3; i < 5; i++ {
				if err := call(ctx, hc, "POST", base2+"/api/v1/events/"+event+"/orders", sim,
					map[string]string{"token": tokens[i].Token, "seat": queue.SeatID(seats, i)}, 201, nil); err != nil {
					t.Fatal(err)
				}
			}
			mustAdmin(ctx, t, hc, base2, keys, event, "resume")
			eventually(ctx, t, "two more admitted", func() error {
				s, err := state(base2, tokens[9].Token)
				if err == nil && s.Status != "ACTIVE" {
					err = fmt.Errorf("token 9 %+v", s)
				}
				return err
			})
			for i, want := range map[int]int64{8: queue.AdmitBlock + 1, 9: queue.AdmitBlock + 2} {
				if s, err := state(base2, tokens[i].Token); err != nil || s.Status != "ACTIVE" || s.AdmissionNo != want {
					t.Fatalf("token %d: %+v (%v), want ACTIVE as admission %d", i, s, err, want)
				}
			}
			if s, err := state(base2, tokens[10].Token); err != nil || s.Status != "WAITING" || s.Position != 1 {
				t.Fatalf("token 10: %+v (%v), want first in line (capacity %d)", s, err, capacity)
			}
			if st, err := stats(ctx, hc, base2, event); err != nil || st.Active != capacity {
				t.Fatalf("stats %+v (%v), want capacity %d active", st, err, capacity)
			}
			mustSeatOwners(ctx, t, db, rdb, event, 5)
		})
	}
}

// joinSeen is one join answer a load client got.
type joinSeen struct {
	entry
	at time.Time
}

// TestFlushAllUnderLoad: Redis is flushed while a running server takes joins
// from many goroutines and admits. No call answers 404 for the event; 503s
// come only between the flush and the end of the rebuild; afterwards FIFO is
// strict across the rebuild (restored line first, in seq order, new joins
// behind), and no seq or admission number any client was told is repeated.
// Joins answered in the audit write-behind's window before the flush are
// lost: the test measures that window.
func TestFlushAllUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("FLUSHALL under load takes about 10 s per database under -race")
	}
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			const (
				event   = "busy"
				workers = 16
			)
			ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
			defer cancel()
			rp := redistest.MustStart(t)
			rdb := redistest.MustClient(t, rp.Addr())
			srv, _ := MustStartServer(t, app.Config{RedisURL: "redis://" + rp.Addr(), DatabaseURL: lossDatabase(t, dialect),
				DataDir: t.TempDir()})
			base, keys := "http://"+srv.Addr, srv.Keys
			sim := map[string]string{"X-Simulator-Key": keys.Simulator}
			hc := newHTTPClient(t)
			mustCreate(ctx, t, hc, base, keys, event, 100, 20, 50, false)

			var (
				mu       sync.Mutex
				joins    []joinSeen
				told     = map[string]int64{} // token -> admission number told by a status answer
				unavail  []time.Time          // when a 503 was sent
				bad      []string
				next     atomic.Int64
				flushed  atomic.Int64 // unix ns of the FLUSHALL, 0 before
				rebuilt  atomic.Int64 // unix ns from which the event answered again
				stopLoad atomic.Bool
			)
			note := func(code int, body string, sent time.Time) {
				switch {
				case code == http.StatusServiceUnavailable:
					mu.Lock()
					unavail = append(unavail, sent)
					mu.Unlock()
				case code >= 400:
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d %s", code, body))
					mu.Unlock()
				}
			}
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for !stopLoad.Load() && ctx.Err() == nil {
						i := next.Add(1)
						sent := time.Now()
						body := fmt.Sprintf(`{"user_type":"VIRTUAL","bot_id":"l-%06d"}`, i)
						code, _, b, err := raw(ctx, hc, "POST", base+"/api/v1/events/"+event+"/queue", sim, body)
						if err != nil {
							continue
						}
						note(code, b, sent)
						if code != http.StatusCreated {
							continue
						}
						var en entry
						if err := json.Unmarshal([]byte(b), &en); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						joins = append(joins, joinSeen{en, time.Now()})
						mu.Unlock()
						// Ask about an earlier token now and then, as a waiting
						// client would, and keep what it was told.
						if i%4 == 0 {
							mu.Lock()
							tok := joins[int(i)%len(joins)].Token
							mu.Unlock()
							sent := time.Now()
							code, _, b, err := raw(ctx, hc, "GET", base+"/api/v1/events/"+event+"/queue/"+tok, nil, "")
							if err != nil {
								continue
							}
							if code == http.StatusNotFound && strings.Contains(b, "TOKEN_NOT_FOUND") {
								continue // a join of the lost window
							}
							note(code, b, sent)
							var s tokenState
							if code == http.StatusOK && json.Unmarshal([]byte(b), &s) == nil && s.Status == "ACTIVE" {
								mu.Lock()
								told[tok+"|"+strconv.FormatInt(s.AdmissionNo, 10)] = s.AdmissionNo
								mu.Unlock()
							}
						}
					}
				})
			}
			count := func() int { mu.Lock(); defer mu.Unlock(); return len(joins) }
			eventually(ctx, t, "load under way", func() error {
				if c := count(); c < 400 {
					return fmt.Errorf("%d joins", c)
				}
				return nil
			})
			flushed.Store(time.Now().UnixNano())
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// The rebuild is done by the time a probe is answered (not when
			// it was sent: a join sent while the probe was in flight may
			// still have met the unfinished rebuild).
			eventually(ctx, t, "the event answers again", func() error {
				if _, err := stats(ctx, hc, base, event); err != nil {
					return err
				}
				rebuilt.Store(time.Now().UnixNano())
				return nil
			})
			after := count()
			eventually(ctx, t, "load goes on after the rebuild", func() error {
				if c := count(); c < after+400 {
					return fmt.Errorf("%d joins since", c-after)
				}
				return nil
			})
			stopLoad.Store(true)
			wg.Wait()

			if len(bad) > 0 {
				t.Fatalf("%d answers other than 201/200/503, e.g. %v", len(bad), bad[:min(len(bad), 5)])
			}
			flushAt, rebuiltAt := time.Unix(0, flushed.Load()), time.Unix(0, rebuilt.Load())
			for _, at := range unavail {
				if at.Before(flushAt.Add(-time.Second)) || at.After(rebuiltAt) {
					t.Fatalf("a 503 for a call sent at %v, outside the flush (%v) to the rebuild (%v)", at, flushAt, rebuiltAt)
				}
			}
			// No seq was handed out twice.
			seqs := map[int64]string{}
			for _, j := range joins {
				if u, ok := seqs[j.Seq]; ok {
					t.Fatalf("seq %d handed to %s and %s", j.Seq, u, j.UserID)
				}
				seqs[j.Seq] = j.UserID
			}
			// Let admission finish, then ask every token.
			eventually(ctx, t, "everyone admitted", func() error {
				st, err := stats(ctx, hc, base, event)
				if err == nil && st.Waiting != 0 {
					err = fmt.Errorf("%d waiting", st.Waiting)
				}
				return err
			})
			lost, firstLost := 0, time.Time{}
			byNo := map[int64]string{}
			for k, no := range told {
				tok, _, _ := strings.Cut(k, "|")
				if o, ok := byNo[no]; ok && o != tok {
					t.Fatalf("admission number %d told to two tokens", no)
				}
				byNo[no] = tok
			}
			for _, j := range joins {
				code, _, b, err := raw(ctx, hc, "GET", base+"/api/v1/events/"+event+"/queue/"+j.Token, nil, "")
				if err != nil {
					t.Fatal(err)
				}
				// Only a join of the lost state (a seq below the first
				// reservation) may be lost; a join since the rebuild never.
				if code == http.StatusNotFound && strings.Contains(b, "TOKEN_NOT_FOUND") && j.Seq <= queue.SeqBlock {
					lost++
					if firstLost.IsZero() || j.at.Before(firstLost) {
						firstLost = j.at
					}
					continue
				}
				var s tokenState
				if code != http.StatusOK || json.Unmarshal([]byte(b), &s) != nil || s.Status != "ACTIVE" {
					t.Fatalf("token of %s (seq %d): %d %s; want ACTIVE", j.UserID, j.Seq, code, b)
				}
				if o, ok := byNo[s.AdmissionNo]; ok && o != j.Token {
					t.Fatalf("admission number %d of %s was told to another token", s.AdmissionNo, j.UserID)
				}
				byNo[s.AdmissionNo] = j.Token
			}
			// FIFO across the rebuild: the rebuilt stream admits in seq order
			// (the restored line first, new joins behind), numbered on.
			recs := mustRecords(ctx, t, queue.New(rdb, nil), event)
			var lastSeq, lastNo int64
			admitted := 0
			for _, r := range recs {
				if r.Kind != queue.RecordAdmitted {
					continue
				}
				admitted++
				if r.Seq <= lastSeq || r.AdmissionNo <= lastNo {
					t.Fatalf("after the rebuild %s (seq %d) admitted as %d after seq %d as %d", r.UserID, r.Seq, r.AdmissionNo, lastSeq, lastNo)
				}
				lastSeq, lastNo = r.Seq, r.AdmissionNo
			}
			if admitted == 0 {
				t.Fatal("nobody admitted after the rebuild")
			}
			window := time.Duration(0)
			if lost > 0 {
				window = flushAt.Sub(firstLost) // from the oldest join lost to the flush
			}
			t.Logf("%d joins accepted (%d after the rebuild), %d answered 503 during %v of rebuild; %d joins of the last %v before the flush lost (the audit write-behind's window); %d admitted after the rebuild",
				len(joins), len(joins)-after, len(unavail), rebuiltAt.Sub(flushAt).Round(time.Millisecond), lost, window, admitted)
		})
	}
}

// auditAcked says whether the audit writers have written and acknowledged
// every record of event's stream.
func auditAcked(ctx context.Context, rdb *redis.Client, event string) error {
	stream := queue.Keys(event)[8]
	last, err := rdb.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil || len(last) == 0 {
		return fmt.Errorf("stream %v: %v", last, err)
	}
	groups, err := rdb.XInfoGroups(ctx, stream).Result()
	if err != nil {
		return err
	}
	for _, g := range groups {
		if g.Name == "audit" && g.Pending == 0 && g.LastDeliveredID == last[0].ID {
			return nil
		}
	}
	return fmt.Errorf("audit group %+v behind %s", groups, last[0].ID)
}

// rebuildsRe reads the rebuild counter of one event out of /metrics.
var rebuildsRe = regexp.MustCompile(`rushline_event_rebuilds_total\{event="([^"]+)"\} (\d+)`)

// TestFlushAllWithTwoReplicas: two servers share Redis and PostgreSQL;
// after a FLUSHALL exactly one of them rebuilds the event and both serve the
// same line afterwards.
func TestFlushAllWithTwoReplicas(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	reps := MustReplicas(t, 2, "redis://"+rp.Addr())
	hc := newHTTPClient(t)
	MustPausedEvent(ctx, t, hc, reps, 10, 5)
	keys := reps[0].srv.Keys
	tokens := byArrival(mustJoinBots(ctx, t, hc, []string{reps[0].base, reps[1].base}, keys, fifoEvent, "two", 30))
	eventually(ctx, t, "audit caught up", func() error { return auditAcked(ctx, rdb, fifoEvent) })
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, rep := range reps {
		eventually(ctx, t, fmt.Sprintf("replica %d serves the event again", i), func() error {
			_, err := stats(ctx, hc, rep.base, fifoEvent)
			return err
		})
	}
	total := 0
	for i, rep := range reps {
		code, _, body, err := raw(ctx, hc, "GET", rep.base+"/metrics", nil, "")
		if err != nil || code != 200 {
			t.Fatalf("metrics of replica %d: %d %v", i, code, err)
		}
		for _, m := range rebuildsRe.FindAllStringSubmatch(body, -1) {
			if m[1] == fifoEvent {
				k, _ := strconv.Atoi(m[2])
				total += k
			}
		}
	}
	if total != 1 {
		t.Fatalf("the event was rebuilt %d times by the two replicas, want exactly once", total)
	}
	for i, tok := range tokens {
		var a, b tokenState
		if err := call(ctx, hc, "GET", reps[0].base+"/api/v1/events/"+fifoEvent+"/queue/"+tok.Token, nil, nil, 200, &a); err != nil {
			t.Fatal(err)
		}
		if err := call(ctx, hc, "GET", reps[1].base+"/api/v1/events/"+fifoEvent+"/queue/"+tok.Token, nil, nil, 200, &b); err != nil {
			t.Fatal(err)
		}
		if a != b || a.Status != "WAITING" || a.Position != i+1 {
			t.Fatalf("token %d: replica 0 %+v, replica 1 %+v; want both WAITING at %d", i, a, b, i+1)
		}
	}
}
