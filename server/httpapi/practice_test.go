package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/admission"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
	"github.com/rushline/rushline/simulator/scenario"
)

// tinyRace is a practice scenario that ends in a few seconds: 60 bots rush
// 20 seats in half a second.
const tinyRace = `
name: tiny-race
description: 60 bots, 20 seats, over in seconds.
seed: 11
event:
  create:
    seats: 20
    capacity: 10
    admit_batch: 10
    admit_interval_ms: 100
    active_ttl_s: 5
    opens_in: 3s
phases:
  - name: rush
    arrival: spike
    users: 60
    over: 500ms
bots:
  - name: streamer
    weight: 2
    wait: sse
    reaction: {dist: lognormal, median: 200ms, p90: 500ms}
    think: {dist: uniform, min: 50ms, max: 200ms}
    patience: {dist: exponential, mean: 30s}
    seat: best
    retry_on_taken: 3
  - name: poller
    weight: 1
    wait: poll
    poll_interval: 200ms
    reaction: {dist: lognormal, median: 300ms, p90: 800ms}
    think: {dist: uniform, min: 50ms, max: 200ms}
    seat: random
    retry_on_taken: 3
`

// MustScenario parses a scenario from YAML.
func MustScenario(tb testing.TB, yaml string) *scenario.Scenario {
	tb.Helper()
	sc, err := scenario.Parse([]byte(yaml))
	if err != nil {
		tb.Fatalf("scenario: %v", err)
	}
	return sc
}

// PracticeFixture is a server with solo practice races: real clock, a
// drop service that plays their crowds and an admission runner.
type PracticeFixture struct {
	*Fixture
}

// MustPracticeServer starts a practice server on a private redis-server and
// a store of the given dialect; its races use tinyRace. opts adjust its drop
// service.
func MustPracticeServer(tb testing.TB, dialect string, opts ...drop.Option) *PracticeFixture {
	tb.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := MustServerWith(tb, FixtureOptions{Dialect: dialect, RealClock: true, Drops: append([]drop.Option{
		drop.WithScenarios(MustScenario(tb, tinyRace)), drop.WithTick(2 * time.Millisecond),
		drop.WithDiscover(10 * time.Millisecond), drop.WithFlush(20 * time.Millisecond),
		drop.WithLease(500 * time.Millisecond)}, opts...)})
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { f.Drops.Run(ctx) })
	wg.Go(func() {
		admission.New(f.Engine, "test", admission.WithDiscover(20*time.Millisecond), admission.WithLogger(quiet)).Run(ctx)
	})
	tb.Cleanup(func() { stop(); wg.Wait() })
	return &PracticeFixture{Fixture: f}
}

// MustStartRace starts a practice race for the bearer token.
func (f *PracticeFixture) MustStartRace(tb testing.TB, token string, opensInS float64) *Response {
	tb.Helper()
	r := f.MustDo(tb, "POST", "/api/v1/practice", Bearer(token), map[string]any{"scenario": "tiny-race", "opens_in_s": opensInS})
	MustStatus(tb, r, http.StatusCreated)
	return r
}

// obj and num read nested JSON.
func obj(m map[string]any, key string) map[string]any { o, _ := m[key].(map[string]any); return o }
func num(m map[string]any, key string) float64        { n, _ := m[key].(float64); return n }

