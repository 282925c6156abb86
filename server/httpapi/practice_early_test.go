package httpapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/store/storetest"
)

// slowRace and crushRace are practice scenarios whose crowds take 16 s to
// arrive, so that a person's attempt ends while the crowd races on: 120
// bots each. slowRace has 20 seats and 3 s windows (a person's turn runs
// out soon); crushRace 5 seats and 30 s windows, so the bots admitted
// ahead of a person (level normal: thinking 3 s at the median) sell out
// while the person waits.
const (
	slowRace = `
name: slow-race
description: 120 bots over 16 s, 20 seats, 3 s windows.
seed: 5
event:
  create:
    seats: 20
    capacity: 10
    admit_batch: 10
    admit_interval_ms: 100
    active_ttl_s: 3
    opens_in: 3s
phases:
  - name: trickle
    arrival: spike
    users: 120
    over: 16s
bots:
  - name: buyer
    weight: 1
    wait: sse
    reaction: {dist: lognormal, median: 200ms, p90: 500ms}
    think: {dist: uniform, min: 50ms, max: 200ms}
    seat: random
    retry_on_taken: 3
`
	crushRace = `
name: crush-race
description: 120 bots over 16 s, 5 seats, 30 s windows.
seed: 6
event:
  create:
    seats: 5
    capacity: 20
    admit_batch: 20
    admit_interval_ms: 100
    active_ttl_s: 30
    opens_in: 3s
phases:
  - name: trickle
    arrival: spike
    users: 120
    over: 16s
bots:
  - name: buyer
    weight: 1
    wait: sse
    reaction: {dist: lognormal, median: 200ms, p90: 500ms}
    think: {dist: uniform, min: 50ms, max: 200ms}
    seat: random
    retry_on_taken: 3
`
)

// raceBots is both scenarios' crowd.
const raceBots = 120

