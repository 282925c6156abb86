package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/store/storetest"
)

// textCase is one request with a string that is not text, and the field
// its 400 must name; a case with another status checks precedence.
type textCase struct {
	name    string
	method  string
	path    string
	headers map[string]string
	body    any
	status  int
	field   string
}

// mustRefuseText runs cases against f: each answers its status, a 400
// naming its field, and the events stay as they were.
func mustRefuseText(t *testing.T, f *Fixture, cases []textCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.MustSnapshot(t)
			r := f.MustDo(t, tc.method, tc.path, tc.headers, tc.body)
			if tc.status != http.StatusBadRequest {
				MustStatus(t, r, tc.status)
				return
			}
			MustError(t, r, http.StatusBadRequest, "BAD_REQUEST")
			if _, msg := r.Err(); !strings.Contains(msg, tc.field+" must be text") {
				t.Errorf("message %q does not name %s", msg, tc.field)
			}
			if after := f.MustSnapshot(t); after != before {
				t.Errorf("a refused call changed the events:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestTextRefusedAtTheEdge: a NUL, another control character or invalid
// UTF-8 in any string the API takes answers 400 naming the field, on SQLite
// and on PostgreSQL (which refuses a NUL: it came back as 503), and never
// reaches SQL. Credentials are still checked first.
func TestTextRefusedAtTheEdge(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			f := MustServerWith(t, FixtureOptions{Dialect: dialect})
			f.MustCreateEvent(t, EventBody("ev"))
			_, alice := f.MustSession(t, "alice")
			post, patch, del := http.MethodPost, http.MethodPatch, http.MethodDelete
			events := "/api/v1/admin/events"
			mustRefuseText(t, f, []textCase{
				// the probe: a NUL in an event's name
				{"NUL in name", post, events, adminH, EventBody("ev-nul", "name", "a\u0000b"), 400, "field name"},
				// a bell
				{"control in name", post, events, adminH, EventBody("ev-bel", "name", "a\u0007b"), 400, "field name"},
				// a byte that is no UTF-8
				{"invalid UTF-8 in name", post, events, adminH,
					`{"id":"ev-bad","name":"a` + "\xff" + `b","seats":1,"capacity":1,"admit_batch":1,"admit_interval_ms":100,"active_ttl_s":60,"policy":"capacity"}`,
					400, "field name"},
				// half a surrogate pair
				{"lone surrogate in name", post, events, adminH,
					`{"id":"ev-sur","name":"a\ud800","seats":1,"capacity":1,"admit_batch":1,"admit_interval_ms":100,"active_ttl_s":60,"policy":"capacity"}`,
					400, "field name"},
				// an id
				{"NUL in a granted user id", post, events + "/ev/priority", adminH, map[string]any{"user_ids": []string{"u_1", "u_\u0000"}}, 400, "field user_ids[1]"},
				// a nickname
				{"NUL in nickname", post, "/api/v1/sessions", nil, map[string]any{"nickname": "al\u0000ice"}, 400, "field nickname"},
				// a queue token
				{"NUL in a token to verify", post, "/api/v1/events/ev/verify", serviceH, map[string]any{"token": "t\u0000", "user_id": "u_1"}, 400, "field token"},
				// a seat
				{"control in a seat", post, "/api/v1/events/ev/orders", Bearer(alice), map[string]any{"token": "t", "seat": "A-1\u001b"}, 400, "field seat"},
				// a path parameter that would reach SQL
				{"NUL in an event path", patch, events + "/e%00v", adminH, map[string]any{"capacity": 2}, 400, "path parameter event"},
				// another
				{"NUL in a revoked user", del, events + "/ev/priority/users/u%00x", adminH, nil, 400, "path parameter user"},
				// 401 first: no admin key
				{"no admin key", patch, events + "/e%00v", nil, map[string]any{"capacity": 2}, 401, ""},
				// 401 first: no bearer
				{"no bearer", post, "/api/v1/events/ev/queue", nil, map[string]any{"user_type": "ACTUAL\u0000"}, 401, ""},
			})
		})
	}
}

// TestTextRefusedInPractice: practice routes read SQL with their path and
// query values; those that are not text answer 400, after the bearer check.
func TestTextRefusedInPractice(t *testing.T) {
	t.Parallel()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			f := MustPracticeServer(t, dialect)
			_, alice := f.MustSession(t, "alice")
			mustRefuseText(t, f.Fixture, []textCase{
				// a scenario name
				{"NUL in scenario", http.MethodPost, "/api/v1/practice", Bearer(alice), map[string]any{"scenario": "tiny\u0000"}, 400, "field scenario"},
				// the leaderboard's query
				{"NUL in the leaderboard's scenario", http.MethodGet, "/api/v1/practice/leaderboard?scenario=tiny%00", nil, nil, 400, `query parameter "scenario"`},
				// a race id
				{"NUL in a race id", http.MethodGet, "/api/v1/practice/p%00x/result", Bearer(alice), nil, 400, "path parameter event"},
				// another
				{"invalid UTF-8 in a race id", http.MethodGet, "/api/v1/practice/p%FFx/live", Bearer(alice), nil, 400, "path parameter event"},
				// 401 first
				{"no bearer", http.MethodGet, "/api/v1/practice/p%00x/result", nil, nil, 401, ""},
			})
		})
	}
}