// TestPracticeRace plays a whole race as the person, on both databases:
// start, countdown, join at the opening, wait, buy, and the result, history
// and leaderboard that follow.
func TestPracticeRace(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			f := MustPracticeServer(t, dialect)
			userID, token := f.MustSession(t, "racer")
			me := Bearer(token)

			list := f.MustDo(t, "GET", "/api/v1/practice/scenarios", nil, nil)
			MustStatus(t, list, http.StatusOK)
			if s := list.Body["scenarios"].([]any)[0].(map[string]any); s["name"] != "tiny-race" || num(s, "bots") != 60 || num(s, "seats") != 20 {
				t.Fatalf("scenarios = %s", list.Raw)
			}

			asked := time.Now()
			start := f.MustStartRace(t, token, 3)
			ev := obj(start.Body, "event")
			id, _ := ev["id"].(string)
			if !strings.HasPrefix(id, "drop-solo-") || ev["practice"] != true || num(start.Body, "bots") != 60 || num(start.Body, "seats") != 20 {
				t.Fatalf("start = %s", start.Raw)
			}
			opensAt, err := time.Parse(time.RFC3339Nano, start.Str("opens_at"))
			// Sanity bounds, not a speed goal: 3 s after the request, give or take a minute.
			if err != nil || !opensAt.After(asked) || opensAt.After(asked.Add(3*time.Second+time.Minute)) {
				t.Fatalf("opens_at = %q (%v), want 3 s after %v", start.Str("opens_at"), err, asked)
			}

			MustError(t, f.MustDo(t, "GET", "/api/v1/practice/"+id+"/result", me, nil), http.StatusConflict, "RACE_NOT_FINISHED")
			live := f.MustDo(t, "GET", "/api/v1/practice/"+id+"/live", me, nil)
			MustStatus(t, live, http.StatusOK)
			if live.Str("phase") != practice.PhaseCountdown || num(live.Body, "seats_left") != 20 {
				t.Fatalf("live before the opening = %s", live.Raw)
			}
			events := f.MustDo(t, "GET", "/api/v1/events", adminH, nil)
			if !strings.Contains(string(events.Raw), `"practice":true`) {
				t.Fatalf("events list does not mark the practice event: %s", events.Raw)
			}

			// Press at the opening.
			time.Sleep(time.Until(opensAt) + 20*time.Millisecond)
			join := f.MustJoin(t, id, me, map[string]any{"user_type": "ACTUAL"})
			tok := join.Str("token")
			deadline := time.Now().Add(20 * time.Second)
			var sawWaiting bool
			for {
				st := f.MustDo(t, "GET", "/api/v1/events/"+id+"/queue/"+tok, nil, nil)
				MustStatus(t, st, http.StatusOK)
				if st.Str("status") == "ACTIVE" {
					break
				}
				if st.Str("status") != "WAITING" || time.Now().After(deadline) {
					t.Fatalf("status = %s, want WAITING then ACTIVE", st.Raw)
				}
				if !sawWaiting {
					l := f.MustDo(t, "GET", "/api/v1/practice/"+id+"/live", me, nil)
					// A tick may admit the person between the two reads:
					// the live figures count only while the status that
					// follows them still says waiting.
					again := f.MustDo(t, "GET", "/api/v1/events/"+id+"/queue/"+tok, nil, nil)
					if again.Str("status") == "WAITING" {
						if l.Str("phase") != practice.PhaseRunning || num(l.Body, "waiting") < 1 {
							t.Fatalf("live while waiting = %s", l.Raw)
						}
						sawWaiting = true
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			seats := f.MustDo(t, "GET", "/api/v1/events/"+id+"/seats", H("X-Queue-Token", tok), nil)
			MustStatus(t, seats, http.StatusOK)
			var seat string
			for _, s := range seats.Body["seats"].([]any) {
				if s := s.(map[string]any); s["taken"] == false {
					seat = s["id"].(string)
					r := f.MustDo(t, "POST", "/api/v1/events/"+id+"/orders", me, map[string]any{"token": tok, "seat": seat})
					if r.Status == http.StatusCreated {
						break
					}
					MustError(t, r, http.StatusConflict, "SEAT_TAKEN")
				}
			}

			// The person's result comes once they have bought, the bots'
			// side when the race is final.
			early := mustResult(t, f, id, token)
			if you := obj(early.Body, "you"); you["outcome"] != practice.OutcomeBought || you["seat"] != seat {
				t.Fatalf("early result you = %v, want bought %s", you, seat)
			}
			res := mustFinalResult(t, f, id, token)
			you := obj(res.Body, "you")
			if you["joined"] != true || you["outcome"] != practice.OutcomeBought || you["seat"] != seat || you["admitted"] != true {
				t.Fatalf("you = %v, want joined, admitted and bought %s", you, seat)
			}
			if !slices.Equal(mustJSON(t, obj(early.Body, "you")), mustJSON(t, you)) {
				t.Errorf("the person's figures changed from the early result %v to the final %v", obj(early.Body, "you"), you)
			}
			if res.Body["got_seat"] != true || res.Str("seat") != seat || num(res.Body, "reaction_ms") != num(you, "reaction_ms") {
				t.Errorf("the headline figures disagree with you: %s", res.Raw)
			}
			reaction := num(you, "reaction_ms")
			if reaction < 0 || reaction > 1500 {
				t.Errorf("reaction_ms = %v, want the ~20 ms after the opening the test waited (+ scheduling)", reaction)
			}
			rank, bots := num(you, "join_rank"), num(you, "bots_ahead")
			if rank < 1 || bots != rank-1-num(you, "people_ahead") || num(you, "position_at_join") < 1 {
				t.Errorf("join_rank %v, bots_ahead %v, position_at_join %v disagree", rank, bots, num(you, "position_at_join"))
			}
			if p := num(you, "reaction_percentile"); p < 0 || p > 100 {
				t.Errorf("reaction_percentile = %v", p)
			}
			if res.Str("nickname") != "racer" || res.Str("scenario") != "tiny-race" || num(res.Body, "seats") != 20 ||
				num(res.Body, "sold") < 1 || num(res.Body, "bots") != 60 {
				t.Errorf("result head = %s", res.Raw)
			}
			stats := obj(res.Body, "bot_stats")
			rs := obj(stats, "reaction_ms")
			if num(rs, "p10") > num(rs, "p50") || num(rs, "p50") > num(rs, "p99") || num(rs, "p99") <= 0 {
				t.Errorf("bot reaction percentiles = %v", rs)
			}
			samples, _ := stats["reaction_samples_ms"].([]any)
			if len(samples) < 50 || !slices.IsSortedFunc(samples, func(a, b any) int { return int(a.(float64) - b.(float64)) }) {
				t.Errorf("reaction_samples_ms: %d values, want ≥ 50 sorted", len(samples))
			}
			var outcomes float64
			for _, n := range obj(stats, "outcomes") {
				outcomes += n.(float64)
			}
			if outcomes != 60 || num(stats, "bought")+1 != num(res.Body, "sold") {
				t.Errorf("bot outcomes sum to %v (want 60), bought %v + you = sold %v", outcomes, num(stats, "bought"), num(res.Body, "sold"))
			}
			if l := f.MustDo(t, "GET", "/api/v1/practice/"+id+"/live", me, nil); l.Str("phase") != practice.PhaseFinished {
				t.Errorf("live after the race = %s", l.Raw)
			}

			hist := f.MustDo(t, "GET", "/api/v1/practice/history", me, nil)
			MustStatus(t, hist, http.StatusOK)
			races, _ := hist.Body["races"].([]any)
			if len(races) != 1 || races[0].(map[string]any)["event"] != id || races[0].(map[string]any)["seat"] != seat ||
				num(races[0].(map[string]any), "reaction_ms") != reaction {
				t.Errorf("history = %s", hist.Raw)
			}
			board := f.MustDo(t, "GET", "/api/v1/practice/leaderboard?scenario=tiny-race", nil, nil)
			MustStatus(t, board, http.StatusOK)
			entries, _ := board.Body["entries"].([]any)
			if len(entries) != 1 || entries[0].(map[string]any)["nickname"] != "racer" || num(entries[0].(map[string]any), "rank") != 1 {
				t.Errorf("leaderboard = %s", board.Raw)
			}

			adm := f.MustDo(t, "GET", "/api/v1/admin/events/"+id+"/admissions?limit=500", adminH, nil)
			MustStatus(t, adm, http.StatusOK)
			var mine int
			for _, a := range adm.Body["admissions"].([]any) {
				if a := a.(map[string]any); a["user_id"] == userID && a["user_type"] == "ACTUAL" {
					mine++
				}
			}
			if mine != 1 {
				t.Errorf("the person appears %d times in the admissions list, want once", mine)
			}

			// The result is the drop's, in the database.
			rec, err := f.Store.Result(context.Background(), start.Str("drop"), userID)
			if err != nil || rec.Seat != seat || !rec.Private {
				t.Errorf("stored result = %+v, %v", rec, err)
			}
			// A solo race is no public drop.
			MustError(t, f.MustDo(t, "GET", "/api/v1/drops/"+start.Str("drop"), nil, nil), http.StatusNotFound, "DROP_NOT_FOUND")
		})
	}
}

