package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/queue"
)

// requestBodies are the shapes of every JSON body the API decodes.
var requestBodies = []struct {
	name string
	new  func() any
}{
	{"session", func() any {
		return &struct {
			Nickname *string `json:"nickname"`
		}{}
	}},
	{"join", func() any {
		return &struct {
			UserType *string `json:"user_type"`
			BotID    *string `json:"bot_id"`
		}{}
	}},
	{"verify", func() any {
		return &struct {
			Token  *string `json:"token"`
			UserID *string `json:"user_id"`
		}{}
	}},
	{"order", func() any {
		return &struct {
			Token *string `json:"token"`
			Seat  *string `json:"seat"`
		}{}
	}},
	{"event", func() any { return &eventFields{} }},
	{"load", func() any {
		return &struct {
			TPS *float64 `json:"tps"`
		}{}
	}},
}

// decodeBytes runs decode on b as the body of a request.
func decodeBytes(b []byte, v any) error {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/", nil)
	c.Request.Body = &readBuffer{b: b}
	return decode(c, v)
}

// FuzzDecode: no body panics decode; a refusal is BAD_REQUEST with a
// message that names no Go internals; an accepted body is one JSON object
// whose value survives a round trip through JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"nickname":"alice"}`, `{"user_type":"VIRTUAL","bot_id":"b-1"}`, `{"token":"t","user_id":"u_1"}`,
		`{"token":"t","seat":"A-1"}`, `{"tps":1e9}`, `{"id":"ev","seats":1,"opens_at":"2026-11-22T10:00:00+01:00"}`,
		`{"seats":1e400}`, `{"seats":1.5}`, `{"nickname":"\ud800"}`, `{"a":1}`, `{} {}`, `{}}`, `[]`, `null`, ` {"tps":0} `,
		`{"closes_at":"yesterday"}`, `{"nickname":null}`, `{"NICKNAME":"x"}`, "{\"nickname\":\"\xff\"}", `{"tps":-0}`,
		`{"id":"ev","name":"a\u0000b"}`, `{"token":"t\u001f","seat":"A-1"}`, `{"bot_id":"\ud83d\ude00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, rb := range requestBodies {
			v := rb.new()
			err := decodeBytes(body, v)
			if err != nil {
				var qe *queue.Error
				if !errors.As(err, &qe) || qe.Code != queue.CodeBadRequest || qe.Message == "" {
					t.Fatalf("%s: %q: err = %#v, want BAD_REQUEST", rb.name, body, err)
				}
				for _, leak := range []string{"json:", "*string", "*int", "*float64", "httpapi.", "struct"} {
					if strings.Contains(qe.Message, leak) {
						t.Fatalf("%s: %q: message %q names %q", rb.name, body, qe.Message, leak)
					}
				}
				if !utf8.ValidString(qe.Message) {
					t.Fatalf("%s: %q: message %q is not UTF-8", rb.name, body, qe.Message)
				}
				continue
			}
			trimmed := bytes.TrimSpace(body)
			if !json.Valid(trimmed) || trimmed[0] != '{' {
				t.Fatalf("%s: accepted %q, not one JSON object", rb.name, body)
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: accepted %q into a value that does not marshal: %v", rb.name, body, err)
			}
			again := rb.new()
			if err := decodeBytes(out, again); err != nil {
				t.Fatalf("%s: %q → %s does not decode again: %v", rb.name, body, out, err)
			}
			if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
				t.Fatalf("%s: %q → %s → %s", rb.name, body, out, out2)
			}
			var doc any
			if err := json.Unmarshal(body, &doc); err != nil || !allText(doc) {
				t.Fatalf("%s: accepted %q, which holds a string that is not text", rb.name, body)
			}
		}
	})
}

// allText reports whether every string in a decoded JSON value is text.
func allText(v any) bool {
	switch v := v.(type) {
	case string:
		return validText(v)
	case []any:
		for _, e := range v {
			if !allText(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range v {
			if !allText(e) {
				return false
			}
		}
	}
	return true
}

// FuzzSessionBody sends any body to POST /api/v1/sessions through the whole
// router: the answer is 201 with a session, or 400/413 in the API error
// shape, never a 5xx.
func FuzzSessionBody(f *testing.F) {
	signer, err := auth.NewSigner([]byte("fuzz-session-secret"), []byte("fuzz-pass-key"))
	if err != nil {
		f.Fatal(err)
	}
	h := New(Deps{Signer: signer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	for _, s := range []string{`{"nickname":"alice"}`, `{"nickname":""}`, `{"nickname":"` + strings.Repeat("é", 33) + `"}`,
		`{"nickname":"a\u0000"}`, `{"nickname":1}`, `{`, ``, `{"nickname":"bob","x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/sessions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var got struct {
			UserID      string `json:"user_id"`
			Nickname    string `json:"nickname"`
			AccessToken string `json:"access_token"`
			Error       *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%q: %d with a body that is no JSON: %q", body, rec.Code, rec.Body)
		}
		switch rec.Code {
		case http.StatusCreated:
			sess, err := signer.ParseSession(got.AccessToken)
			if err != nil || sess.UserID != got.UserID || sess.Nickname != got.Nickname || !queue.ValidNickname(got.Nickname) {
				t.Fatalf("%q: 201 %s; session %+v, %v", body, rec.Body, sess, err)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if got.Error == nil || got.Error.Message == "" ||
				(rec.Code == http.StatusBadRequest) != (got.Error.Code == string(queue.CodeBadRequest)) {
				t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
			}
		default:
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body)
		}
	})
}
