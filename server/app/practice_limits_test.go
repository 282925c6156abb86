//go:build linux

package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/simulator/scenario"
)

// streamRush is a practice scenario of 300 bots that all wait on SSE: left
// unbounded, three races hold ~900 loopback streams, ~1,800 descriptors.
const streamRush = `
name: stream-rush
description: 300 streaming bots rush 30 seats.
seed: 5
event:
  create: {seats: 30, capacity: 10, admit_batch: 10, admit_interval_ms: 200, active_ttl_s: 10, opens_in: 3s}
phases:
  - {name: rush, arrival: spike, users: 300, over: 1s}
bots:
  - {name: streamer, weight: 1, wait: sse, reaction: {dist: uniform, min: 10ms, max: 500ms}, think: 50ms, seat: random, retry_on_taken: 2}
`

// openFDs is how many descriptors this process holds: the server, its bots
// and the test's own clients.
func openFDs() (int, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	return len(fds), err
}

// watch calls probe every interval until stop closes and returns its errors.
func watch(interval time.Duration, stop <-chan struct{}, probe func() error) func() (calls int, errs []error) {
	var mu sync.Mutex
	var n int
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			err := probe()
			mu.Lock()
			n++
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() (int, []error) { <-done; mu.Lock(); defer mu.Unlock(); return n, errs }
}