// mustResult polls the race's result until it is ready: once the person's
// attempt has ended, or at the race's end when they did not join.
func mustResult(tb testing.TB, f *PracticeFixture, id, token string) *Response {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := f.MustDo(tb, "GET", "/api/v1/practice/"+id+"/result", Bearer(token), nil)
		if r.Status == http.StatusOK {
			return r
		}
		MustError(tb, r, http.StatusConflict, "RACE_NOT_FINISHED")
		if time.Now().After(deadline) {
			tb.Fatalf("no result in 30 s: %s", r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustFinalResult polls the race's result until it is final.
func mustFinalResult(tb testing.TB, f *PracticeFixture, id, token string) *Response {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := mustResult(tb, f, id, token)
		if r.Body["final"] == true {
			if _, err := time.Parse(time.RFC3339Nano, r.Str("finished_at")); err != nil {
				tb.Errorf("final result's finished_at: %v in %s", err, r.Raw)
			}
			return r
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the race did not finish in 60 s: %s", r.Raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mustJSON is v as JSON, for comparing decoded bodies.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestPracticeNotJoined is a race the person watches without joining: it
// ends once the bots have sold every seat, with outcome not_joined. Soon
// after (the keep time) its event goes, and the result comes from SQL.
func TestPracticeNotJoined(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	t.Parallel()
	f := MustPracticeServer(t, store.DialectSQLite, drop.WithKeep(300*time.Millisecond))
	_, token := f.MustSession(t, "watcher")
	id := obj(f.MustStartRace(t, token, 3).Body, "event")["id"].(string)
	res := mustResult(t, f, id, token)
	you := obj(res.Body, "you")
	if res.Body["final"] != true || you["joined"] != false || you["outcome"] != practice.OutcomeNotJoined || you["reaction_ms"] != nil || num(res.Body, "sold") != 20 {
		t.Fatalf("result = %s", res.Raw)
	}
	board := f.MustDo(t, "GET", "/api/v1/practice/leaderboard?scenario=tiny-race", nil, nil)
	if entries, _ := board.Body["entries"].([]any); len(entries) != 0 {
		t.Errorf("a race without a join is on the leaderboard: %s", board.Raw)
	}

	deadline := time.Now().Add(10 * time.Second)
	for f.MustDo(t, "GET", "/api/v1/events/"+id, nil, nil).Status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the finished race's event is still there after its keep time")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := f.Store.Event(context.Background(), id); queue.ErrorCode(err) != queue.CodeEventNotFound {
		t.Errorf("the event's SQL row: %v, want it deleted", err)
	}
	if ids, _ := f.Engine.EventIDs(context.Background()); slices.Contains(ids, id) {
		t.Errorf("the event is still listed for the admission runners: %v", ids)
	}
	// The race itself stays known, with its final figures.
	if l := f.MustDo(t, "GET", "/api/v1/practice/"+id+"/live", Bearer(token), nil); l.Str("phase") != practice.PhaseFinished ||
		num(l.Body, "sold") != 20 || num(l.Body, "seats_left") != 0 {
		t.Errorf("live after the event went = %s", l.Raw)
	}
	stored := f.MustDo(t, "GET", "/api/v1/practice/"+id+"/result", Bearer(token), nil)
	MustStatus(t, stored, http.StatusOK)
	if stored.Body["bot_stats"] != nil || obj(stored.Body, "you")["outcome"] != practice.OutcomeNotJoined || num(stored.Body, "sold") != 20 {
		t.Errorf("result from the database = %s", stored.Raw)
	}
	_, other := f.MustSession(t, "other")
	MustError(t, f.MustDo(t, "GET", "/api/v1/practice/"+id+"/result", Bearer(other), nil), http.StatusForbidden, "FORBIDDEN")
}

func TestPracticeBadInput(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite)
	_, owner := f.MustSession(t, "owner")
	_, other := f.MustSession(t, "other")
	id := obj(f.MustStartRace(t, owner, 60).Body, "event")["id"].(string)

	for _, tc := range []struct {
		name, method, path string
		headers            map[string]string
		body               any
		status             int
		code               string
	}{
		// A scenario no file names; the message lists the valid ones.
		{"unknown scenario", "POST", "/api/v1/practice", Bearer(owner), map[string]any{"scenario": "nope"}, 400, "BAD_REQUEST"},
		// No scenario at all.
		{"missing scenario", "POST", "/api/v1/practice", Bearer(owner), map[string]any{}, 400, "BAD_REQUEST"},
		// Opening too soon.
		{"opens_in_s below 3", "POST", "/api/v1/practice", Bearer(owner), map[string]any{"scenario": "tiny-race", "opens_in_s": 2}, 400, "BAD_REQUEST"},
		// Opening too late.
		{"opens_in_s above 120", "POST", "/api/v1/practice", Bearer(owner), map[string]any{"scenario": "tiny-race", "opens_in_s": 121}, 400, "BAD_REQUEST"},
		// Not a number.
		{"opens_in_s a string", "POST", "/api/v1/practice", Bearer(owner), map[string]any{"scenario": "tiny-race", "opens_in_s": "10"}, 400, "BAD_REQUEST"},
		// Starting needs a person.
		{"start without bearer", "POST", "/api/v1/practice", nil, map[string]any{"scenario": "tiny-race"}, 401, "UNAUTHENTICATED"},
		// A forged token is no person.
		{"start with a bad bearer", "POST", "/api/v1/practice", Bearer("not-a-jwt"), map[string]any{"scenario": "tiny-race"}, 401, "UNAUTHENTICATED"},
		// Someone else's result.
		{"result of another user", "GET", "/api/v1/practice/" + id + "/result", Bearer(other), nil, 403, "FORBIDDEN"},
		// Someone else's live view.
		{"live of another user", "GET", "/api/v1/practice/" + id + "/live", Bearer(other), nil, 403, "FORBIDDEN"},
		// The race has not even opened.
		{"result before the end", "GET", "/api/v1/practice/" + id + "/result", Bearer(owner), nil, 409, "RACE_NOT_FINISHED"},
		// No such race.
		{"result of an unknown event", "GET", "/api/v1/practice/drop-solo-000000000000/result", Bearer(owner), nil, 404, "EVENT_NOT_FOUND"},
		// An ordinary event is no race.
		{"live of an unknown event", "GET", "/api/v1/practice/concert-1/live", Bearer(owner), nil, 404, "EVENT_NOT_FOUND"},
		// Result needs a person.
		{"result without bearer", "GET", "/api/v1/practice/" + id + "/result", nil, nil, 401, "UNAUTHENTICATED"},
		// Live needs a person.
		{"live without bearer", "GET", "/api/v1/practice/" + id + "/live", nil, nil, 401, "UNAUTHENTICATED"},
		// History needs a person.
		{"history without bearer", "GET", "/api/v1/practice/history", nil, nil, 401, "UNAUTHENTICATED"},
		// Another person may not join the race.
		{"another user joins", "POST", "/api/v1/events/" + id + "/queue", Bearer(other), map[string]any{"user_type": "ACTUAL"}, 403, "FORBIDDEN"},
		// A leaderboard of no scenario.
		{"leaderboard of an unknown scenario", "GET", "/api/v1/practice/leaderboard?scenario=nope", nil, nil, 400, "BAD_REQUEST"},
		// A leaderboard needs a scenario.
		{"leaderboard without scenario", "GET", "/api/v1/practice/leaderboard", nil, nil, 400, "BAD_REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, tc.method, tc.path, tc.headers, tc.body)
			MustError(t, r, tc.status, tc.code)
			if tc.name == "unknown scenario" {
				if _, msg := r.Err(); !strings.Contains(msg, "tiny-race") {
					t.Errorf("message %q does not name the valid scenarios", msg)
				}
			}
		})
	}
	// The owner's join is let through (to the event's own answer: not open yet).
	MustError(t, f.MustDo(t, "POST", "/api/v1/events/"+id+"/queue", Bearer(owner), map[string]any{"user_type": "ACTUAL"}),
		http.StatusConflict, "EVENT_NOT_OPEN")
}

// TestPracticeLimits: a person runs one race at a time, an address one
// (guest sessions cost nothing), the servers Limits.Races; a refused start
// answers 429 or 503 with Retry-After and makes nothing.
func TestPracticeLimits(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite, drop.WithSoloLimits(drop.SoloLimits{Races: 3}))
	// The same API behind a trusted proxy, so the test can call from several addresses.
	g := MustLimited(t, f.Fixture, "sessions=1000/s", true, nil)
	start := func(token, addr string) *Response {
		return g.MustDo(t, "POST", "/api/v1/practice", map[string]string{"Authorization": "Bearer " + token,
			"X-Forwarded-For": addr}, map[string]any{"scenario": "tiny-race", "opens_in_s": 60})
	}
	tokens := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		_, tokens[name] = g.MustSession(t, name)
	}
	MustStatus(t, start(tokens["a"], "203.0.113.7"), http.StatusCreated)
	MustStatus(t, start(tokens["c"], "2001:db8:0:1::1"), http.StatusCreated)
	for _, tc := range []struct {
		name, who, addr string
		status          int
		code            string
	}{
		// a's race still runs.
		{"own race running", "a", "198.51.100.9", http.StatusTooManyRequests, "RATE_LIMITED"},
		// Another guest from a's address.
		{"same IPv4 address", "b", "203.0.113.7", http.StatusTooManyRequests, "RATE_LIMITED"},
		// Another guest from c's /64.
		{"same IPv6 /64", "d", "2001:db8:0:1:ffff::2", http.StatusTooManyRequests, "RATE_LIMITED"},
		// Another address is free: the third race.
		{"other address", "b", "198.51.100.1", http.StatusCreated, ""},
		// A fourth is one too many for the servers.
		{"servers full", "e", "198.51.100.2", http.StatusServiceUnavailable, "UNAVAILABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mustPracticeEvents(t, f)
			r := start(tokens[tc.who], tc.addr)
			if tc.status == http.StatusCreated {
				MustStatus(t, r, http.StatusCreated)
				return
			}
			MustError(t, r, tc.status, tc.code)
			if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > int(drop.MaxRetryAfter/time.Second) {
				t.Errorf("Retry-After %q, want 1 to 60 s", r.Header.Get("Retry-After"))
			}
			if after := mustPracticeEvents(t, f); after != before {
				t.Errorf("a refused start made an event: %d practice events, %d before", after, before)
			}
		})
	}
}

