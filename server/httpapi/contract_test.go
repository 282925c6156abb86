package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rushline/rushline/server/httpapi"
)

func qpath(ev, tok string) string { return "/api/v1/events/" + ev + "/queue/" + tok }

// mustTime parses an RFC 3339 field of r.
func mustTime(tb testing.TB, r *Response, field string) time.Time {
	tb.Helper()
	ts, err := time.Parse(time.RFC3339, r.Str(field))
	if err != nil {
		tb.Fatalf("%s = %q: %v (body %s)", field, r.Str(field), err, r.Raw)
	}
	return ts
}

// mustStats returns the stats of an event.
func (f *Fixture) mustStats(tb testing.TB, ev string) map[string]float64 {
	tb.Helper()
	r := f.MustDo(tb, http.MethodGet, "/api/v1/events/"+ev, nil, nil)
	MustStatus(tb, r, http.StatusOK)
	st, ok := r.Body["stats"].(map[string]any)
	if !ok {
		tb.Fatalf("no stats in %s", r.Raw)
	}
	out := map[string]float64{}
	for _, k := range []string{"waiting", "active", "admitted_total", "sold", "seats_left"} {
		v, ok := st[k].(float64)
		if !ok {
			tb.Fatalf("stats.%s missing in %s", k, r.Raw)
		}
		out[k] = v
	}
	return out
}

func mustStatsEqual(tb testing.TB, got map[string]float64, want map[string]float64) {
	tb.Helper()
	for k, v := range want {
		if got[k] != v {
			tb.Errorf("stats.%s = %v, want %v (all %v)", k, got[k], v, got)
		}
	}
}

// mustEntry checks the fields of a join or status body: position and eta_s
// only while WAITING, pass and expires_at only while ACTIVE.
func mustEntry(tb testing.TB, r *Response, status string, position float64) {
	tb.Helper()
	if got := r.Str("status"); got != status {
		tb.Fatalf("status = %q, want %q (%s)", got, status, r.Raw)
	}
	pos, hasPos := r.Num("position")
	_, hasETA := r.Num("eta_s")
	_, hasWaiting := r.Num("waiting")
	if !hasWaiting {
		tb.Errorf("no waiting in %s", r.Raw)
	}
	switch status {
	case "WAITING":
		if !hasPos || pos != position || !hasETA {
			tb.Errorf("want position %v and eta_s: %s", position, r.Raw)
		}
	default:
		if hasPos || hasETA {
			tb.Errorf("position / eta_s only while WAITING: %s", r.Raw)
		}
	}
	_, hasPass := r.Body["pass"]
	_, hasExp := r.Body["expires_at"]
	if status == "ACTIVE" != (hasPass && hasExp) || (status != "ACTIVE" && (hasPass || hasExp)) {
		tb.Errorf("pass and expires_at exactly while ACTIVE: %s", r.Raw)
	}
}

func TestNickname(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	for _, tc := range []struct {
		name, nickname string
	}{
		// one character
		{"one char", "a"},
		// 32 multibyte characters (64 bytes): length counts characters
		{"32 e-acute", strings.Repeat("é", 32)},
		// 32 ASCII characters
		{"32 ascii", strings.Repeat("x", 32)},
		// a space inside and a non-Latin script
		{"space and cjk", "チケット 好き"},
		// an emoji (4 bytes)
		{"emoji", "rush 🎟"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": tc.nickname})
			MustStatus(t, r, http.StatusCreated)
			if r.Str("nickname") != tc.nickname || !strings.HasPrefix(r.Str("user_id"), "u_") || r.Str("access_token") == "" {
				t.Fatalf("body = %s", r.Raw)
			}
			if exp := mustTime(t, r, "expires_at"); !exp.After(f.Clock.Now()) {
				t.Errorf("expires_at %v not after now", exp)
			}
			// Sessions are not unique by nickname.
			again := f.MustDo(t, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": tc.nickname})
			MustStatus(t, again, http.StatusCreated)
			if again.Str("user_id") == r.Str("user_id") {
				t.Errorf("same nickname got the same user id %s", r.Str("user_id"))
			}
		})
	}
}

