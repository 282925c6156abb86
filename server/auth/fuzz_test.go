package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// checkFuzzError asserts a rejection is a client-facing UNAUTHENTICATED error.
func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var qe *queue.Error
	if !errors.As(err, &qe) || qe.Code != queue.CodeUnauthenticated || qe.Message == "" {
		t.Fatalf("err = %#v, want a *queue.Error with %s", err, queue.CodeUnauthenticated)
	}
}

// FuzzParseSession: no input panics, every rejection is UNAUTHENTICATED, and
// nothing accepted names a VIRTUAL user. Seeds live in testdata/fuzz too.
func FuzzParseSession(f *testing.F) {
	s := MustSigner(f)
	f.Add(MustIssueSession(f, s, "u_ALICE", "alice"))
	f.Add(MustCraft(f, map[string]any{"alg": "none"}, sessionClaimsMap(), nil))
	f.Add(MustCraft(f, hs256, with(sessionClaimsMap(), "sub", "VIRTUAL:x"), testSessionKey))
	f.Add(MustCraft(f, hs256, with(sessionClaimsMap(), "exp", 1e300), testSessionKey))
	f.Add("")
	f.Add("..")
	f.Add("e30.e30.")
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.ParseSession(token)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if got.UserID == "" || isVirtual(got.UserID) || !got.ExpiresAt.After(testNow) {
			t.Fatalf("accepted %+v", got)
		}
	})
}

// FuzzParsePass: no input panics, every rejection is UNAUTHENTICATED, and an
// accepted pass is for the asked event and still valid.
func FuzzParsePass(f *testing.F) {
	s := MustSigner(f)
	f.Add(MustIssuePass(f, s, "ev-1", "u_ALICE", "qt-1", testNow.Add(time.Minute)), "ev-1")
	f.Add(MustCraft(f, hs256, with(passClaimsMap(), "aud", []string{"ev-1"}), testPassKey), "ev-1")
	f.Add(MustCraft(f, hs256, with(passClaimsMap(), "iat", "yesterday"), testPassKey), "ev-1")
	f.Add(MustIssueSession(f, s, "u_ALICE", "alice"), "ev-1")
	f.Add("", "")
	f.Add("a.b.c", "ev-1")
	f.Fuzz(func(t *testing.T, token, eventID string) {
		got, err := s.ParsePass(token, eventID)
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if got.EventID != eventID || got.UserID == "" || got.QueueToken == "" || !got.ExpiresAt.After(testNow) {
			t.Fatalf("accepted %+v for %q", got, eventID)
		}
		if strings.Count(token, ".") != 2 {
			t.Fatalf("accepted a token with %d dots", strings.Count(token, "."))
		}
	})
}
