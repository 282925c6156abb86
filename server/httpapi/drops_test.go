package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/simulator/scenario"
)

// dropScenario is a small scenario for drops: 100 users in a 200 ms spike
// for 20 seats.
func dropScenario() *scenario.Scenario {
	return &scenario.Scenario{Name: "small-rush", Seed: 5,
		Event: scenario.Event{Create: &scenario.EventCreate{Seats: 20, Capacity: 5, AdmitBatch: 5,
			AdmitIntervalMS: 50, ActiveTTLS: 30, Policy: "capacity"}},
		Phases: []scenario.Phase{{Name: "rush", Arrival: scenario.ArrivalSpike, Users: 100,
			Over: scenario.Duration(200 * time.Millisecond), Duration: scenario.Duration(200 * time.Millisecond)}}}
}

// MustDropServer is a fixture that serves drops of dropScenario, with fast
// player steps.
func MustDropServer(tb testing.TB) *Fixture {
	tb.Helper()
	return MustServerWith(tb, FixtureOptions{Drops: []drop.Option{drop.WithScenarios(dropScenario()),
		drop.WithTick(2 * time.Millisecond), drop.WithDiscover(5 * time.Millisecond), drop.WithFlush(10 * time.Millisecond)}})
}

// MustCreateDrop creates a drop through the API and returns its body.
func (f *Fixture) MustCreateDrop(tb testing.TB, body map[string]any) *Response {
	tb.Helper()
	r := f.MustDo(tb, http.MethodPost, "/api/v1/admin/drops", adminH, body)
	MustStatus(tb, r, http.StatusCreated)
	return r
}

func TestDropsCreateListGet(t *testing.T) {
	f := MustDropServer(t)
	opens := t0.Add(5 * time.Minute)
	r := f.MustCreateDrop(t, map[string]any{"scenario": "small-rush", "level": "hard", "crowd": 200_000,
		"seats": 2000, "opens_at": opens.Format(time.RFC3339)})
	id, event := r.Str("id"), r.Str("event")
	if !strings.HasPrefix(id, "d-2026-11-22t1005-hard-") || event != drop.EventID(id) || r.Str("scenario") != "small-rush" ||
		r.Str("level") != "hard" || r.Str("phase") != "scheduled" || r.Str("opens_at") != opens.Format(time.RFC3339) ||
		r.Str("server_time") != t0.Format(time.RFC3339) {
		t.Fatalf("created %s", r)
	}
	for field, want := range map[string]float64{"crowd": 200_000, "seats": 2000, "people": 0} {
		if got, ok := r.Num(field); !ok || got != want {
			t.Errorf("%s = %v, want %v", field, got, want)
		}
	}
	// The level defaults to normal; crowd and seats to the scenario's.
	r2 := f.MustCreateDrop(t, map[string]any{"scenario": "small-rush", "opens_at": t0.Add(time.Minute).Format(time.RFC3339)})
	if crowd, _ := r2.Num("crowd"); r2.Str("level") != "normal" || crowd != 100 || r2.Str("phase") != "countdown" {
		t.Errorf("defaults: %s", r2)
	}
	// The drop's event is an ordinary event.
	MustStatus(t, f.MustDo(t, http.MethodGet, "/api/v1/events/"+event, nil, nil), http.StatusOK)

	list := f.MustDo(t, http.MethodGet, "/api/v1/drops", nil, nil)
	MustStatus(t, list, http.StatusOK)
	drops, _ := list.Body["drops"].([]any)
	if len(drops) != 2 || drops[0].(map[string]any)["id"] != r2.Str("id") || list.Str("server_time") == "" {
		t.Errorf("list = %s, want both drops, soonest first", list)
	}

	g := f.MustDo(t, http.MethodGet, "/api/v1/drops/"+id, nil, nil)
	MustStatus(t, g, http.StatusOK)
	stats, _ := g.Body["stats"].(map[string]any)
	for field, want := range map[string]float64{"waiting": 0, "active": 0, "sold": 0, "seats_left": 2000,
		"people_joined": 0, "crowd_joined": 0} {
		if got, ok := stats[field].(float64); !ok || got != want {
			t.Errorf("stats.%s = %v, want %v (%s)", field, stats[field], want, g)
		}
	}
}