func TestBodyLimitBoundary(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	obj := `{"nickname":"edge"}`
	for _, tc := range []struct {
		name   string
		size   int
		status int
	}{
		// exactly 64 KiB is accepted
		{"exactly 64 KiB", httpapi.MaxBody, http.StatusCreated},
		// one byte more is not
		{"64 KiB + 1", httpapi.MaxBody + 1, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := obj + strings.Repeat(" ", tc.size-len(obj))
			for _, chunked := range []bool{false, true} {
				var b any = body
				if chunked {
					b = strings.NewReader(body)
				}
				r := f.MustDo(t, http.MethodPost, "/api/v1/sessions", nil, b)
				if tc.status == http.StatusCreated {
					MustStatus(t, r, tc.status)
				} else {
					MustError(t, r, tc.status, "BODY_TOO_LARGE")
				}
			}
		})
	}
}

func TestEventCreateAndRead(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	opens, closes := t0.Add(time.Hour).Format(time.RFC3339), t0.Add(2*time.Hour).Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		// the example of API.md, with times after the test clock
		{"api example", map[string]any{"id": "concert-1", "name": "Spring concert", "seats": 500, "capacity": 100,
			"admit_batch": 50, "admit_interval_ms": 1000, "active_ttl_s": 300, "policy": "capacity", "max_tps": 0,
			"opens_at": opens, "closes_at": closes}},
		// every lower limit, and no name
		{"lower limits", EventBody("0", "name", nil, "seats", 1, "capacity", 1, "admit_batch", 1, "admit_interval_ms", 50, "active_ttl_s", 1)},
		// every upper limit, and a 64-character id
		{"upper limits", EventBody(strings.Repeat("z", 64), "seats", 1_000_000, "capacity", 1_000_000, "admit_batch", 100_000,
			"admit_interval_ms", 3_600_000, "active_ttl_s", 86_400, "name", strings.Repeat("n", 200))},
		// policy batch
		{"batch", EventBody("b-1", "policy", "batch")},
		// policy adaptive with max_tps 1
		{"adaptive", EventBody("a-1", "policy", "adaptive", "max_tps", 1)},
		// closes_at only, just after now
		{"closes soon", EventBody("c-1", "closes_at", t0.Add(time.Second).Format(time.RFC3339))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.MustCreateEvent(t, tc.body)
			for k, v := range tc.body {
				want := v
				if n, ok := v.(int); ok {
					want = float64(n)
				}
				if got[k] != want {
					t.Errorf("%s = %v, want %v", k, got[k], want)
				}
			}
			id := tc.body["id"].(string)
			mustStatsEqual(t, f.mustStats(t, id), map[string]float64{
				"waiting": 0, "active": 0, "admitted_total": 0, "sold": 0, "seats_left": float64(tc.body["seats"].(int)),
			})
		})
	}
	r := f.MustDo(t, http.MethodGet, "/api/v1/events", nil, nil)
	MustStatus(t, r, http.StatusOK)
	list, _ := r.Body["events"].([]any)
	if len(list) != 6 {
		t.Fatalf("events = %d, want 6: %s", len(list), r.Raw)
	}
	for _, e := range list {
		if _, ok := e.(map[string]any)["stats"]; ok {
			t.Errorf("the list carries no stats: %v", e)
		}
	}
}

func TestEventsListEmpty(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	r := f.MustDo(t, http.MethodGet, "/api/v1/events", nil, nil)
	MustStatus(t, r, http.StatusOK)
	if strings.TrimSpace(string(r.Raw)) != `{"events":[]}` {
		t.Errorf("body = %s, want an empty list", r.Raw)
	}
}

