package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/httpapi"
)

// badCase is one refused request: its status and error code, and for
// NOT_ACTIVE the error.status.
type badCase struct {
	name      string
	method    string
	path      string
	headers   map[string]string
	body      any
	status    int
	code      string
	errStatus string
}

// world is the state the bad-input tests run against: event "ev" (2 seats,
// capacity 1) where alice is ACTIVE, bob and bot-1 wait; event "ev2" where
// alice is ACTIVE too.
type world struct {
	f                         *Fixture
	alice, bob, carol         string // access tokens
	aliceID, bobID            string
	tokA, tokB, tokV, tokA2   string // queue tokens
	forged, otherKey, expired string // bad access tokens for alice
	algNone                   string
}

func mustWorld(t *testing.T) *world {
	t.Helper()
	f := MustServer(t)
	w := &world{f: f}
	f.MustCreateEvent(t, EventBody("ev", "seats", 2))
	f.MustCreateEvent(t, EventBody("ev2"))
	w.aliceID, w.alice = f.MustSession(t, "alice")
	w.bobID, w.bob = f.MustSession(t, "bob")
	_, w.carol = f.MustSession(t, "carol")

	a := f.MustJoin(t, "ev", Bearer(w.alice), actual)
	if a.Str("status") != "ACTIVE" {
		t.Fatalf("alice should be ACTIVE at once: %s", a)
	}
	w.tokA = a.Str("token")
	w.tokB = f.MustJoin(t, "ev", Bearer(w.bob), actual).Str("token")
	w.tokV = f.MustJoin(t, "ev", simH, map[string]any{"user_type": "VIRTUAL", "bot_id": "bot-1"}).Str("token")
	w.tokA2 = f.MustJoin(t, "ev2", Bearer(w.alice), actual).Str("token")

	// Tampered signature: change one character in the middle of it.
	parts := strings.Split(w.alice, ".")
	sig := []byte(parts[2])
	if sig[10] == 'A' {
		sig[10] = 'B'
	} else {
		sig[10] = 'A'
	}
	w.forged = parts[0] + "." + parts[1] + "." + string(sig)

	other, err := auth.NewSigner([]byte("some-other-secret"), []byte("some-other-pass-key"), auth.WithClock(f.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	if w.otherKey, _, err = other.IssueSession(w.aliceID, "alice"); err != nil {
		t.Fatal(err)
	}
	past, err := auth.NewSigner([]byte(testKeys.JWTSecret), []byte(testKeys.Service),
		auth.WithClock(func() time.Time { return f.Clock.Now().Add(-48 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	if w.expired, _, err = past.IssueSession(w.aliceID, "alice"); err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	w.algNone = enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
		enc([]byte(`{"iss":"rushline","typ":"session","name":"alice","sub":"`+w.aliceID+`","exp":`+
			strconv.FormatInt(f.Clock.Now().Add(time.Hour).Unix(), 10)+`}`)) + "."
	return w
}

// runBad runs cases against w and checks after each that nothing changed.
func runBad(t *testing.T, w *world, cases []badCase) {
	t.Helper()
	f := w.f
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.MustSnapshot(t, "ev", "ev2")
			r := f.MustDo(t, tc.method, tc.path, tc.headers, tc.body)
			MustError(t, r, tc.status, tc.code)
			if tc.errStatus != "" {
				e, _ := r.Body["error"].(map[string]any)
				if got, _ := e["status"].(string); got != tc.errStatus {
					t.Errorf("error.status = %q, want %q (%s)", got, tc.errStatus, r.Raw)
				}
			}
			if after := f.MustSnapshot(t, "ev", "ev2"); after != before {
				t.Errorf("state changed by a refused call:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

const (
	sessions = "/api/v1/sessions"
	events   = "/api/v1/admin/events"
)

func TestBadInput(t *testing.T) {
	t.Parallel()
	w := mustWorld(t)
	f := w.f
	post, get, del, patch := http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPatch
	ev := EventBody // shorthand
	past := t0.Add(-time.Minute).Format(time.RFC3339)
	later := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	big := `{"nickname":"alice","pad":"` + strings.Repeat("x", httpapi.MaxBody) + `"}`
	alice, bob, carol := Bearer(w.alice), Bearer(w.bob), Bearer(w.carol)
	q := func(ev, tok string) string { return "/api/v1/events/" + ev + "/queue/" + tok }
	join := func(ev string) string { return "/api/v1/events/" + ev + "/queue" }
	verify := func(ev string) string { return "/api/v1/events/" + ev + "/verify" }
	seats := func(ev string) string { return "/api/v1/events/" + ev + "/seats" }
	orders := func(ev string) string { return "/api/v1/events/" + ev + "/orders" }
	order := func(tok, seat string) map[string]any { return map[string]any{"token": tok, "seat": seat} }
	virtual := func(bot any) map[string]any { return map[string]any{"user_type": "VIRTUAL", "bot_id": bot} }

	cases := []badCase{
		// --- Body shape (sessions) ---
		// malformed JSON: cut off
		{"session malformed", post, sessions, nil, `{"nickname":`, 400, "BAD_REQUEST", ""},
		// malformed JSON: single quotes
		{"session single quotes", post, sessions, nil, `{'nickname':'a'}`, 400, "BAD_REQUEST", ""},
		// a body that is an array
		{"session array", post, sessions, nil, `[{"nickname":"a"}]`, 400, "BAD_REQUEST", ""},
		// a body that is a string
		{"session string", post, sessions, nil, `"alice"`, 400, "BAD_REQUEST", ""},
		// a body that is null
		{"session null", post, sessions, nil, `null`, 400, "BAD_REQUEST", ""},
		// a body that is a number
		{"session number", post, sessions, nil, `42`, 400, "BAD_REQUEST", ""},
		// no body at all
		{"session empty body", post, sessions, nil, ``, 400, "BAD_REQUEST", ""},
		// trailing garbage after the object
		{"session trailing word", post, sessions, nil, `{"nickname":"a"} x`, 400, "BAD_REQUEST", ""},
		// a second object after the first
		{"session two objects", post, sessions, nil, `{"nickname":"a"}{"nickname":"b"}`, 400, "BAD_REQUEST", ""},
		// a stray closing brace after the object
		{"session trailing brace", post, sessions, nil, `{"nickname":"a"}}`, 400, "BAD_REQUEST", ""},
		// a stray closing bracket after the object
		{"session trailing bracket", post, sessions, nil, `{"nickname":"a"}]`, 400, "BAD_REQUEST", ""},
		// nickname of the wrong type
		{"nickname number", post, sessions, nil, map[string]any{"nickname": 5}, 400, "BAD_REQUEST", ""},
		// nickname null
		{"nickname null", post, sessions, nil, map[string]any{"nickname": nil}, 400, "BAD_REQUEST", ""},
		// unknown field
		{"session unknown field", post, sessions, nil, map[string]any{"nickname": "a", "admin": true}, 400, "BAD_REQUEST", ""},
		// missing nickname
		{"nickname missing", post, sessions, nil, map[string]any{}, 400, "BAD_REQUEST", ""},
		// nickname empty
		{"nickname empty", post, sessions, nil, map[string]any{"nickname": ""}, 400, "BAD_REQUEST", ""},
		// 33 characters (multibyte: 66 bytes); 32 are fine, see TestNickname
		{"nickname 33 chars", post, sessions, nil, map[string]any{"nickname": strings.Repeat("é", 33)}, 400, "BAD_REQUEST", ""},
		// 33 ASCII characters
		{"nickname 33 ascii", post, sessions, nil, map[string]any{"nickname": strings.Repeat("a", 33)}, 400, "BAD_REQUEST", ""},
		// a control character (BEL)
		{"nickname BEL", post, sessions, nil, map[string]any{"nickname": "al\u0007ice"}, 400, "BAD_REQUEST", ""},
		// a newline
		{"nickname newline", post, sessions, nil, map[string]any{"nickname": "al\nice"}, 400, "BAD_REQUEST", ""},
		// a NUL
		{"nickname NUL", post, sessions, nil, map[string]any{"nickname": "a\u0000"}, 400, "BAD_REQUEST", ""},

		// --- Oversize bodies ---
		// over 64 KiB
		{"session oversize", post, sessions, nil, big, 413, "BODY_TOO_LARGE", ""},
		// over 64 KiB, sent chunked (no Content-Length)
		{"session oversize chunked", post, sessions, nil, strings.NewReader(big), 413, "BODY_TOO_LARGE", ""},
		// 413 outranks 401: admin route without credentials
		{"create oversize no key", post, events, nil, big, 413, "BODY_TOO_LARGE", ""},
		// 413 outranks 401: join without credentials
		{"join oversize no bearer", post, join("ev"), nil, big, 413, "BODY_TOO_LARGE", ""},
		// 413 outranks 403: wrong admin key
		{"create oversize wrong key", post, events, badAdminH, strings.NewReader(big), 413, "BODY_TOO_LARGE", ""},

		// --- Event create: shape and types ---
		// malformed JSON
		{"create malformed", post, events, adminH, `{"id":"x",`, 400, "BAD_REQUEST", ""},
		// array body
		{"create array", post, events, adminH, `[]`, 400, "BAD_REQUEST", ""},
		// string body
		{"create string", post, events, adminH, `"ev-x"`, 400, "BAD_REQUEST", ""},
		// null body
		{"create null", post, events, adminH, `null`, 400, "BAD_REQUEST", ""},
		// trailing garbage
		{"create trailing", post, events, adminH, `{"id":"x"} {}`, 400, "BAD_REQUEST", ""},
		// capacity as a word
		{"capacity string", post, events, adminH, ev("x", "capacity", "ten"), 400, "BAD_REQUEST", ""},
		// seats as a fraction
		{"seats fraction", post, events, adminH, ev("x", "seats", 1.5), 400, "BAD_REQUEST", ""},
		// seats as a boolean
		{"seats bool", post, events, adminH, ev("x", "seats", true), 400, "BAD_REQUEST", ""},
		// id as a number
		{"id number", post, events, adminH, ev("x", "id", 7), 400, "BAD_REQUEST", ""},
		// policy as a number
		{"policy number", post, events, adminH, ev("x", "policy", 1), 400, "BAD_REQUEST", ""},
		// opens_at not a time
		{"opens_at word", post, events, adminH, ev("x", "opens_at", "tomorrow"), 400, "BAD_REQUEST", ""},
		// capacity beyond int64
		{"capacity huge", post, events, adminH, `{"id":"x","seats":1,"capacity":99999999999999999999999,"admit_batch":1,"admit_interval_ms":100,"active_ttl_s":1,"policy":"capacity"}`, 400, "BAD_REQUEST", ""},
		// unknown field
		{"create unknown field", post, events, adminH, ev("x", "colour", "red"), 400, "BAD_REQUEST", ""},
		// paused is not settable on create
		{"create paused field", post, events, adminH, ev("x", "paused", true), 400, "BAD_REQUEST", ""},

		// --- Event create: missing fields ---
		// missing id
		{"missing id", post, events, adminH, ev("x", "id", nil), 400, "BAD_REQUEST", ""},
		// missing seats
		{"missing seats", post, events, adminH, ev("x", "seats", nil), 400, "BAD_REQUEST", ""},
		// missing capacity
		{"missing capacity", post, events, adminH, ev("x", "capacity", nil), 400, "BAD_REQUEST", ""},
		// missing admit_batch
		{"missing admit_batch", post, events, adminH, ev("x", "admit_batch", nil), 400, "BAD_REQUEST", ""},
		// missing admit_interval_ms
		{"missing admit_interval_ms", post, events, adminH, ev("x", "admit_interval_ms", nil), 400, "BAD_REQUEST", ""},
		// missing active_ttl_s
		{"missing active_ttl_s", post, events, adminH, ev("x", "active_ttl_s", nil), 400, "BAD_REQUEST", ""},
		// missing policy
		{"missing policy", post, events, adminH, ev("x", "policy", nil), 400, "BAD_REQUEST", ""},
		// an empty object
		{"create empty object", post, events, adminH, map[string]any{}, 400, "BAD_REQUEST", ""},

		// --- Event create: out of range (API.md limits) ---
		// seats 0
		{"seats 0", post, events, adminH, ev("x", "seats", 0), 400, "BAD_REQUEST", ""},
		// seats 1,000,001
		{"seats 1000001", post, events, adminH, ev("x", "seats", 1_000_001), 400, "BAD_REQUEST", ""},
		// seats negative
		{"seats -1", post, events, adminH, ev("x", "seats", -1), 400, "BAD_REQUEST", ""},
		// capacity 0
		{"capacity 0", post, events, adminH, ev("x", "capacity", 0), 400, "BAD_REQUEST", ""},
		// capacity 1,000,001
		{"capacity 1000001", post, events, adminH, ev("x", "capacity", 1_000_001), 400, "BAD_REQUEST", ""},
		// admit_batch 0
		{"admit_batch 0", post, events, adminH, ev("x", "admit_batch", 0), 400, "BAD_REQUEST", ""},
		// admit_batch 100,001
		{"admit_batch 100001", post, events, adminH, ev("x", "admit_batch", 100_001), 400, "BAD_REQUEST", ""},
		// admit_interval_ms 49
		{"admit_interval_ms 49", post, events, adminH, ev("x", "admit_interval_ms", 49), 400, "BAD_REQUEST", ""},
		// admit_interval_ms 3,600,001
		{"admit_interval_ms 3600001", post, events, adminH, ev("x", "admit_interval_ms", 3_600_001), 400, "BAD_REQUEST", ""},
		// active_ttl_s 0
		{"active_ttl_s 0", post, events, adminH, ev("x", "active_ttl_s", 0), 400, "BAD_REQUEST", ""},
		// active_ttl_s 86,401
		{"active_ttl_s 86401", post, events, adminH, ev("x", "active_ttl_s", 86_401), 400, "BAD_REQUEST", ""},
		// unknown policy
		{"policy fastest", post, events, adminH, ev("x", "policy", "fastest"), 400, "BAD_REQUEST", ""},
		// policy names are lower case
		{"policy upper case", post, events, adminH, ev("x", "policy", "CAPACITY"), 400, "BAD_REQUEST", ""},
		// adaptive needs max_tps >= 1
		{"adaptive max_tps 0", post, events, adminH, ev("x", "policy", "adaptive", "max_tps", 0), 400, "BAD_REQUEST", ""},
		// adaptive without max_tps
		{"adaptive no max_tps", post, events, adminH, ev("x", "policy", "adaptive"), 400, "BAD_REQUEST", ""},
		// max_tps negative
		{"max_tps -1", post, events, adminH, ev("x", "max_tps", -1), 400, "BAD_REQUEST", ""},
		// id with an upper-case letter
		{"id uppercase", post, events, adminH, ev("Concert-1"), 400, "BAD_REQUEST", ""},
		// id of 65 characters
		{"id 65 chars", post, events, adminH, ev(strings.Repeat("a", 65)), 400, "BAD_REQUEST", ""},
		// id with an underscore
		{"id underscore", post, events, adminH, ev("concert_1"), 400, "BAD_REQUEST", ""},
		// id empty
		{"id empty", post, events, adminH, ev(""), 400, "BAD_REQUEST", ""},
		// id with a slash
		{"id slash", post, events, adminH, ev("a/b"), 400, "BAD_REQUEST", ""},
		// id with a brace (would break the Redis hash tag)
		{"id brace", post, events, adminH, ev("a}b"), 400, "BAD_REQUEST", ""},
		// closes_at in the past
		{"closes_at past", post, events, adminH, ev("x", "closes_at", past), 400, "BAD_REQUEST", ""},
		// closes_at now
		{"closes_at now", post, events, adminH, ev("x", "closes_at", later(0)), 400, "BAD_REQUEST", ""},
		// closes_at before opens_at
		{"closes_at before opens_at", post, events, adminH, ev("x", "opens_at", later(2*time.Hour), "closes_at", later(time.Hour)), 400, "BAD_REQUEST", ""},
		// closes_at equal to opens_at
		{"closes_at equals opens_at", post, events, adminH, ev("x", "opens_at", later(time.Hour), "closes_at", later(time.Hour)), 400, "BAD_REQUEST", ""},
		// name over 200 characters
		{"name 201 chars", post, events, adminH, ev("x", "name", strings.Repeat("n", 201)), 400, "BAD_REQUEST", ""},
		// an id already used
		{"duplicate id", post, events, adminH, ev("ev"), 409, "EVENT_EXISTS", ""},
		// an id already used, with other settings
		{"duplicate id other settings", post, events, adminH, ev("ev2", "seats", 99, "capacity", 7), 409, "EVENT_EXISTS", ""},

		// --- Admin credentials ---
		// no admin key
		{"admin no key", post, events, nil, ev("x"), 401, "UNAUTHENTICATED", ""},
		// a wrong admin key
		{"admin wrong key", post, events, badAdminH, ev("x"), 403, "FORBIDDEN", ""},
		// a user's bearer is no admin credential
		{"admin bearer only", post, events, alice, ev("x"), 401, "UNAUTHENTICATED", ""},
		// the simulator key is no admin credential
		{"admin sim key only", post, events, simH, ev("x"), 401, "UNAUTHENTICATED", ""},
		// the service key is no admin credential
		{"admin service key only", post, events, serviceH, ev("x"), 401, "UNAUTHENTICATED", ""},
		// the admin key in the wrong header
		{"admin key as sim key", post, events, H("X-Simulator-Key", testKeys.Admin), ev("x"), 401, "UNAUTHENTICATED", ""},
		// PATCH without key
		{"patch no key", patch, events + "/ev", nil, map[string]any{"capacity": 5}, 401, "UNAUTHENTICATED", ""},
		// PATCH with a wrong key
		{"patch wrong key", patch, events + "/ev", badAdminH, map[string]any{"capacity": 5}, 403, "FORBIDDEN", ""},
		// PATCH with a user's bearer
		{"patch bearer", patch, events + "/ev", alice, map[string]any{"capacity": 5}, 401, "UNAUTHENTICATED", ""},
		// pause without key
		{"pause no key", post, events + "/ev/pause", nil, nil, 401, "UNAUTHENTICATED", ""},
		// pause with a wrong key
		{"pause wrong key", post, events + "/ev/pause", badAdminH, nil, 403, "FORBIDDEN", ""},
		// resume with a user's bearer
		{"resume bearer", post, events + "/ev/resume", alice, nil, 401, "UNAUTHENTICATED", ""},
		// load without key
		{"load no key", post, events + "/ev/load", nil, map[string]any{"tps": 1}, 401, "UNAUTHENTICATED", ""},

		// --- PATCH / pause / load bodies ---
		// capacity 0
		{"patch capacity 0", patch, events + "/ev", adminH, map[string]any{"capacity": 0}, 400, "BAD_REQUEST", ""},
		// capacity as a word
		{"patch capacity string", patch, events + "/ev", adminH, map[string]any{"capacity": "ten"}, 400, "BAD_REQUEST", ""},
		// admit_interval_ms 49
		{"patch interval 49", patch, events + "/ev", adminH, map[string]any{"admit_interval_ms": 49}, 400, "BAD_REQUEST", ""},
		// adaptive without max_tps on an event that has none
		{"patch adaptive", patch, events + "/ev", adminH, map[string]any{"policy": "adaptive"}, 400, "BAD_REQUEST", ""},
		// closes_at in the past
		{"patch closes_at past", patch, events + "/ev", adminH, map[string]any{"closes_at": past}, 400, "BAD_REQUEST", ""},
		// the id cannot change
		{"patch id", patch, events + "/ev", adminH, map[string]any{"id": "other"}, 400, "BAD_REQUEST", ""},
		// seats cannot change
		{"patch seats", patch, events + "/ev", adminH, map[string]any{"seats": 5}, 400, "BAD_REQUEST", ""},
		// unknown field
		{"patch unknown", patch, events + "/ev", adminH, map[string]any{"paused": true}, 400, "BAD_REQUEST", ""},
		// malformed
		{"patch malformed", patch, events + "/ev", adminH, `{"capacity":`, 400, "BAD_REQUEST", ""},
		// array body
		{"patch array", patch, events + "/ev", adminH, `[]`, 400, "BAD_REQUEST", ""},
		// PATCH of an unknown event
		{"patch unknown event", patch, events + "/nope", adminH, map[string]any{"capacity": 5}, 404, "EVENT_NOT_FOUND", ""},
		// pause of an unknown event
		{"pause unknown event", post, events + "/nope/pause", adminH, nil, 404, "EVENT_NOT_FOUND", ""},
		// resume of an unknown event
		{"resume unknown event", post, events + "/nope/resume", adminH, nil, 404, "EVENT_NOT_FOUND", ""},
		// load below zero
		{"load negative", post, events + "/ev/load", adminH, map[string]any{"tps": -1}, 400, "BAD_REQUEST", ""},
		// load as a word
		{"load string", post, events + "/ev/load", adminH, map[string]any{"tps": "many"}, 400, "BAD_REQUEST", ""},
		// load missing
		{"load missing", post, events + "/ev/load", adminH, map[string]any{}, 400, "BAD_REQUEST", ""},
		// load for an unknown event
		{"load unknown event", post, events + "/nope/load", adminH, map[string]any{"tps": 1}, 404, "EVENT_NOT_FOUND", ""},

		// --- Join: credentials ---
		// ACTUAL join without bearer
		{"join no bearer", post, join("ev"), nil, actual, 401, "UNAUTHENTICATED", ""},
		// forged JWT: tampered signature
		{"join forged jwt", post, join("ev"), Bearer(w.forged), actual, 401, "UNAUTHENTICATED", ""},
		// a JWT signed with another secret
		{"join other secret jwt", post, join("ev"), Bearer(w.otherKey), actual, 401, "UNAUTHENTICATED", ""},
		// an expired JWT
		{"join expired jwt", post, join("ev"), Bearer(w.expired), actual, 401, "UNAUTHENTICATED", ""},
		// an alg none JWT
		{"join alg none", post, join("ev"), Bearer(w.algNone), actual, 401, "UNAUTHENTICATED", ""},
		// a garbage bearer
		{"join garbage bearer", post, join("ev"), Bearer("garbage"), actual, 401, "UNAUTHENTICATED", ""},
		// an empty bearer
		{"join empty bearer", post, join("ev"), H("Authorization", "Bearer "), actual, 401, "UNAUTHENTICATED", ""},
		// not the Bearer scheme
		{"join basic auth", post, join("ev"), H("Authorization", "Basic "+w.alice), actual, 401, "UNAUTHENTICATED", ""},
		// a pass is no access token
		{"join pass as bearer", post, join("ev"), Bearer(f.MustDo(t, get, q("ev", w.tokA), nil, nil).Str("pass")), actual, 401, "UNAUTHENTICATED", ""},
		// VIRTUAL join without the simulator key
		{"virtual no key", post, join("ev"), nil, virtual("bot-2"), 403, "FORBIDDEN", ""},
		// VIRTUAL join with a wrong simulator key
		{"virtual wrong key", post, join("ev"), badSimH, virtual("bot-2"), 403, "FORBIDDEN", ""},
		// VIRTUAL join with the admin key in the simulator header
		{"virtual admin key", post, join("ev"), H("X-Simulator-Key", testKeys.Admin), virtual("bot-2"), 403, "FORBIDDEN", ""},
		// VIRTUAL join with a user's bearer: an ACTUAL user never gets a VIRTUAL id
		{"virtual bearer", post, join("ev"), alice, map[string]any{"user_type": "VIRTUAL"}, 403, "FORBIDDEN", ""},
		// VIRTUAL join with the admin key
		{"virtual admin header", post, join("ev"), adminH, virtual("bot-2"), 403, "FORBIDDEN", ""},
		// the simulator key joins VIRTUAL users only
		{"sim key actual", post, join("ev"), simH, actual, 403, "FORBIDDEN", ""},

		// --- Join: body ---
		// malformed JSON
		{"join malformed", post, join("ev"), carol, `{"user_type":`, 400, "BAD_REQUEST", ""},
		// array body
		{"join array", post, join("ev"), carol, `["ACTUAL"]`, 400, "BAD_REQUEST", ""},
		// string body
		{"join string", post, join("ev"), carol, `"ACTUAL"`, 400, "BAD_REQUEST", ""},
		// null body
		{"join null", post, join("ev"), carol, `null`, 400, "BAD_REQUEST", ""},
		// trailing garbage
		{"join trailing", post, join("ev"), carol, `{"user_type":"ACTUAL"}}`, 400, "BAD_REQUEST", ""},
		// user_type as a number
		{"user_type number", post, join("ev"), carol, map[string]any{"user_type": 1}, 400, "BAD_REQUEST", ""},
		// unknown user_type
		{"user_type robot", post, join("ev"), carol, map[string]any{"user_type": "ROBOT"}, 400, "BAD_REQUEST", ""},
		// user_type in lower case
		{"user_type lower", post, join("ev"), carol, map[string]any{"user_type": "actual"}, 400, "BAD_REQUEST", ""},
		// missing user_type
		{"user_type missing", post, join("ev"), carol, map[string]any{}, 400, "BAD_REQUEST", ""},
		// unknown field
		{"join unknown field", post, join("ev"), carol, map[string]any{"user_type": "ACTUAL", "vip": true}, 400, "BAD_REQUEST", ""},
		// bot_id on an ACTUAL join
		{"actual with bot_id", post, join("ev"), carol, map[string]any{"user_type": "ACTUAL", "bot_id": "b"}, 400, "BAD_REQUEST", ""},
		// bot_id with a space and a bang
		{"bot_id invalid chars", post, join("ev"), simH, virtual("bad id!"), 400, "BAD_REQUEST", ""},
		// bot_id with a colon
		{"bot_id colon", post, join("ev"), simH, virtual("a:b"), 400, "BAD_REQUEST", ""},
		// bot_id empty
		{"bot_id empty", post, join("ev"), simH, virtual(""), 400, "BAD_REQUEST", ""},
		// bot_id of 65 characters
		{"bot_id 65 chars", post, join("ev"), simH, virtual(strings.Repeat("b", 65)), 400, "BAD_REQUEST", ""},
		// bot_id as a number
		{"bot_id number", post, join("ev"), simH, virtual(5), 400, "BAD_REQUEST", ""},
		// unknown event
		{"join unknown event", post, join("nope"), carol, actual, 404, "EVENT_NOT_FOUND", ""},
		// unknown event, VIRTUAL
		{"join unknown event virtual", post, join("nope"), simH, virtual("bot-2"), 404, "EVENT_NOT_FOUND", ""},

		// --- Status ---
		// a garbage token
		{"status garbage token", get, q("ev", "garbage"), nil, nil, 404, "TOKEN_NOT_FOUND", ""},
		// two garbage parts
		{"status dotted garbage", get, q("ev", "abc.def"), nil, nil, 404, "TOKEN_NOT_FOUND", ""},
		// a token of another event
		{"status other event token", get, q("ev", w.tokA2), nil, nil, 404, "TOKEN_NOT_FOUND", ""},
		// a tampered token
		{"status tampered token", get, q("ev", tamper(w.tokB)), nil, nil, 404, "TOKEN_NOT_FOUND", ""},
		// a very long token
		{"status long token", get, q("ev", strings.Repeat("a", 600)+"."+strings.Repeat("b", 600)), nil, nil, 404, "TOKEN_NOT_FOUND", ""},
		// an unknown event
		{"status unknown event", get, q("nope", "garbage"), nil, nil, 404, "EVENT_NOT_FOUND", ""},
		// an unknown event, with a real token of another
		{"status unknown event real token", get, q("nope", w.tokA), nil, nil, 404, "EVENT_NOT_FOUND", ""},
		// event details of an unknown event
		{"event unknown", get, "/api/v1/events/nope", nil, nil, 404, "EVENT_NOT_FOUND", ""},

		// --- Leave ---
		// no credentials
		{"leave no creds", del, q("ev", w.tokB), nil, nil, 401, "UNAUTHENTICATED", ""},
		// a forged bearer
		{"leave forged", del, q("ev", w.tokB), Bearer(w.forged), nil, 401, "UNAUTHENTICATED", ""},
		// an expired bearer
		{"leave expired", del, q("ev", w.tokA), Bearer(w.expired), nil, 401, "UNAUTHENTICATED", ""},
		// a wrong simulator key
		{"leave wrong sim key", del, q("ev", w.tokV), badSimH, nil, 403, "FORBIDDEN", ""},
		// another user's token
		{"leave other user", del, q("ev", w.tokB), alice, nil, 403, "TOKEN_OWNER_MISMATCH", ""},
		// another user's active token
		{"leave other user active", del, q("ev", w.tokA), carol, nil, 403, "TOKEN_OWNER_MISMATCH", ""},
		// the simulator key never acts for an ACTUAL token
		{"leave sim on actual", del, q("ev", w.tokA), simH, nil, 403, "TOKEN_OWNER_MISMATCH", ""},
		// a user never acts for a VIRTUAL token
		{"leave user on virtual", del, q("ev", w.tokV), alice, nil, 403, "TOKEN_OWNER_MISMATCH", ""},
		// a garbage token
		{"leave garbage", del, q("ev", "garbage"), alice, nil, 404, "TOKEN_NOT_FOUND", ""},
		// a token of another event
		{"leave other event token", del, q("ev", w.tokA2), alice, nil, 404, "TOKEN_NOT_FOUND", ""},
		// an unknown event
		{"leave unknown event", del, q("nope", w.tokA), alice, nil, 404, "EVENT_NOT_FOUND", ""},

		// --- Verify ---
		// no service key
		{"verify no key", post, verify("ev"), nil, map[string]any{"token": w.tokA, "user_id": w.aliceID}, 401, "UNAUTHENTICATED", ""},
		// a wrong service key
		{"verify wrong key", post, verify("ev"), H("X-Service-Key", "nope"), map[string]any{"token": w.tokA, "user_id": w.aliceID}, 403, "FORBIDDEN", ""},
		// a wrong admin key
		{"verify wrong admin key", post, verify("ev"), badAdminH, map[string]any{"token": w.tokA, "user_id": w.aliceID}, 403, "FORBIDDEN", ""},
		// the simulator key is no service credential
		{"verify sim key", post, verify("ev"), simH, map[string]any{"token": w.tokA, "user_id": w.aliceID}, 401, "UNAUTHENTICATED", ""},
		// a user's bearer is no service credential
		{"verify bearer", post, verify("ev"), alice, map[string]any{"token": w.tokA, "user_id": w.aliceID}, 401, "UNAUTHENTICATED", ""},
		// malformed
		{"verify malformed", post, verify("ev"), serviceH, `{"token":`, 400, "BAD_REQUEST", ""},
		// missing user_id
		{"verify missing user", post, verify("ev"), serviceH, map[string]any{"token": w.tokA}, 400, "BAD_REQUEST", ""},
		// missing token
		{"verify missing token", post, verify("ev"), serviceH, map[string]any{"user_id": w.aliceID}, 400, "BAD_REQUEST", ""},
		// token as a number
		{"verify token number", post, verify("ev"), serviceH, map[string]any{"token": 5, "user_id": w.aliceID}, 400, "BAD_REQUEST", ""},
		// unknown field
		{"verify unknown field", post, verify("ev"), serviceH, map[string]any{"token": w.tokA, "user_id": w.aliceID, "x": 1}, 400, "BAD_REQUEST", ""},
		// unknown event
		{"verify unknown event", post, verify("nope"), serviceH, map[string]any{"token": w.tokA, "user_id": w.aliceID}, 404, "EVENT_NOT_FOUND", ""},
		// garbage token
		{"verify garbage token", post, verify("ev"), serviceH, map[string]any{"token": "garbage", "user_id": w.aliceID}, 404, "TOKEN_NOT_FOUND", ""},
		// another user's token
		{"verify owner mismatch", post, verify("ev"), serviceH, map[string]any{"token": w.tokA, "user_id": w.bobID}, 403, "TOKEN_OWNER_MISMATCH", ""},
		// a waiting token
		{"verify waiting", post, verify("ev"), serviceH, map[string]any{"token": w.tokB, "user_id": w.bobID}, 409, "NOT_ACTIVE", "WAITING"},

		// --- Seats ---
		// no X-Queue-Token
		{"seats no token", get, seats("ev"), nil, nil, 401, "UNAUTHENTICATED", ""},
		// no X-Queue-Token, even for an admin
		{"seats admin no token", get, seats("ev"), adminH, nil, 401, "UNAUTHENTICATED", ""},
		// a garbage token
		{"seats garbage", get, seats("ev"), H("X-Queue-Token", "garbage"), nil, 404, "TOKEN_NOT_FOUND", ""},
		// an unknown event
		{"seats unknown event", get, seats("nope"), H("X-Queue-Token", w.tokA), nil, 404, "EVENT_NOT_FOUND", ""},
		// a waiting token
		{"seats waiting", get, seats("ev"), H("X-Queue-Token", w.tokB), nil, 409, "NOT_ACTIVE", "WAITING"},

		// --- Orders ---
		// no credentials
		{"order no creds", post, orders("ev"), nil, order(w.tokA, "A-1"), 401, "UNAUTHENTICATED", ""},
		// a forged bearer
		{"order forged", post, orders("ev"), Bearer(w.forged), order(w.tokA, "A-1"), 401, "UNAUTHENTICATED", ""},
		// an expired bearer
		{"order expired", post, orders("ev"), Bearer(w.expired), order(w.tokA, "A-1"), 401, "UNAUTHENTICATED", ""},
		// alg none bearer
		{"order alg none", post, orders("ev"), Bearer(w.algNone), order(w.tokA, "A-1"), 401, "UNAUTHENTICATED", ""},
		// a wrong simulator key
		{"order wrong sim key", post, orders("ev"), badSimH, order(w.tokV, "A-1"), 403, "FORBIDDEN", ""},
		// malformed
		{"order malformed", post, orders("ev"), alice, `{"token":`, 400, "BAD_REQUEST", ""},
		// array body
		{"order array", post, orders("ev"), alice, `[]`, 400, "BAD_REQUEST", ""},
		// missing seat
		{"order missing seat", post, orders("ev"), alice, map[string]any{"token": w.tokA}, 400, "BAD_REQUEST", ""},
		// seat as a number
		{"order seat number", post, orders("ev"), alice, map[string]any{"token": w.tokA, "seat": 1}, 400, "BAD_REQUEST", ""},
		// unknown field
		{"order unknown field", post, orders("ev"), alice, map[string]any{"token": w.tokA, "seat": "A-1", "price": 1}, 400, "BAD_REQUEST", ""},
		// unknown event
		{"order unknown event", post, orders("nope"), alice, order(w.tokA, "A-1"), 404, "EVENT_NOT_FOUND", ""},
		// garbage token
		{"order garbage token", post, orders("ev"), alice, order("garbage", "A-1"), 404, "TOKEN_NOT_FOUND", ""},
		// unknown seat
		{"order unknown seat", post, orders("ev"), alice, order(w.tokA, "Z-99"), 404, "SEAT_NOT_FOUND", ""},
		// seat past the end of the map (2 seats)
		{"order seat past end", post, orders("ev"), alice, order(w.tokA, "B-1"), 404, "SEAT_NOT_FOUND", ""},
		// seat 0
		{"order seat zero", post, orders("ev"), alice, order(w.tokA, "A-0"), 404, "SEAT_NOT_FOUND", ""},
		// seat with a leading zero
		{"order seat leading zero", post, orders("ev"), alice, order(w.tokA, "A-01"), 404, "SEAT_NOT_FOUND", ""},
		// seat in lower case
		{"order seat lower case", post, orders("ev"), alice, order(w.tokA, "a-1"), 404, "SEAT_NOT_FOUND", ""},
		// another user's token
		{"order other user", post, orders("ev"), carol, order(w.tokA, "A-1"), 403, "TOKEN_OWNER_MISMATCH", ""},
		// the simulator key never acts for an ACTUAL token
		{"order sim on actual", post, orders("ev"), simH, order(w.tokA, "A-1"), 403, "TOKEN_OWNER_MISMATCH", ""},
		// a user never acts for a VIRTUAL token
		{"order user on virtual", post, orders("ev"), alice, order(w.tokV, "A-1"), 403, "TOKEN_OWNER_MISMATCH", ""},
		// ownership is checked before the status: another user's waiting token
		{"order other user waiting", post, orders("ev"), alice, order(w.tokB, "A-1"), 403, "TOKEN_OWNER_MISMATCH", ""},
		// the owner's waiting token
		{"order waiting", post, orders("ev"), bob, order(w.tokB, "A-1"), 409, "NOT_ACTIVE", "WAITING"},
		// a waiting VIRTUAL token with the simulator key
		{"order waiting virtual", post, orders("ev"), simH, order(w.tokV, "A-1"), 409, "NOT_ACTIVE", "WAITING"},

		// --- Routes ---
		// an unknown API route
		{"unknown route", get, "/api/v1/nope", nil, nil, 404, "NOT_FOUND", ""},
	}
	runBad(t, w, cases)
}

// tamper changes one character of a queue token's signature.
func tamper(tok string) string {
	b := []byte(tok)
	i := len(b) - 3
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestPrecedence checks API.md's order when several errors apply:
// 429, 413, 401, 403 FORBIDDEN, 400, 404, 403 TOKEN_OWNER_MISMATCH, 409.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	w := mustWorld(t)
	post, del, patch := http.MethodPost, http.MethodDelete, http.MethodPatch
	big := `{"user_type":"ACTUAL","pad":"` + strings.Repeat("x", httpapi.MaxBody) + `"}`
	orders := "/api/v1/events/ev/orders"
	cases := []badCase{
		// 413 before 401: oversize and no credentials
		{"oversize no creds", post, "/api/v1/events/ev/queue", nil, big, 413, "BODY_TOO_LARGE", ""},
		// 413 before 401: oversize order with a forged bearer
		{"oversize forged", post, orders, Bearer(w.forged), big, 413, "BODY_TOO_LARGE", ""},
		// 413 before 403: oversize VIRTUAL join with a wrong key
		{"oversize wrong sim key", post, "/api/v1/events/ev/queue", badSimH, big, 413, "BODY_TOO_LARGE", ""},
		// 401 before 400: no credentials and a malformed body (join)
		{"no creds malformed join", post, "/api/v1/events/ev/queue", nil, `{"user_type":`, 401, "UNAUTHENTICATED", ""},
		// 401 before 400: no credentials and a malformed body (order)
		{"no creds malformed order", post, orders, nil, `{"token":`, 401, "UNAUTHENTICATED", ""},
		// 401 before 400: no credentials and a malformed body (admin)
		{"no creds malformed admin", post, events, nil, `[`, 401, "UNAUTHENTICATED", ""},
		// 401 before 400: no credentials and a malformed body (verify)
		{"no creds malformed verify", post, "/api/v1/events/ev/verify", nil, `nope`, 401, "UNAUTHENTICATED", ""},
		// 401 before 400: expired bearer and a wrong user_type
		{"expired bearer bad type", post, "/api/v1/events/ev/queue", Bearer(w.expired), map[string]any{"user_type": 1}, 401, "UNAUTHENTICATED", ""},
		// 401 before 404: no credentials on an unknown event
		{"no creds unknown event", post, "/api/v1/events/nope/queue", nil, actual, 401, "UNAUTHENTICATED", ""},
		// 401 before 404: no admin key on an unknown event
		{"no admin key unknown event", patch, events + "/nope", nil, map[string]any{"capacity": 2}, 401, "UNAUTHENTICATED", ""},
		// 403 before 400: VIRTUAL, wrong simulator key, malformed bot_id
		{"wrong sim key bad bot_id", post, "/api/v1/events/ev/queue", badSimH, map[string]any{"user_type": "VIRTUAL", "bot_id": "bad id!"}, 403, "FORBIDDEN", ""},
		// 403 before 400: VIRTUAL, no simulator key, bot_id of the wrong type
		{"no sim key bot_id number", post, "/api/v1/events/ev/queue", nil, map[string]any{"user_type": "VIRTUAL", "bot_id": 5}, 403, "FORBIDDEN", ""},
		// 403 before 400: wrong admin key and a malformed body
		{"wrong admin key malformed", post, events, badAdminH, `{"id":`, 403, "FORBIDDEN", ""},
		// 403 before 400: wrong service key and a malformed body
		{"wrong service key malformed", post, "/api/v1/events/ev/verify", H("X-Service-Key", "x"), `{`, 403, "FORBIDDEN", ""},
		// 403 before 400: wrong simulator key and a malformed order
		{"wrong sim key malformed order", post, orders, badSimH, `{`, 403, "FORBIDDEN", ""},
		// 403 before 404: wrong admin key on an unknown event
		{"wrong admin key unknown event", post, events + "/nope/pause", badAdminH, nil, 403, "FORBIDDEN", ""},
		// 400 before 404: malformed join to an unknown event
		{"malformed unknown event", post, "/api/v1/events/nope/queue", Bearer(w.carol), `{"user_type":`, 400, "BAD_REQUEST", ""},
		// 400 before 404: malformed order to an unknown event
		{"malformed order unknown event", post, "/api/v1/events/nope/orders", Bearer(w.alice), `[]`, 400, "BAD_REQUEST", ""},
		// 400 before 404: out-of-range PATCH of an unknown event
		{"patch out of range unknown event", patch, events + "/nope", adminH, map[string]any{"capacity": 0}, 400, "BAD_REQUEST", ""},
		// 400 before 404: wrong type in a PATCH of an unknown event
		{"patch wrong type unknown event", patch, events + "/nope", adminH, map[string]any{"capacity": "ten"}, 400, "BAD_REQUEST", ""},
		// 404 before 403 mismatch: unknown token with another user's bearer
		{"unknown token other bearer", post, orders, Bearer(w.carol), map[string]any{"token": "garbage", "seat": "A-1"}, 404, "TOKEN_NOT_FOUND", ""},
		// 404 before 403 mismatch: unknown seat with another user's token
		{"unknown seat other user", post, orders, Bearer(w.carol), map[string]any{"token": w.tokA, "seat": "Z-1"}, 404, "SEAT_NOT_FOUND", ""},
		// 404 before 403 mismatch: unknown event with another user's token
		{"unknown event other user", post, "/api/v1/events/nope/orders", Bearer(w.carol), map[string]any{"token": w.tokA, "seat": "A-1"}, 404, "EVENT_NOT_FOUND", ""},
		// 404 before 403 mismatch: leave an unknown token with another user's bearer
		{"leave unknown token", del, "/api/v1/events/ev/queue/" + tamper(w.tokA), Bearer(w.carol), nil, 404, "TOKEN_NOT_FOUND", ""},
		// 403 mismatch before 409: another user's waiting token
		{"mismatch before not active", post, orders, Bearer(w.carol), map[string]any{"token": w.tokB, "seat": "A-1"}, 403, "TOKEN_OWNER_MISMATCH", ""},
		// 403 mismatch before 409: verify another user's waiting token
		{"verify mismatch before not active", post, "/api/v1/events/ev/verify", serviceH, map[string]any{"token": w.tokB, "user_id": w.aliceID}, 403, "TOKEN_OWNER_MISMATCH", ""},
	}
	runBad(t, w, cases)
}

// TestEventTimesNamedInErrors: a time field that is not an RFC 3339 time is
// a 400 naming the field, on create and on change, and changes nothing.
func TestEventTimesNamedInErrors(t *testing.T) {
	t.Parallel()
	w := mustWorld(t)
	f := w.f
	for _, tc := range []struct {
		name, method, path, field string
	}{
		{"create opens_at", http.MethodPost, events, "opens_at"},
		{"create closes_at", http.MethodPost, events, "closes_at"},
		{"create prequeue_opens_at", http.MethodPost, events, "prequeue_opens_at"},
		{"change closes_at", http.MethodPatch, events + "/ev", "closes_at"},
		{"change prequeue_opens_at", http.MethodPatch, events + "/ev", "prequeue_opens_at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{tc.field: "tomorrow at eight"}
			if tc.method == http.MethodPost {
				body = map[string]any{"id": "x-" + tc.field, "seats": 1, "capacity": 1, "admit_batch": 1,
					"admit_interval_ms": 100, "active_ttl_s": 60, "policy": "capacity", tc.field: "tomorrow at eight"}
			}
			before := f.MustSnapshot(t, "ev", "ev2")
			r := f.MustDo(t, tc.method, tc.path, adminH, body)
			code, msg := r.Err()
			if r.Status != http.StatusBadRequest || code != "BAD_REQUEST" || !strings.Contains(msg, tc.field) {
				t.Errorf("%d %s, want 400 BAD_REQUEST naming %s", r.Status, r.Raw, tc.field)
			}
			if after := f.MustSnapshot(t, "ev", "ev2"); after != before {
				t.Errorf("state changed by a refused call:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