// TestPracticeEarlyResult: a practice race's result is there as soon as
// the person's own attempt has ended, however it ended, while the crowd
// still races: partial (final false, no finished_at, the bots so far),
// then final once the crowd is done, with the person's figures unchanged.
// Before the end, 409 RACE_NOT_FINISHED says why: not joined, waiting in
// line, or buying. Answers asked for at once agree (the bots' tally is
// shared per race).
func TestPracticeEarlyResult(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test: runs in make test")
	}
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			f := MustPracticeServer(t, dialect, drop.WithScenarios(MustScenario(t, slowRace), MustScenario(t, crushRace)),
				drop.WithSoloLimits(drop.SoloLimits{PerClient: 8}))
			for _, tc := range []struct {
				name, scenario string
				// paused holds the line from before the opening: nobody is
				// admitted until it resumes.
				paused bool
				// botsAhead is how many bots the person lets join first.
				botsAhead int
				// pending is the 409's words once the person has joined.
				pending string
				// end ends the person's attempt, or lets it end.
				end     func(r *race, t *testing.T)
				outcome string
			}{
				{"bought", "slow-race", false, 0, "your turn to buy", (*race).buy, practice.OutcomeBought},
				// The window (active_ttl_s 3) runs out.
				{"turn ran out", "slow-race", false, 0, "your turn to buy", func(*race, *testing.T) {}, practice.OutcomeExpired},
				{"left the line", "slow-race", true, 0, "still waiting in line", (*race).leave, practice.OutcomeLeft},
				// The first 20 of the 40 bots ahead are admitted once the line
				// moves, and buy the 5 seats.
				{"sold out while waiting", "crush-race", true, 40, "still waiting in line", (*race).resume, practice.OutcomeSoldOut},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					_, token := f.MustSession(t, "racer")
					var (
						r       *race
						opensAt time.Time
					)
					for attempt := 1; ; attempt++ {
						start := f.MustDo(t, "POST", "/api/v1/practice", Bearer(token), map[string]any{"scenario": tc.scenario, "opens_in_s": 3})
						MustStatus(t, start, http.StatusCreated)
						r = &race{f: f, id: obj(start.Body, "event")["id"].(string), token: token}
						var err error
						if opensAt, err = time.Parse(time.RFC3339Nano, start.Str("opens_at")); err != nil {
							t.Fatal(err)
						}
						r.mustPending(t, "have not joined")
						if !tc.paused {
							break
						}
						MustStatus(t, f.MustDo(t, "POST", "/api/v1/admin/events/"+r.id+"/pause", adminH, nil), http.StatusOK)
						if time.Now().Before(opensAt) {
							break
						}
						// On a loaded machine the pause can land after the
						// opening, when the line has moved: race again.
						if attempt == 3 {
							t.Fatalf("the pause landed after the opening in %d races", attempt)
						}
						t.Logf("race %d: the pause landed after the opening; starting another", attempt)
					}
					time.Sleep(time.Until(opensAt) + 20*time.Millisecond)
					if tc.botsAhead > 0 {
						testutil.Eventually(t, 20*time.Second, "bots in line", func() bool {
							l := f.MustDo(t, "GET", "/api/v1/practice/"+r.id+"/live", Bearer(token), nil)
							return num(l.Body, "waiting_bots") >= float64(tc.botsAhead)
						})
					}
					r.tok = f.MustJoin(t, r.id, Bearer(token), actual).Str("token")
					if !tc.paused {
						testutil.Eventually(t, 20*time.Second, "the person admitted", func() bool { return r.status(t) == "ACTIVE" })
					}
					r.mustPending(t, tc.pending)

					tc.end(r, t)
					ended := time.Now()
					early := mustResult(t, f, r.id, token)
					t.Logf("result %v after the end step (for the turn that ran out and the sell-out, the end itself comes later)", time.Since(ended).Round(time.Millisecond))
					if tc.paused && tc.botsAhead == 0 {
						r.resume(t) // the crowd may finish now
					}
					you := obj(early.Body, "you")
					if early.Body["final"] != false || early.Body["finished_at"] != nil {
						t.Errorf("early result final %v, finished_at %v: want a partial result while the crowd races", early.Body["final"], early.Body["finished_at"])
					}
					if you["outcome"] != tc.outcome || you["joined"] != true || (early.Body["got_seat"] == true) != (tc.outcome == practice.OutcomeBought) {
						t.Errorf("early result you = %v, want outcome %s", you, tc.outcome)
					}
					if bots := num(early.Body, "bots"); bots > raceBots || num(early.Body, "bots_planned") != raceBots {
						t.Errorf("early result bots %v of %v planned, want at most %d so far", bots, num(early.Body, "bots_planned"), raceBots)
					}
					mustBotSide(t, early)
					for _, a := range mustResultsAtOnce(t, r, 8) {
						mustBotSide(t, a)
						if you := obj(a.Body, "you"); you["outcome"] != tc.outcome {
							t.Errorf("a concurrent answer's outcome is %v, want %s", you["outcome"], tc.outcome)
						}
					}

					final := mustFinalResult(t, f, r.id, token)
					if num(final.Body, "bots") != raceBots || num(final.Body, "bots_planned") != raceBots {
						t.Errorf("final bots %v, want all %d", num(final.Body, "bots"), raceBots)
					}
					mustBotSide(t, final)
					if !bytes.Equal(mustJSON(t, you), mustJSON(t, obj(final.Body, "you"))) {
						t.Errorf("the person's figures changed from the early result %v to the final %v", you, obj(final.Body, "you"))
					}
					mine := 0.0
					if tc.outcome == practice.OutcomeBought {
						mine = 1
					}
					if stats := obj(final.Body, "bot_stats"); num(stats, "bought")+mine != num(final.Body, "sold") {
						t.Errorf("final: bots bought %v, the person %v, sold %v", num(stats, "bought"), mine, num(final.Body, "sold"))
					}
					for _, a := range mustResultsAtOnce(t, r, 8) {
						if !bytes.Equal(a.Raw, final.Raw) {
							t.Errorf("final answers differ:\n%s\n%s", a.Raw, final.Raw)
						}
					}
				})
			}
		})
	}
}