func TestJoinShape(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("show"))
	aliceID, alice := f.MustSession(t, "alice")
	bobID, bob := f.MustSession(t, "bob")
	_, carol := f.MustSession(t, "carol")

	// Room: ACTIVE at once, with a pass and no place in line.
	a := f.MustJoin(t, "show", Bearer(alice), actual)
	MustStatus(t, a, http.StatusCreated)
	mustEntry(t, a, "ACTIVE", 0)
	if a.Str("user_id") != aliceID || a.Str("user_type") != "ACTUAL" {
		t.Errorf("identity: %s", a.Raw)
	}
	if exp := mustTime(t, a, "expires_at"); !exp.Equal(t0.Add(300 * time.Second)) {
		t.Errorf("expires_at = %v, want now + active_ttl_s", exp)
	}

	// Full: WAITING at position 1.
	b := f.MustJoin(t, "show", Bearer(bob), actual)
	MustStatus(t, b, http.StatusCreated)
	mustEntry(t, b, "WAITING", 1)
	if b.Str("user_id") != bobID || b.Str("user_type") != "ACTUAL" {
		t.Errorf("identity: %s", b.Raw)
	}
	if n, _ := b.Num("waiting"); n != 1 {
		t.Errorf("waiting = %v, want 1", n)
	}

	// Re-join: 200 and the same token, for either state.
	for _, tc := range []struct {
		name  string
		token string
		first *Response
	}{{"active", alice, a}, {"waiting", bob, b}} {
		again := f.MustJoin(t, "show", Bearer(tc.token), actual)
		MustStatus(t, again, http.StatusOK)
		if again.Str("token") != tc.first.Str("token") || again.Str("status") != tc.first.Str("status") {
			t.Errorf("%s re-join = %s, want the same token as %s", tc.name, again.Raw, tc.first.Raw)
		}
	}

	c := f.MustJoin(t, "show", Bearer(carol), actual)
	mustEntry(t, c, "WAITING", 2)
	if n, _ := c.Num("waiting"); n != 2 {
		t.Errorf("waiting = %v, want 2", n)
	}

	// VIRTUAL: a server-made id, or VIRTUAL:<bot_id>.
	v := f.MustJoin(t, "show", simH, map[string]any{"user_type": "VIRTUAL"})
	MustStatus(t, v, http.StatusCreated)
	if id := v.Str("user_id"); !strings.HasPrefix(id, "VIRTUAL:") || len(id) != len("VIRTUAL:")+36 || v.Str("user_type") != "VIRTUAL" {
		t.Errorf("virtual identity: %s", v.Raw)
	}
	mustEntry(t, v, "WAITING", 3)
	nb := f.MustJoin(t, "show", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "bot.7_X-y"})
	MustStatus(t, nb, http.StatusCreated)
	if nb.Str("user_id") != "VIRTUAL:bot.7_X-y" {
		t.Errorf("named bot id: %s", nb.Raw)
	}
	nb2 := f.MustJoin(t, "show", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "bot.7_X-y"})
	MustStatus(t, nb2, http.StatusOK)
	if nb2.Str("token") != nb.Str("token") {
		t.Errorf("bot re-join got another token")
	}

	// Status: no identity fields needed, the same place.
	s := f.MustDo(t, http.MethodGet, qpath("show", b.Str("token")), nil, nil)
	MustStatus(t, s, http.StatusOK)
	mustEntry(t, s, "WAITING", 1)
	if n, _ := s.Num("waiting"); n != 4 {
		t.Errorf("waiting = %v, want 4", n)
	}
	if n, ok := s.Num("admitted_total"); !ok || n != 1 {
		t.Errorf("admitted_total = %v, want 1", n)
	}
	mustStatsEqual(t, f.mustStats(t, "show"), map[string]float64{"waiting": 4, "active": 1, "admitted_total": 1, "sold": 0, "seats_left": 10})
}

func TestJoinParallelIdempotent(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rush"))
	_, alice := f.MustSession(t, "alice")
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    map[string]any
	}{
		// one person double-clicking 50 times
		{"actual", Bearer(alice), actual},
		// one named bot
		{"virtual bot", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "racer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 50
			var wg sync.WaitGroup
			res := make([]*Response, n)
			errs := make([]error, n)
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					res[i], errs[i] = f.Do(http.MethodPost, "/api/v1/events/rush/queue", tc.headers, tc.body)
				})
			}
			close(start)
			wg.Wait()
			created, ok := 0, 0
			tokens := map[string]bool{}
			for i, r := range res {
				if errs[i] != nil {
					t.Fatalf("join %d: %v", i, errs[i])
				}
				switch r.Status {
				case http.StatusCreated:
					created++
				case http.StatusOK:
					ok++
				default:
					t.Fatalf("join %d: %s", i, r)
				}
				tokens[r.Str("token")] = true
			}
			if created != 1 || ok != n-1 || len(tokens) != 1 {
				t.Fatalf("201s = %d, 200s = %d, tokens = %d; want 1, %d, 1", created, ok, len(tokens), n-1)
			}
		})
	}
	// alice took the one active slot, the bot waits alone.
	mustStatsEqual(t, f.mustStats(t, "rush"), map[string]float64{"waiting": 1, "active": 1, "admitted_total": 1})
}