// TestPracticeRacesKeepTheServerUp runs three practice races at once while
// /healthz and an unrelated event's joins are called: every call answers,
// the descriptors stay within what the limits allow, and starts beyond the
// limits are refused with the right code before anything is made.
func TestPracticeRacesKeepTheServerUp(t *testing.T) {
	if testing.Short() {
		t.Skip("three whole races: ~30 s")
	}
	sc, err := scenario.Parse([]byte(streamRush))
	if err != nil {
		t.Fatal(err)
	}
	limits := practice.Limits{Races: 3, Conns: 8, Streams: 32}
	rp := redistest.MustStart(t)
	srv, c := MustStartServer(t, app.Config{DataDir: t.TempDir(), RedisURL: "redis://" + rp.Addr(), TrustProxy: true,
		PracticeScenarios: []*scenario.Scenario{sc}, PracticeLimits: limits})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := map[string]string{"X-Admin-Key": srv.Keys.Admin}
	c.MustCall("POST", "/api/v1/admin/events", admin, map[string]any{"id": "elsewhere", "name": "Elsewhere",
		"seats": 10, "capacity": 100000, "admit_batch": 100, "admit_interval_ms": 1000, "active_ttl_s": 600,
		"policy": "capacity"}, 201, nil)
	session := func(name string) string {
		var s struct {
			Token string `json:"access_token"`
		}
		c.MustCall("POST", "/api/v1/sessions", nil, map[string]string{"nickname": name}, 201, &s)
		return s.Token
	}
	practiceEvents := func() int {
		var list struct {
			Events []struct{ Practice bool }
		}
		c.MustCall("GET", "/api/v1/events", admin, nil, 200, &list)
		n := 0
		for _, ev := range list.Events {
			if ev.Practice {
				n++
			}
		}
		return n
	}

	// A generous bound, not a speed goal: the answer must come.
	hc := &http.Client{Timeout: 20 * time.Second}
	defer hc.CloseIdleConnections()
	// The bound: what the process holds now, both ends of every loopback
	// connection the bots may open, the API's Redis pool (64) and the push
	// hub's two per streamed event, and 32 for the test's own clients.
	base, err := openFDs()
	if err != nil {
		t.Fatal(err)
	}
	bound := base + 2*(limits.Conns+limits.Streams) + 64 + 2*4 + 32
	stop := make(chan struct{})
	peak := base
	fds := watch(20*time.Millisecond, stop, func() error {
		n, err := openFDs()
		peak = max(peak, n) // read once the watch has ended
		return err
	})
	health := watch(100*time.Millisecond, stop, func() error {
		return call(ctx, hc, "GET", "http://"+srv.Addr+"/healthz", nil, nil, http.StatusOK, nil)
	})
	var joinN int
	joins := watch(200*time.Millisecond, stop, func() error {
		joinN++
		var s struct {
			Token string `json:"access_token"`
		}
		if err := call(ctx, hc, "POST", "http://"+srv.Addr+"/api/v1/sessions", nil, map[string]string{"nickname": "fan" + strconv.Itoa(joinN)},
			http.StatusCreated, &s); err != nil {
			return err
		}
		return call(ctx, hc, "POST", "http://"+srv.Addr+"/api/v1/events/elsewhere/queue",
			map[string]string{"Authorization": "Bearer " + s.Token}, map[string]string{"user_type": "ACTUAL"}, http.StatusCreated, nil)
	})

	type racer struct{ token, id string }
	var racers []racer
	for i := range 3 {
		tok := session(fmt.Sprintf("racer%d", i))
		var race struct{ Event struct{ ID string } }
		c.MustCall("POST", "/api/v1/practice", map[string]string{"Authorization": "Bearer " + tok,
			"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i+1)}, map[string]any{"scenario": "stream-rush", "opens_in_s": 3}, 201, &race)
		racers = append(racers, racer{tok, race.Event.ID})
	}
	for _, tc := range []struct {
		name, addr string
		status     int
		code       string
	}{
		// A guest from the first racer's address: 429 until that race ends.
		{"same address", "203.0.113.1", http.StatusTooManyRequests, "RATE_LIMITED"},
		// A fourth race is one too many for the server.
		{"server full", "203.0.113.4", http.StatusServiceUnavailable, "UNAVAILABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, retry, body, err := raw(ctx, hc, "POST", "http://"+srv.Addr+"/api/v1/practice",
				map[string]string{"Authorization": "Bearer " + session("late"), "X-Forwarded-For": tc.addr}, `{"scenario": "stream-rush"}`)
			if n, _ := strconv.Atoi(retry); err != nil || status != tc.status || !strings.Contains(body, `"`+tc.code+`"`) || n < 1 {
				t.Errorf("start: %d, Retry-After %q, %s (%v); want %d %s with Retry-After", status, retry, body, err, tc.status, tc.code)
			}
			if n := practiceEvents(); n != 3 {
				t.Errorf("%d practice events after a refused start, want the 3 races'", n)
			}
		})
	}

	for _, r := range racers {
		for {
			var l struct{ Phase string }
			c.MustCall("GET", "/api/v1/practice/"+r.id+"/live", map[string]string{"Authorization": "Bearer " + r.token}, nil, 200, &l)
			if l.Phase == "finished" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("race %s did not finish", r.id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	close(stop)
	if n, errs := fds(); n == 0 || len(errs) > 0 {
		t.Fatalf("descriptors counted %d times: %v", n, errs)
	}
	t.Logf("descriptors: %d before the races, at most %d during them (bound %d)", base, peak, bound)
	if peak > bound {
		t.Errorf("the process held %d descriptors during the races, over the bound %d", peak, bound)
	}
	for name, w := range map[string]func() (int, []error){"/healthz": health, "joins elsewhere": joins} {
		if n, errs := w(); n == 0 || len(errs) > 0 {
			t.Errorf("%s: %d calls, %d failed: %v", name, n, len(errs), errs)
		}
	}
	for _, r := range racers {
		var res struct {
			Sold     int
			BotStats struct{ Outcomes map[string]int } `json:"bot_stats"`
		}
		c.MustCall("GET", "/api/v1/practice/"+r.id+"/result", map[string]string{"Authorization": "Bearer " + r.token}, nil, 200, &res)
		bots := 0
		for _, n := range res.BotStats.Outcomes {
			bots += n
		}
		if res.Sold != 30 || bots != 300 || res.BotStats.Outcomes["failed"] != 0 {
			t.Errorf("race %s: sold %d, bot outcomes %v; want every seat sold and 300 bots, none failed", r.id, res.Sold, res.BotStats.Outcomes)
		}
	}
}