// mustPracticeEvents counts the practice events the server has.
func mustPracticeEvents(tb testing.TB, f *PracticeFixture) int {
	tb.Helper()
	r := f.MustDo(tb, "GET", "/api/v1/events", adminH, nil)
	MustStatus(tb, r, http.StatusOK)
	n := 0
	for _, ev := range r.Body["events"].([]any) {
		if ev.(map[string]any)["practice"] == true {
			n++
		}
	}
	return n
}

func TestServerTime(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite)
	before := time.Now()
	r := f.MustDo(t, "GET", "/api/v1/time", nil, nil)
	MustStatus(t, r, http.StatusOK)
	now, err := time.Parse(time.RFC3339Nano, r.Str("now"))
	if err != nil || now.Before(before.Add(-time.Millisecond)) || now.After(time.Now().Add(time.Millisecond)) || !strings.HasSuffix(r.Str("now"), "Z") {
		t.Fatalf("now = %q (%v), want the UTC time of the call", r.Str("now"), err)
	}
}

// statsMessage is one parsed message of a stats stream.
type statsMessage struct {
	event string
	data  map[string]any
}

// readStats reads n messages of a stats stream.
func readStats(tb testing.TB, body *bufio.Reader, n int) []statsMessage {
	tb.Helper()
	var out []statsMessage
	var cur statsMessage
	for len(out) < n {
		line, err := body.ReadString('\n')
		if err != nil {
			tb.Fatalf("stats stream ended after %d messages: %v", len(out), err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				tb.Fatalf("data %q: %v", line, err)
			}
		case line == "" && cur.event != "":
			out = append(out, cur)
			cur = statsMessage{}
		}
	}
	return out
}