func TestStatusActivePass(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("gig", "capacity", 2))
	aliceID, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "gig", Bearer(alice), actual).Str("token")
	bot := f.MustJoin(t, "gig", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "b1"})

	for _, tc := range []struct {
		name, token, user string
	}{
		// a person
		{"actual", tok, aliceID},
		// a bot
		{"virtual", bot.Str("token"), "VIRTUAL:b1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodGet, qpath("gig", tc.token), nil, nil)
			MustStatus(t, r, http.StatusOK)
			mustEntry(t, r, "ACTIVE", 0)
			exp := mustTime(t, r, "expires_at")
			pass, err := f.Signer.ParsePass(r.Str("pass"), "gig")
			if err != nil {
				t.Fatalf("ParsePass: %v", err)
			}
			if pass.EventID != "gig" || pass.UserID != tc.user || pass.QueueToken != tc.token {
				t.Errorf("pass = %+v, want aud gig, sub %s, jti the token", pass, tc.user)
			}
			if !pass.ExpiresAt.Equal(exp) || pass.ExpiresAt.After(exp) {
				t.Errorf("pass exp %v, expires_at %v", pass.ExpiresAt, exp)
			}
			if _, err := f.Signer.ParsePass(r.Str("pass"), "other"); err == nil {
				t.Errorf("the pass is accepted for another event")
			}
		})
	}
}

// TestStatusLastSecond: in the last second of an active window (expiry not on
// a whole second) a pass cannot be signed, yet the token is still active.
func TestStatusLastSecond(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("tight", "active_ttl_s", 2))
	_, alice := f.MustSession(t, "alice")
	f.Clock.Advance(300 * time.Millisecond)
	tok := f.MustJoin(t, "tight", Bearer(alice), actual).Str("token") // expires at +2.3 s
	f.Clock.Advance(1900 * time.Millisecond)                          // +2.2 s: 100 ms left
	r := f.MustDo(t, http.MethodGet, qpath("tight", tok), nil, nil)
	MustStatus(t, r, http.StatusOK)
	if r.Str("status") != "ACTIVE" {
		t.Fatalf("status = %s", r.Raw)
	}
	if exp := mustTime(t, r, "expires_at"); !exp.After(f.Clock.Now()) {
		t.Errorf("expires_at %v not after now", exp)
	}
	if p := r.Str("pass"); p != "" {
		if _, err := f.Signer.ParsePass(p, "tight"); err != nil {
			t.Errorf("a pass that does not parse: %v", err)
		}
	}
	again := f.MustJoin(t, "tight", Bearer(alice), actual)
	MustStatus(t, again, http.StatusOK)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("v", "capacity", 2))
	aliceID, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "v", Bearer(alice), actual).Str("token")
	bot := f.MustJoin(t, "v", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "b"}).Str("token")
	for _, tc := range []struct {
		name    string
		headers map[string]string
		token   string
		user    string
	}{
		// the service key
		{"service key", serviceH, tok, aliceID},
		// the admin key is accepted too
		{"admin key", adminH, tok, aliceID},
		// a VIRTUAL token
		{"virtual", serviceH, bot, "VIRTUAL:b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodPost, "/api/v1/events/v/verify", tc.headers, map[string]any{"token": tc.token, "user_id": tc.user})
			MustStatus(t, r, http.StatusOK)
			if r.Str("status") != "ACTIVE" || !mustTime(t, r, "expires_at").Equal(t0.Add(300*time.Second)) {
				t.Errorf("body = %s", r.Raw)
			}
		})
	}
}

