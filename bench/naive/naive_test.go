package naive

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/redisproc/redistest"
)

type answer struct {
	Token    string `json:"token"`
	Status   string `json:"status"`
	Position int64  `json:"position"`
	Waiting  int64  `json:"waiting"`
}

// MustDo sends one request to h and decodes a JSON answer.
func MustDo(tb testing.TB, h http.Handler, method, path, body string) (int, answer) {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	var a answer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		tb.Fatalf("%s %s: %d %q: %v", method, path, rec.Code, rec.Body, err)
	}
	return rec.Code, a
}

func TestJoinAndStatus(t *testing.T) {
	rdb := redistest.MustClient(t, redistest.MustStart(t).Addr())
	h := Handler(rdb)
	const q = "/api/v1/events/e1/queue"
	_, first := MustDo(t, h, "POST", q, `{"user_type":"VIRTUAL","bot_id":"a"}`)
	_, second := MustDo(t, h, "POST", q, `{"user_type":"VIRTUAL","bot_id":"b"}`)
	_, again := MustDo(t, h, "POST", q, `{"user_type":"VIRTUAL","bot_id":"a"}`)
	_, other := MustDo(t, h, "POST", "/api/v1/events/e2/queue", `{"user_type":"VIRTUAL","bot_id":"a"}`)
	for _, tc := range []struct {
		name           string
		got            answer
		position, wait int64
	}{
		// first in line
		{name: "first", got: first, position: 1, wait: 1},
		// second in line
		{name: "second", got: second, position: 2, wait: 2},
		// the same user again keeps its place (SETNX)
		{name: "again", got: again, position: 1, wait: 2},
		// another event has its own line
		{name: "other event", got: other, position: 1, wait: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got.Position != tc.position || tc.got.Waiting != tc.wait || tc.got.Token == "" {
				t.Errorf("got %+v, want position %d of %d with a token", tc.got, tc.position, tc.wait)
			}
		})
	}
	if again.Token != first.Token {
		t.Errorf("joining again gave token %q, want %q", again.Token, first.Token)
	}
	for _, tc := range []struct {
		name     string
		path     string
		code     int
		position int64
	}{
		// the second user's rank
		{name: "second", path: q + "/" + second.Token, code: 200, position: 2},
		// a token of another line is unknown here
		{name: "wrong event", path: q + "/" + other.Token, code: 404},
		// an unknown token
		{name: "unknown", path: q + "/nope", code: 404},
	} {
		t.Run("status "+tc.name, func(t *testing.T) {
			code, a := MustDo(t, h, "GET", tc.path, "")
			if code != tc.code || a.Position != tc.position {
				t.Errorf("got %d %+v, want %d with position %d", code, a, tc.code, tc.position)
			}
		})
	}
	if code, _ := MustDo(t, h, "POST", q, `{"user_type":"VIRTUAL"}`); code != http.StatusBadRequest {
		t.Errorf("join without bot_id: %d, want 400", code)
	}
}

// TestFloor checks the HTTP floor answers the baseline's routes in the same
// shapes, refuses a body without a bot id as it does, and needs no Redis.
func TestFloor(t *testing.T) {
	h := Floor()
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		status                   string
	}{
		{"join", http.MethodPost, "/api/v1/events/e/queue", `{"bot_id":"b1"}`, http.StatusCreated, "WAITING"},
		{"join without a bot id", http.MethodPost, "/api/v1/events/e/queue", `{}`, http.StatusBadRequest, ""},
		{"join with bad JSON", http.MethodPost, "/api/v1/events/e/queue", `{`, http.StatusBadRequest, ""},
		{"status", http.MethodGet, "/api/v1/events/e/queue/tok", "", http.StatusOK, "WAITING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, a := MustDo(t, h, tc.method, tc.path, tc.body)
			if code != tc.code || a.Status != tc.status {
				t.Errorf("%d %+v, want %d with status %q", code, a, tc.code, tc.status)
			}
			if tc.name == "join" && (len(a.Token) != len(floorToken) || a.Position != 1) {
				t.Errorf("join answer %+v", a)
			}
		})
	}
}