func TestStatsStream(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite)
	MustStatus(t, f.MustDo(t, "POST", "/api/v1/admin/events", adminH, EventBody("live-1", "seats", 5, "capacity", 1)), http.StatusCreated)
	f.MustJoin(t, "live-1", simH, map[string]any{"user_type": "VIRTUAL"})
	f.MustJoin(t, "live-1", simH, map[string]any{"user_type": "VIRTUAL"})

	MustError(t, f.MustDo(t, "GET", "/api/v1/events/nope/stats/stream", nil, nil), http.StatusNotFound, "EVENT_NOT_FOUND")

	res, err := f.Client.Get(f.URL + "/api/v1/events/live-1/stats/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("stream answered %d %q", res.StatusCode, ct)
	}
	rd := bufio.NewReader(res.Body)
	first := readStats(t, rd, 1)[0]
	if first.event != "stats" || num(first.data, "waiting")+num(first.data, "active") != 2 || num(first.data, "seats_left") != 5 || first.data["paused"] != false {
		t.Fatalf("first message = %+v", first)
	}
	MustStatus(t, f.MustDo(t, "POST", "/api/v1/admin/events/live-1/pause", adminH, nil), http.StatusOK)
	// The pause shows in a later message; the client's 30 s timeout guards a stream that never shows it.
	for {
		if m := readStats(t, rd, 1)[0]; m.data["paused"] == true {
			break
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(first.data["at"])); err != nil {
		t.Errorf("at = %v: %v", first.data["at"], err)
	}
}