func TestOrderFlow(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("sale", "seats", 3, "capacity", 4))
	aliceID, alice := f.MustSession(t, "alice")
	bobID, bob := f.MustSession(t, "bob")
	_, carol := f.MustSession(t, "carol")
	tokA := f.MustJoin(t, "sale", Bearer(alice), actual).Str("token")
	tokB := f.MustJoin(t, "sale", Bearer(bob), actual).Str("token")
	tokC := f.MustJoin(t, "sale", Bearer(carol), actual).Str("token")
	tokV := f.MustJoin(t, "sale", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "v1"}).Str("token")

	seatMap := func(tok string) map[string]bool {
		t.Helper()
		r := f.MustDo(t, http.MethodGet, "/api/v1/events/sale/seats", H("X-Queue-Token", tok), nil)
		MustStatus(t, r, http.StatusOK)
		list, _ := r.Body["seats"].([]any)
		m := map[string]bool{}
		for _, s := range list {
			s := s.(map[string]any)
			m[s["id"].(string)] = s["taken"].(bool)
		}
		return m
	}
	if m := seatMap(tokA); len(m) != 3 || m["A-1"] || m["A-2"] || m["A-3"] {
		t.Fatalf("seats = %v, want A-1, A-2, A-3 free", m)
	}

	buy := func(h map[string]string, tok, seat string) *Response {
		t.Helper()
		return f.MustDo(t, http.MethodPost, "/api/v1/events/sale/orders", h, map[string]any{"token": tok, "seat": seat})
	}
	r := buy(Bearer(alice), tokA, "A-1")
	MustStatus(t, r, http.StatusCreated)
	if r.Str("order_id") == "" || r.Str("seat") != "A-1" || r.Str("user_id") != aliceID {
		t.Fatalf("order body = %s", r.Raw)
	}
	// The token is DONE and its slot free at once.
	st := f.MustDo(t, http.MethodGet, qpath("sale", tokA), nil, nil)
	mustEntry(t, st, "DONE", 0)
	mustStatsEqual(t, f.mustStats(t, "sale"), map[string]float64{"active": 3, "sold": 1, "seats_left": 2})

	for _, tc := range []struct {
		name      string
		do        func() *Response
		status    int
		code      string
		errStatus string
	}{
		// a DONE token cannot order again
		{"done again", func() *Response { return buy(Bearer(alice), tokA, "A-2") }, 409, "NOT_ACTIVE", "DONE"},
		// nor verify
		{"done verify", func() *Response {
			return f.MustDo(t, http.MethodPost, "/api/v1/events/sale/verify", serviceH, map[string]any{"token": tokA, "user_id": aliceID})
		}, 409, "NOT_ACTIVE", "DONE"},
		// nor see the seats
		{"done seats", func() *Response {
			return f.MustDo(t, http.MethodGet, "/api/v1/events/sale/seats", H("X-Queue-Token", tokA), nil)
		}, 409, "NOT_ACTIVE", "DONE"},
		// a seat is never sold twice
		{"seat taken", func() *Response { return buy(Bearer(bob), tokB, "A-1") }, 409, "SEAT_TAKEN", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.do()
			MustError(t, r, tc.status, tc.code)
			e := r.Body["error"].(map[string]any)
			if got, _ := e["status"].(string); got != tc.errStatus {
				t.Errorf("error.status = %q, want %q", got, tc.errStatus)
			}
		})
	}

	if m := seatMap(tokB); !m["A-1"] || m["A-2"] {
		t.Errorf("seats = %v, want A-1 taken", m)
	}
	r = buy(Bearer(bob), tokB, "A-2")
	MustStatus(t, r, http.StatusCreated)
	if r.Str("user_id") != bobID {
		t.Errorf("order body = %s", r.Raw)
	}
	// The simulator key orders for a VIRTUAL token.
	r = buy(simH, tokV, "A-3")
	MustStatus(t, r, http.StatusCreated)
	if r.Str("user_id") != "VIRTUAL:v1" {
		t.Errorf("order body = %s", r.Raw)
	}
	MustError(t, buy(Bearer(carol), tokC, "A-1"), http.StatusConflict, "SOLD_OUT")
	mustStatsEqual(t, f.mustStats(t, "sale"), map[string]float64{"active": 1, "sold": 3, "seats_left": 0})

	// A finished user may join again and gets a new token.
	again := f.MustJoin(t, "sale", Bearer(alice), actual)
	MustStatus(t, again, http.StatusCreated)
	if again.Str("token") == tokA {
		t.Errorf("re-join after DONE kept the old token")
	}
}