func TestDropsBadInput(t *testing.T) {
	f := MustDropServer(t)
	ahead := t0.Add(time.Minute).Format(time.RFC3339)
	body := func(kv ...any) map[string]any {
		b := map[string]any{"scenario": "small-rush", "level": "easy", "crowd": 10, "seats": 5, "opens_at": ahead}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
			} else {
				b[kv[i].(string)] = kv[i+1]
			}
		}
		return b
	}
	tests := []struct {
		name    string
		headers map[string]string
		body    any
		status  int
		code    string
		// field is what a 400's message must name.
		field string
	}{
		{"no admin key", nil, body(), http.StatusUnauthorized, "UNAUTHENTICATED", ""},
		{"wrong admin key", badAdminH, body(), http.StatusForbidden, "FORBIDDEN", ""},
		{"a person's bearer", Bearer("x"), body(), http.StatusUnauthorized, "UNAUTHENTICATED", ""},
		{"bad level", adminH, body("level", "expert"), http.StatusBadRequest, "BAD_REQUEST", "level"},
		{"negative crowd", adminH, body("crowd", -1), http.StatusBadRequest, "BAD_REQUEST", "crowd"},
		{"crowd too big", adminH, body("crowd", 1_000_001), http.StatusBadRequest, "BAD_REQUEST", "crowd"},
		{"crowd not a number", adminH, body("crowd", "many"), http.StatusBadRequest, "BAD_REQUEST", "crowd"},
		{"no seats", adminH, body("seats", 0), http.StatusBadRequest, "BAD_REQUEST", "seats"},
		{"too many seats", adminH, body("seats", 100_001), http.StatusBadRequest, "BAD_REQUEST", "seats"},
		{"opening in 5 s", adminH, body("opens_at", t0.Add(5*time.Second).Format(time.RFC3339)), http.StatusBadRequest, "BAD_REQUEST", "opens_at"},
		{"opening in the past", adminH, body("opens_at", t0.Add(-time.Hour).Format(time.RFC3339)), http.StatusBadRequest, "BAD_REQUEST", "opens_at"},
		{"opening not a time", adminH, body("opens_at", "tomorrow"), http.StatusBadRequest, "BAD_REQUEST", "opens_at"},
		{"no opening", adminH, body("opens_at", nil), http.StatusBadRequest, "BAD_REQUEST", "opens_at"},
		{"no scenario", adminH, body("scenario", nil), http.StatusBadRequest, "BAD_REQUEST", "scenario"},
		{"unknown field", adminH, body("colour", "red"), http.StatusBadRequest, "BAD_REQUEST", "colour"},
		{"not an object", adminH, "[]", http.StatusBadRequest, "BAD_REQUEST", ""},
		{"unknown scenario", adminH, body("scenario", "no-such"), http.StatusNotFound, "SCENARIO_NOT_FOUND", ""},
		// 400 outranks 404.
		{"unknown scenario and bad level", adminH, body("scenario", "no-such", "level", "x"), http.StatusBadRequest, "BAD_REQUEST", "level"},
		{"unknown scenario and bad mode", adminH, body("scenario", "no-such", "queue_mode", "lottery"), http.StatusBadRequest, "BAD_REQUEST", "queue_mode"},
		// The opening takes what an event takes (API-next.md).
		{"bad queue mode", adminH, body("queue_mode", "lottery"), http.StatusBadRequest, "BAD_REQUEST", "queue_mode"},
		{"pre-queue after the opening", adminH, body("queue_mode", "random_start", "prequeue_opens_at", t0.Add(2*time.Minute).Format(time.RFC3339)),
			http.StatusBadRequest, "BAD_REQUEST", "prequeue_opens_at"},
		{"pre-queue not a time", adminH, body("prequeue_opens_at", "soon"), http.StatusBadRequest, "BAD_REQUEST", "prequeue_opens_at"},
		{"bad challenge", adminH, body("challenge", "captcha"), http.StatusBadRequest, "BAD_REQUEST", "challenge"},
		{"pow without bits", adminH, body("challenge", "pow"), http.StatusBadRequest, "BAD_REQUEST", "pow_bits"},
		{"pow bits too many", adminH, body("challenge", "pow", "pow_bits", 29), http.StatusBadRequest, "BAD_REQUEST", "pow_bits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodPost, "/api/v1/admin/drops", tc.headers, tc.body)
			MustError(t, r, tc.status, tc.code)
			if _, msg := r.Err(); tc.field != "" && !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %s", msg, tc.field)
			}
		})
	}
	for _, path := range []string{"/api/v1/drops/d-nope", "/api/v1/drops/d-nope/results"} {
		MustError(t, f.MustDo(t, http.MethodGet, path, nil, nil), http.StatusNotFound, "DROP_NOT_FOUND")
	}
	_, tok := f.MustSession(t, "ann")
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/drops/d-nope/results/me", Bearer(tok), nil), http.StatusNotFound, "DROP_NOT_FOUND")
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/leaderboard?period=month", nil, nil), http.StatusBadRequest, "BAD_REQUEST")
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/leaderboard?scenario=no-such", nil, nil), http.StatusNotFound, "SCENARIO_NOT_FOUND")
	lb := f.MustDo(t, http.MethodGet, "/api/v1/leaderboard", nil, nil)
	if entries, ok := lb.Body["entries"].([]any); lb.Status != http.StatusOK || !ok || len(entries) != 0 || lb.Str("period") != "day" {
		t.Errorf("empty leaderboard = %s", lb)
	}
}

