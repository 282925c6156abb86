package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strconv"
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
		if !signedBy(token, testSessionKey) {
			t.Fatalf("accepted %q, not signed with the session secret", token)
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
		if !signedBy(token, testPassKey) {
			t.Fatalf("accepted %q, not signed with the pass key", token)
		}
	})
}

// signedBy reports whether token is header.payload.signature with the
// canonical unpadded base64url HMAC-SHA256 of header.payload under key.
func signedBy(token string, key []byte) bool {
	i := strings.LastIndexByte(token, '.')
	if i < 0 || strings.Count(token, ".") != 2 {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(token[:i]))
	return token[i+1:] == base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// mutate changes token at pos: op 0 replaces the byte with b, 1 inserts b
// before it, 2 deletes it, 3 swaps it with the next one.
func mutate(token string, pos uint, op, b byte) string {
	if token == "" {
		return string(b)
	}
	i := int(pos % uint(len(token)))
	switch op % 4 {
	case 0:
		return token[:i] + string(b) + token[i+1:]
	case 1:
		return token[:i] + string(b) + token[i:]
	case 2:
		return token[:i] + token[i+1:]
	}
	if i+1 == len(token) {
		return token
	}
	return token[:i] + string(token[i+1]) + string(token[i]) + token[i+2:]
}

// FuzzPassMutation: a valid pass changed in any one place is rejected,
// unless the change gave back the same pass.
func FuzzPassMutation(f *testing.F) {
	s := MustSigner(f)
	valid := MustIssuePass(f, s, "ev-1", "u_ALICE", "qt-1", testNow.Add(time.Minute))
	n := uint(len(valid))
	f.Add(uint(0), byte(0), byte('f'))   // the header
	f.Add(uint(40), byte(0), byte('A'))  // the payload
	f.Add(n-1, byte(0), byte('B'))       // the signature's last character (padding bits)
	f.Add(n-1, byte(0), byte('A'))       // the same, other bits
	f.Add(n-44, byte(0), byte('.'))      // the dot before the signature
	f.Add(n-1, byte(2), byte(0))         // a signature one character short
	f.Add(n, byte(1), byte('='))         // padding in front
	f.Add(uint(10), byte(3), byte(0))    // two header characters swapped
	f.Add(uint(n/2), byte(1), byte(' ')) // a space inside
	f.Fuzz(func(t *testing.T, pos uint, op, b byte) {
		m := mutate(valid, pos, op, b)
		if m == valid {
			return
		}
		got, err := s.ParsePass(m, "ev-1")
		if err == nil {
			t.Fatalf("accepted mutated pass %q: %+v", m, got)
		}
		checkFuzzError(t, err)
	})
}

// FuzzSessionMutation: a valid session token changed in any one place is
// rejected, unless the change gave back the same token.
func FuzzSessionMutation(f *testing.F) {
	s := MustSigner(f)
	valid := MustIssueSession(f, s, "u_ALICE", "alice")
	n := uint(len(valid))
	f.Add(uint(0), byte(0), byte('f'))
	f.Add(uint(50), byte(0), byte('A'))
	f.Add(n-1, byte(0), byte('B'))
	f.Add(n-1, byte(2), byte(0))
	f.Add(uint(20), byte(3), byte(0))
	f.Fuzz(func(t *testing.T, pos uint, op, b byte) {
		m := mutate(valid, pos, op, b)
		if m == valid {
			return
		}
		got, err := s.ParseSession(m)
		if err == nil {
			t.Fatalf("accepted mutated session %q: %+v", m, got)
		}
		checkFuzzError(t, err)
	})
}

// signedSession signs claims, a raw JSON payload, with the session secret
// under the header the library writes for HS256.
func signedSession(claims string) string {
	signing := passHeader + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
	m := hmac.New(sha256.New, testSessionKey)
	m.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkFastSession asserts that ParseSession answers token exactly as the
// jwt library path does, and that the fast path accepts only what the
// library accepts, with the same result.
func checkFastSession(t *testing.T, s *Signer, token string) {
	t.Helper()
	got, err := s.ParseSession(token)
	var want Session
	wantErr := precheck("access token", token)
	if wantErr == nil {
		want, wantErr = s.librarySession(token)
	}
	if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("ParseSession(%q) = %+v, %v; the library says %+v, %v", token, got, err, want, wantErr)
	}
	if wantErr != nil {
		if _, ok := s.fastSession(token); ok {
			t.Fatalf("fast path accepted %q, the library says %v", token, wantErr)
		}
	}
}

// FuzzSessionFastPath: for any payload signed with the session secret, the
// fast path agrees with the jwt library.
func FuzzSessionFastPath(f *testing.F) {
	s := MustSigner(f)
	exp, iat := strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10), strconv.FormatInt(testNow.Unix(), 10)
	valid := `{"typ":"session","name":"alice","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,"iat":` + iat + `}`
	for _, claims := range []string{
		valid,
		`{"exp":` + exp + `,"iat":` + iat + `,"iss":"rushline","name":"bench","sub":"u_1","typ":"session"}`,
		`{"typ":"session","name":"al\u00efce","dev":"d1","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,"iat":` + iat + `}`,
		`{"typ":"session","name":"\u003cb\u003e","iss":"rushline","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","name":"Zoë","iss":"rushline","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","name":"x\xff","iss":"rushline","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,"sub":"u_BOB"}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","SUB":"u_BOB","exp":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"VIRTUAL:bot","exp":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"virtual:bot","exp":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"","exp":` + exp + `}`,
		`{"typ":"pass","iss":"rushline","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","iss":"elsewhere","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE"}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + iat + `}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `.5}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":1e300}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":"` + exp + `"}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":0` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":9999999999999999}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":999999999999999}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":null}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,"nbf":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,"aud":"x"}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,"iat":"then"}`,
		`{"typ":"session", "iss":"rushline","sub":"u_ALICE","exp":` + exp + `}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `} `,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `}{}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":` + exp + `,}`,
		`{"typ":"session","iss":"rushline","sub":"u_ALICE","exp":-` + exp + `}`,
		`{}`,
		`[]`,
		``,
	} {
		f.Add(claims)
	}
	f.Fuzz(func(t *testing.T, claims string) {
		checkFastSession(t, s, signedSession(claims))
	})
}

// FuzzSessionFastPathMutation: a session token changed in any one place is
// answered by ParseSession exactly as the jwt library answers it.
func FuzzSessionFastPathMutation(f *testing.F) {
	s := MustSigner(f)
	valid, _, err := s.IssueDeviceSession("u_ALICE", "alice", "dev-1")
	if err != nil {
		f.Fatal(err)
	}
	n := uint(len(valid))
	f.Add(uint(0), byte(0), byte('f'))
	f.Add(uint(36), byte(0), byte('.'))
	f.Add(uint(50), byte(0), byte('A'))
	f.Add(n-1, byte(0), byte('B'))
	f.Add(n-1, byte(2), byte(0))
	f.Add(n, byte(1), byte('A'))
	f.Add(uint(20), byte(3), byte(0))
	f.Fuzz(func(t *testing.T, pos uint, op, b byte) {
		checkFastSession(t, s, mutate(valid, pos, op, b))
	})
}