func TestAdmissionsList(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite)
	MustStatus(t, f.MustDo(t, "POST", "/api/v1/admin/events", adminH, EventBody("adm-1", "capacity", 100)), http.StatusCreated)
	userID, token := f.MustSession(t, "person")
	f.MustJoin(t, "adm-1", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "b1"})
	f.MustJoin(t, "adm-1", Bearer(token), map[string]any{"user_type": "ACTUAL"})
	f.MustJoin(t, "adm-1", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "b2"})

	r := f.MustDo(t, "GET", "/api/v1/admin/events/adm-1/admissions", adminH, nil)
	MustStatus(t, r, http.StatusOK)
	var got []string
	for _, a := range r.Body["admissions"].([]any) {
		a := a.(map[string]any)
		got = append(got, fmt.Sprintf("%v %v %v %v", num(a, "admission_no"), a["user_id"], a["user_type"], num(a, "seq")))
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(a["admitted_at"])); err != nil {
			t.Errorf("admitted_at = %v", a["admitted_at"])
		}
	}
	want := []string{"3 VIRTUAL:b2 VIRTUAL 3", "2 " + userID + " ACTUAL 2", "1 VIRTUAL:b1 VIRTUAL 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("admissions = %q, want newest first %q", got, want)
	}
	r = f.MustDo(t, "GET", "/api/v1/admin/events/adm-1/admissions?limit=1", adminH, nil)
	if a := r.Body["admissions"].([]any); len(a) != 1 || num(a[0].(map[string]any), "admission_no") != 3 {
		t.Errorf("limit=1 gave %s", r.Raw)
	}

	for _, tc := range []struct {
		name, path string
		headers    map[string]string
		status     int
		code       string
	}{
		// Admin only.
		{"without the admin key", "/api/v1/admin/events/adm-1/admissions", nil, 401, "UNAUTHENTICATED"},
		// A wrong key.
		{"with a wrong admin key", "/api/v1/admin/events/adm-1/admissions", badAdminH, 403, "FORBIDDEN"},
		// Below the range.
		{"limit 0", "/api/v1/admin/events/adm-1/admissions?limit=0", adminH, 400, "BAD_REQUEST"},
		// Above the range.
		{"limit 501", "/api/v1/admin/events/adm-1/admissions?limit=501", adminH, 400, "BAD_REQUEST"},
		// Not a number.
		{"limit x", "/api/v1/admin/events/adm-1/admissions?limit=x", adminH, 400, "BAD_REQUEST"},
		// No such event.
		{"unknown event", "/api/v1/admin/events/nope/admissions", adminH, 404, "EVENT_NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			MustError(t, f.MustDo(t, "GET", tc.path, tc.headers, nil), tc.status, tc.code)
		})
	}
}