// A drop opens as its admin asks (API-next.md: drops take the event's queue
// mode and challenge): the drop shows its opening, its event has it, and a
// join without a solution is refused.
func TestDropOpening(t *testing.T) {
	f := MustDropServer(t)
	opens := t0.Add(5 * time.Minute)
	pre := t0.Add(time.Minute)
	r := f.MustCreateDrop(t, map[string]any{"scenario": "small-rush", "opens_at": opens.Format(time.RFC3339),
		"queue_mode": "random_start", "prequeue_opens_at": pre.Format(time.RFC3339), "challenge": "pow", "pow_bits": 12})
	if r.Str("queue_mode") != "random_start" || r.Str("challenge") != "pow" || r.Str("prequeue_opens_at") != pre.Format(time.RFC3339) {
		t.Fatalf("created %s", r)
	}
	if bits, _ := r.Num("pow_bits"); bits != 12 {
		t.Errorf("pow_bits = %v, want 12", bits)
	}
	ev := f.MustDo(t, http.MethodGet, "/api/v1/events/"+r.Str("event"), nil, nil)
	if ev.Str("queue_mode") != "random_start" || ev.Str("challenge") != "pow" || ev.Str("draw_commitment") == "" {
		t.Errorf("the drop's event: %s", ev)
	}
	list := f.MustDo(t, http.MethodGet, "/api/v1/drops", nil, nil)
	drops, _ := list.Body["drops"].([]any)
	if len(drops) != 1 || drops[0].(map[string]any)["challenge"] != "pow" {
		t.Errorf("list = %s, want the drop with its challenge", list)
	}
	// A plain drop says so.
	plain := f.MustCreateDrop(t, map[string]any{"scenario": "small-rush", "opens_at": opens.Format(time.RFC3339)})
	if plain.Str("queue_mode") != "fifo" || plain.Str("challenge") != "none" {
		t.Errorf("plain drop %s", plain)
	}
	// A change of the drop's event shows in the drop.
	MustStatus(t, f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/"+plain.Str("event"), adminH,
		map[string]any{"queue_mode": "closed"}), http.StatusOK)
	if g := f.MustDo(t, http.MethodGet, "/api/v1/drops/"+plain.Str("id"), nil, nil); g.Str("queue_mode") != "closed" {
		t.Errorf("after PATCH: %s", g)
	}
	// The proof of work holds for people in the drop.
	f.Clock.Advance(opens.Add(time.Second).Sub(f.Clock.Now()))
	_, tok := f.MustSession(t, "ann")
	j := f.MustDo(t, http.MethodPost, "/api/v1/events/"+r.Str("event")+"/queue", Bearer(tok), map[string]any{"user_type": "ACTUAL"})
	MustError(t, j, http.StatusForbidden, "CHALLENGE_FAILED")
}