func TestLeave(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("door"))
	_, alice := f.MustSession(t, "alice")
	_, bob := f.MustSession(t, "bob")
	_, carol := f.MustSession(t, "carol")
	tokA := f.MustJoin(t, "door", Bearer(alice), actual).Str("token")
	tokB := f.MustJoin(t, "door", Bearer(bob), actual).Str("token")
	tokC := f.MustJoin(t, "door", Bearer(carol), actual).Str("token")
	tokV := f.MustJoin(t, "door", simH, map[string]any{"user_type": "VIRTUAL"}).Str("token")

	for _, tc := range []struct {
		name    string
		headers map[string]string
		token   string
	}{
		// a waiting user, twice: the second answers 204 again
		{"waiting", Bearer(bob), tokB},
		{"waiting again", Bearer(bob), tokB},
		// an active user frees the slot
		{"active", Bearer(alice), tokA},
		// a bot, by the simulator key
		{"virtual", simH, tokV},
		{"virtual again", simH, tokV},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, http.MethodDelete, qpath("door", tc.token), tc.headers, nil)
			MustStatus(t, r, http.StatusNoContent)
			if len(r.Raw) != 0 {
				t.Errorf("204 with a body: %s", r.Raw)
			}
			mustEntry(t, f.MustDo(t, http.MethodGet, qpath("door", tc.token), nil, nil), "LEFT", 0)
		})
	}
	// carol moved up to the head and is promoted at the next tick.
	mustEntry(t, f.MustDo(t, http.MethodGet, qpath("door", tokC), nil, nil), "WAITING", 1)
	mustStatsEqual(t, f.mustStats(t, "door"), map[string]float64{"waiting": 1, "active": 0})
	if res := f.MustTick(t, "door"); res.Promoted != 1 {
		t.Fatalf("tick = %+v, want 1 promoted", res)
	}
	mustEntry(t, f.MustDo(t, http.MethodGet, qpath("door", tokC), nil, nil), "ACTIVE", 0)
	// bob may come back, at the back of the line.
	r := f.MustJoin(t, "door", Bearer(bob), actual)
	MustStatus(t, r, http.StatusCreated)
	if r.Str("token") == tokB {
		t.Errorf("re-join after LEFT kept the old token")
	}
	mustEntry(t, r, "WAITING", 1)
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("brief", "active_ttl_s", 5))
	aliceID, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "brief", Bearer(alice), actual).Str("token")
	f.Clock.Advance(6 * time.Second)
	mustEntry(t, f.MustDo(t, http.MethodGet, qpath("brief", tok), nil, nil), "EXPIRED", 0)
	r := f.MustDo(t, http.MethodPost, "/api/v1/events/brief/verify", serviceH, map[string]any{"token": tok, "user_id": aliceID})
	MustError(t, r, http.StatusConflict, "NOT_ACTIVE")
	if e := r.Body["error"].(map[string]any); e["status"] != "EXPIRED" {
		t.Errorf("error.status = %v, want EXPIRED", e["status"])
	}
	r = f.MustDo(t, http.MethodPost, "/api/v1/events/brief/orders", Bearer(alice), map[string]any{"token": tok, "seat": "A-1"})
	MustError(t, r, http.StatusConflict, "NOT_ACTIVE")
	again := f.MustJoin(t, "brief", Bearer(alice), actual)
	MustStatus(t, again, http.StatusCreated)
	if again.Str("token") == tok {
		t.Errorf("re-join after EXPIRED kept the old token")
	}
}

func TestEventWindow(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("window", "capacity", 5,
		"opens_at", t0.Add(time.Minute).Format(time.RFC3339), "closes_at", t0.Add(2*time.Minute).Format(time.RFC3339)))
	_, alice := f.MustSession(t, "alice")
	_, bob := f.MustSession(t, "bob")
	join := func(tok string) *Response {
		return f.MustDo(t, http.MethodPost, "/api/v1/events/window/queue", Bearer(tok), actual)
	}
	before := f.MustSnapshot(t, "window")
	MustError(t, join(alice), http.StatusConflict, "EVENT_NOT_OPEN")
	if after := f.MustSnapshot(t, "window"); after != before {
		t.Errorf("a refused join changed state:\n%s\n%s", before, after)
	}
	f.Clock.Advance(time.Minute)
	MustStatus(t, join(alice), http.StatusCreated)
	f.Clock.Advance(time.Minute)
	before = f.MustSnapshot(t, "window")
	MustError(t, join(bob), http.StatusConflict, "EVENT_CLOSED")
	if after := f.MustSnapshot(t, "window"); after != before {
		t.Errorf("a refused join changed state:\n%s\n%s", before, after)
	}
}

