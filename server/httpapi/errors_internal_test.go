package httpapi

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// TestFailAnswersEveryCode: each code answers, through fail, with the status
// API.md's table gives it (API-next.md's and the OpenAPI document's added
// codes too) in the {"error":{"code","message"}} shape; a 503 says when to
// retry.
func TestFailAnswersEveryCode(t *testing.T) {
	cases := []struct {
		code   queue.Code
		status int
	}{
		{queue.CodeBadRequest, 400},
		{queue.CodeBodyTooLarge, 413},
		{queue.CodeUnauthenticated, 401},
		{queue.CodeForbidden, 403},
		{queue.CodeTokenOwnerMismatch, 403},
		{queue.CodeChallengeFailed, 403},
		{queue.CodeEventNotFound, 404},
		{queue.CodeTokenNotFound, 404},
		{queue.CodeSeatNotFound, 404},
		{queue.CodeDropNotFound, 404},
		{queue.CodeScenarioNotFound, 404},
		{queue.CodeResultNotFound, 404},
		{queue.CodeNotFound, 404},
		{queue.CodeMethodNotAllowed, 405},
		{queue.CodeNotActive, 409},
		{queue.CodeSeatTaken, 409},
		{queue.CodeSoldOut, 409},
		{queue.CodeEventClosed, 409},
		{queue.CodeEventNotOpen, 409},
		{queue.CodeEventExists, 409},
		{queue.CodeDeviceBusy, 409},
		{queue.CodeRaceNotFinished, 409},
		{queue.CodeStepOutOfOrder, 409},
		{queue.CodeCaptchaWrong, 409},
		{queue.CodeRateLimited, 429},
		{queue.CodeUnavailable, 503},
		{queue.CodeInternal, 500},
	}
	if len(cases) != len(statusOf) {
		t.Errorf("%d cases for %d mapped codes: give every code a case", len(cases), len(statusOf))
	}
	s := New(Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, tc := range cases {
		t.Run(string(tc.code), func(t *testing.T) {
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
			s.fail(c, queue.Errorf(tc.code, "a sentence"))
			if w.Code != tc.status {
				t.Errorf("status = %d, want %d", w.Code, tc.status)
			}
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Code != string(tc.code) || body.Error.Message != "a sentence" {
				t.Errorf("body = %s (%v), want code %s and the message", w.Body, err, tc.code)
			}
			if ra := w.Header().Get("Retry-After"); (tc.status == 503) != (ra != "") {
				t.Errorf("Retry-After = %q on a %d", ra, tc.status)
			}
		})
	}
}

// TestEveryDefinedCodeIsMapped: each Code constant of server/queue/errors.go
// has its status here, so a new code never falls through to a 500.
func TestEveryDefinedCodeIsMapped(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../queue/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, name := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				code, _ := strconv.Unquote(lit.Value)
				n++
				if _, ok := statusOf[queue.Code(code)]; !ok {
					t.Errorf("%s (%s) has no HTTP status in statusOf", name.Name, code)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d codes in server/queue/errors.go, want them all", n)
	}
}