// race is one person's practice race in a test.
type race struct {
	f     *PracticeFixture
	id    string
	token string
	// tok is the person's place in line.
	tok string
}

// status is the person's queue status.
func (r *race) status(t *testing.T) string {
	t.Helper()
	st := r.f.MustDo(t, "GET", "/api/v1/events/"+r.id+"/queue/"+r.tok, nil, nil)
	MustStatus(t, st, http.StatusOK)
	return st.Str("status")
}

// mustPending asserts the result is not ready, and comes to say want (the
// person's stored result follows the queue within the player's write).
func (r *race) mustPending(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res := r.f.MustDo(t, "GET", "/api/v1/practice/"+r.id+"/result", Bearer(r.token), nil)
		MustError(t, res, http.StatusConflict, "RACE_NOT_FINISHED")
		_, msg := res.Err()
		if strings.Contains(msg, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("409 message %q, want it to say %q", msg, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buy buys the first free seat.
func (r *race) buy(t *testing.T) {
	t.Helper()
	seats := r.f.MustDo(t, "GET", "/api/v1/events/"+r.id+"/seats", H("X-Queue-Token", r.tok), nil)
	MustStatus(t, seats, http.StatusOK)
	for _, s := range seats.Body["seats"].([]any) {
		if s := s.(map[string]any); s["taken"] == false {
			o := r.f.MustDo(t, "POST", "/api/v1/events/"+r.id+"/orders", Bearer(r.token), map[string]any{"token": r.tok, "seat": s["id"]})
			if o.Status == http.StatusCreated {
				return
			}
			MustError(t, o, http.StatusConflict, "SEAT_TAKEN")
		}
	}
	t.Fatal("no seat bought")
}

// leave leaves the line.
func (r *race) leave(t *testing.T) {
	t.Helper()
	MustStatus(t, r.f.MustDo(t, "DELETE", "/api/v1/events/"+r.id+"/queue/"+r.tok, Bearer(r.token), nil), http.StatusNoContent)
}

// resume lets the line move again.
func (r *race) resume(t *testing.T) {
	t.Helper()
	MustStatus(t, r.f.MustDo(t, "POST", "/api/v1/admin/events/"+r.id+"/resume", adminH, nil), http.StatusOK)
}

// mustResultsAtOnce asks for the result n times at once; every answer is a 200.
func mustResultsAtOnce(t *testing.T, r *race, n int) []*Response {
	t.Helper()
	out := make([]*Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = r.f.Do("GET", "/api/v1/practice/"+r.id+"/result", Bearer(r.token), nil) })
	}
	wg.Wait()
	for i, a := range out {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		MustStatus(t, a, http.StatusOK)
	}
	return out
}

// mustBotSide checks a result's bots' side: every bot that joined has one
// outcome, at most the seats are sold, and a partial result's bots still
// racing count as waiting (or sold out), a final one's never.
func mustBotSide(t *testing.T, res *Response) {
	t.Helper()
	stats := obj(res.Body, "bot_stats")
	var sum float64
	for _, n := range obj(stats, "outcomes") {
		sum += n.(float64)
	}
	outcomes := obj(stats, "outcomes")
	if sum != num(res.Body, "bots") || num(res.Body, "sold") > num(res.Body, "seats") || num(stats, "bought") > num(res.Body, "sold") {
		t.Errorf("bots %v, outcomes %v (sum %v), bought %v, sold %v", num(res.Body, "bots"), outcomes, sum, num(stats, "bought"), num(res.Body, "sold"))
	}
	if _, racing := outcomes[practice.OutcomeWaiting]; racing && res.Body["final"] == true {
		t.Errorf("a final result has bots still %q: %v", practice.OutcomeWaiting, outcomes)
	}
}