func TestPatchTakesEffectNextTick(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("grow"))
	var toks []string
	for _, name := range []string{"a", "b", "c", "d"} {
		_, bearer := f.MustSession(t, name)
		toks = append(toks, f.MustJoin(t, "grow", Bearer(bearer), actual).Str("token"))
	}
	if res := f.MustTick(t, "grow"); res.Promoted != 0 {
		t.Fatalf("tick at capacity = %+v, want none promoted", res)
	}
	r := f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/grow", adminH, map[string]any{"capacity": 3})
	MustStatus(t, r, http.StatusOK)
	if c, _ := r.Num("capacity"); c != 3 || r.Str("id") != "grow" {
		t.Fatalf("patch body = %s", r.Raw)
	}
	if c, _ := f.MustDo(t, http.MethodGet, "/api/v1/events/grow", nil, nil).Num("capacity"); c != 3 {
		t.Errorf("GET capacity = %v, want 3", c)
	}
	if res := f.MustTick(t, "grow"); res.Promoted != 2 {
		t.Fatalf("tick after PATCH = %+v, want 2 promoted", res)
	}
	for i, want := range []string{"ACTIVE", "ACTIVE", "ACTIVE", "WAITING"} {
		if got := f.MustDo(t, http.MethodGet, qpath("grow", toks[i]), nil, nil).Str("status"); got != want {
			t.Errorf("token %d = %s, want %s", i, got, want)
		}
	}
	// An empty PATCH changes nothing and answers the event.
	r = f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/grow", adminH, map[string]any{})
	MustStatus(t, r, http.StatusOK)
	// admit_batch limits the next tick too.
	MustStatus(t, f.MustDo(t, http.MethodPatch, "/api/v1/admin/events/grow", adminH, map[string]any{"capacity": 100, "admit_batch": 1}), http.StatusOK)
	if res := f.MustTick(t, "grow"); res.Promoted != 1 {
		t.Fatalf("tick after PATCH = %+v, want 1 promoted", res)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("hold", "capacity", 10))
	r := f.MustDo(t, http.MethodPost, "/api/v1/admin/events/hold/pause", adminH, nil)
	MustStatus(t, r, http.StatusOK)
	if r.Body["paused"] != true || r.Str("id") != "hold" {
		t.Fatalf("pause body = %s", r.Raw)
	}
	_, alice := f.MustSession(t, "alice")
	j := f.MustJoin(t, "hold", Bearer(alice), actual)
	MustStatus(t, j, http.StatusCreated)
	mustEntry(t, j, "WAITING", 1) // room, but paused: nobody is ACTIVE at once
	if res := f.MustTick(t, "hold"); !res.Paused || res.Promoted != 0 {
		t.Fatalf("tick while paused = %+v", res)
	}
	mustEntry(t, f.MustDo(t, http.MethodGet, qpath("hold", j.Str("token")), nil, nil), "WAITING", 1)

	r = f.MustDo(t, http.MethodPost, "/api/v1/admin/events/hold/resume", adminH, nil)
	MustStatus(t, r, http.StatusOK)
	if r.Body["paused"] != false {
		t.Fatalf("resume body = %s", r.Raw)
	}
	if res := f.MustTick(t, "hold"); res.Promoted != 1 {
		t.Fatalf("tick after resume = %+v, want 1 promoted", res)
	}
	st := f.MustDo(t, http.MethodGet, qpath("hold", j.Str("token")), nil, nil)
	mustEntry(t, st, "ACTIVE", 0)
	mustStatsEqual(t, f.mustStats(t, "hold"), map[string]float64{"waiting": 0, "active": 1, "admitted_total": 1})
}

func TestReportLoad(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("ad", "policy", "adaptive", "max_tps", 100))
	r := f.MustDo(t, http.MethodPost, "/api/v1/admin/events/ad/load", adminH, map[string]any{"tps": 12.5})
	if r.Status != http.StatusOK && r.Status != http.StatusNoContent {
		t.Fatalf("load = %s", r)
	}
}

func TestOps(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		MustStatus(t, f.MustDo(t, http.MethodGet, path, nil, nil), http.StatusOK)
	}
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/nope", nil, nil), http.StatusNotFound, "EVENT_NOT_FOUND")
	m := f.MustDo(t, http.MethodGet, "/metrics", nil, nil)
	MustStatus(t, m, http.StatusOK)
	for _, want := range []string{
		"rushline_http_request_duration_seconds",
		`route="/api/v1/events/:event"`,
		`rushline_errors_total{code="EVENT_NOT_FOUND"} 1`,
	} {
		if !strings.Contains(string(m.Raw), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