// Practice races are private: the public list leaves them out, the admin
// key shows them.
func TestPracticeEventsAreNotListed(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite)
	_, token := f.MustSession(t, "racer")
	race := obj(f.MustStartRace(t, token, 60).Body, "event")["id"].(string)
	f.MustCreateEvent(t, EventBody("public"))
	for _, tc := range []struct {
		name         string
		headers      map[string]string
		withPractice bool
	}{
		{"no key", nil, false},
		{"wrong admin key", badAdminH, false},
		{"admin key", adminH, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, "GET", "/api/v1/events", tc.headers, nil)
			MustStatus(t, r, http.StatusOK)
			var ids []string
			for _, ev := range r.Body["events"].([]any) {
				ids = append(ids, ev.(map[string]any)["id"].(string))
			}
			if !slices.Contains(ids, "public") || slices.Contains(ids, race) != tc.withPractice {
				t.Errorf("events %v; want public, and %s listed: %v", ids, race, tc.withPractice)
			}
		})
	}
}

// POST /practice has a rate-limit route of its own: a race costs bots.
func TestPracticeStartIsRateLimited(t *testing.T) {
	f := MustPracticeServer(t, store.DialectSQLite)
	g := MustLimited(t, f.Fixture, "practice=1/m", false, nil)
	_, token := g.MustSession(t, "eager")
	MustStatus(t, g.MustDo(t, "POST", "/api/v1/practice", Bearer(token), map[string]any{"scenario": "tiny-race", "opens_in_s": 60}), http.StatusCreated)
	MustRateLimited(t, g.MustDo(t, "POST", "/api/v1/practice", Bearer(token), map[string]any{"scenario": "tiny-race"}), 60)
	// Other practice calls are not limited by it.
	MustStatus(t, g.MustDo(t, "GET", "/api/v1/practice/scenarios", nil, nil), http.StatusOK)
}

// Stats streams have a gauge of their own, not rushline_sse_connections.
func TestStatsStreamGauge(t *testing.T) {
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("live-2"))
	for range 2 {
		res, err := f.Client.Get(f.URL + "/api/v1/events/live-2/stats/stream")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		readStats(t, bufio.NewReader(res.Body), 1)
	}
	if line := f.MustMetric(t, `rushline_stats_streams{event="live-2"}`); !strings.HasSuffix(strings.TrimSpace(line), " 2") {
		t.Errorf("stats streams gauge = %q, want 2", line)
	}
	if line := f.MustMetric(t, `rushline_sse_connections{event="live-2"}`); line != "" {
		t.Errorf("stats streams counted as SSE connections: %q", line)
	}
}