// TestDropFalseStartsAndMyResult: joins before the opening answer 409 and
// count as false starts; a join after it makes a result, with the person's
// place, reaction and percentile; someone who did not race has none.
func TestDropFalseStartsAndMyResult(t *testing.T) {
	f := MustDropServer(t)
	id := f.MustCreateDrop(t, map[string]any{"scenario": "small-rush", "level": "hard", "crowd": 100,
		"opens_at": t0.Add(10 * time.Second).Format(time.RFC3339)})
	event := id.Str("event")
	annID, ann := f.MustSession(t, "ann")
	_, bob := f.MustSession(t, "bob")
	for range 2 {
		MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/events/"+event+"/queue", Bearer(ann), actual), http.StatusConflict, "EVENT_NOT_OPEN")
	}
	me := "/api/v1/drops/" + id.Str("id") + "/results/me"
	MustError(t, f.MustDo(t, http.MethodGet, me, Bearer(ann), nil), http.StatusNotFound, "RESULT_NOT_FOUND")
	MustError(t, f.MustDo(t, http.MethodGet, me, nil, nil), http.StatusUnauthorized, "UNAUTHENTICATED")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go f.Drops.Run(ctx)
	f.Clock.Advance(10*time.Second + 250*time.Millisecond)
	j := f.MustJoin(t, event, Bearer(ann), actual)
	MustStatus(t, j, http.StatusCreated)
	var r *Response
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = f.MustDo(t, http.MethodGet, me, Bearer(ann), nil)
		if r.Status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	MustStatus(t, r, http.StatusOK)
	seq, _ := j.Num("seq")
	place, _ := j.Num("position")
	if place == 0 {
		place = 1 // admitted at once
	}
	got := map[string]float64{}
	for _, k := range []string{"rank", "reaction_ms", "position", "false_starts", "percentile"} {
		got[k], _ = r.Num(k)
	}
	if got["rank"] != 1 || got["reaction_ms"] != 250 || got["position"] != place || got["false_starts"] != 2 ||
		r.Str("nickname") != "ann" || r.Str("outcome") != "waiting" && r.Str("outcome") != "sold_out" {
		t.Errorf("my result %s; want rank 1, 250 ms, place %v, 2 false starts", r, place)
	}
	// The share of everyone who joined after her: all but those before her.
	counts := f.MustDo(t, http.MethodGet, "/api/v1/drops/"+id.Str("id"), nil, nil)
	stats, _ := counts.Body["stats"].(map[string]any)
	total := stats["people_joined"].(float64) + stats["crowd_joined"].(float64)
	if p := got["percentile"]; p < 0 || p > 100 || (total == seq && p != 0) {
		t.Errorf("percentile %v; %v joined, she was number %v", p, total, seq)
	}
	MustError(t, f.MustDo(t, http.MethodGet, me, Bearer(bob), nil), http.StatusNotFound, "RESULT_NOT_FOUND")

	// An ordinary event whose id looks like a drop's is no drop: nothing is
	// kept of its joins.
	f.MustCreateEvent(t, EventBody("drop-plain", "opens_at", f.Clock.Now().Add(time.Hour).Format(time.RFC3339)))
	MustError(t, f.MustDo(t, http.MethodPost, "/api/v1/events/drop-plain/queue", Bearer(bob), actual), http.StatusConflict, "EVENT_NOT_OPEN")
	if n := f.RDB.Exists(context.Background(), queue.CrowdKeys("drop-plain")...).Val(); n != 0 {
		t.Errorf("%d drop keys made for an ordinary event", n)
	}
	res := f.MustDo(t, http.MethodGet, "/api/v1/drops/"+id.Str("id")+"/results", nil, nil)
	MustStatus(t, res, http.StatusOK)
	people, _ := res.Body["people"].([]any)
	crowd, _ := res.Body["crowd"].(map[string]any)
	if len(people) != 1 || crowd == nil || crowd["reaction_ms"] == nil {
		t.Errorf("results %s", res)
	}
	// The leaderboard names whose each entry is, so a page marks its own row
	// by user id, never by nickname.
	lb := f.MustDo(t, http.MethodGet, "/api/v1/leaderboard?period=all", nil, nil)
	entries, _ := lb.Body["entries"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["user_id"] != annID {
		t.Errorf("leaderboard %s; want ann's entry with her user id %s", lb, annID)
	}
}
