package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushline/rushline/server/queue"
)

var (
	testSessionKey = []byte("test-session-secret-0123456789abcdef")
	testPassKey    = []byte("test-service-key-0123456789abcdef")
	testNow        = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// MustSigner makes a Signer with the test keys and a clock fixed at testNow
// unless opts say otherwise.
func MustSigner(tb testing.TB, opts ...Option) *Signer {
	tb.Helper()
	opts = append([]Option{WithClock(func() time.Time { return testNow })}, opts...)
	s, err := NewSigner(testSessionKey, testPassKey, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// MustIssueSession issues a session token or fails the test.
func MustIssueSession(tb testing.TB, s *Signer, userID, nickname string) string {
	tb.Helper()
	tok, _, err := s.IssueSession(userID, nickname)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// MustIssuePass issues a pass or fails the test.
func MustIssuePass(tb testing.TB, s *Signer, eventID, userID, queueToken string, exp time.Time) string {
	tb.Helper()
	tok, err := s.IssuePass(eventID, userID, queueToken, testNow, exp)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// MustCraft builds a token by hand: any header, any claims, and an
// HMAC-SHA256 signature with key, or no signature when key is nil.
func MustCraft(tb testing.TB, header, claims map[string]any, key []byte) string {
	tb.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(header) + "." + enc(claims)
	if key == nil {
		return signing + "."
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// MustSignJWT signs claims with the library, for algorithms other than HS256.
func MustSignJWT(tb testing.TB, m jwt.SigningMethod, claims jwt.MapClaims, key []byte) string {
	tb.Helper()
	tok, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// MustDecodePart decodes part i (0 header, 1 payload) of a token.
func MustDecodePart(tb testing.TB, token string, i int) map[string]any {
	tb.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		tb.Fatalf("token has %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

// sessionClaimsMap is a valid session payload at testNow, to be bent by cases.
func sessionClaimsMap() map[string]any {
	return map[string]any{
		"typ":  "session",
		"name": "alice",
		"iss":  "rushline",
		"sub":  "u_ALICE",
		"iat":  testNow.Unix(),
		"exp":  testNow.Add(time.Hour).Unix(),
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	return m
}

var hs256 = map[string]any{"alg": "HS256", "typ": "JWT"}

// checkUnauthenticated asserts err is a *queue.Error with
// CodeUnauthenticated whose message contains want.
func checkUnauthenticated(tb testing.TB, err error, want string) {
	tb.Helper()
	var qe *queue.Error
	if !errors.As(err, &qe) {
		tb.Fatalf("err = %v (%T), want *queue.Error", err, err)
	}
	if qe.Code != queue.CodeUnauthenticated {
		tb.Errorf("code = %s, want %s", qe.Code, queue.CodeUnauthenticated)
	}
	if !strings.Contains(qe.Message, want) {
		tb.Errorf("message = %q, want it to contain %q", qe.Message, want)
	}
}

func TestNewSigner(t *testing.T) {
	cases := []struct {
		name         string
		session, svc []byte
		wantErr      string
	}{
		// Two distinct keys.
		{"ok", []byte("a"), []byte("b"), ""},
		// HMAC with an empty key signs for anyone.
		{"empty session secret", nil, []byte("b"), "must be set"},
		// Same for passes.
		{"empty pass key", []byte("a"), []byte{}, "must be set"},
		// Order services hold the pass key and must not mint sessions.
		{"same keys", []byte("same"), []byte("same"), "must differ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSigner(tc.session, tc.svc)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewSignerCopiesKeys(t *testing.T) {
	key := []byte("mutable-session-key")
	s, err := NewSigner(key, testPassKey)
	if err != nil {
		t.Fatal(err)
	}
	tok := MustIssueSession(t, s, "u_A", "a")
	key[0] ^= 0xff
	if _, err := s.ParseSession(tok); err != nil {
		t.Fatalf("the caller's slice changed the signer: %v", err)
	}
}

func TestSessionRoundTrip(t *testing.T) {
	s := MustSigner(t)
	userID := NewUserID()
	tok, exp, err := s.IssueSession(userID, "ålice ☃")
	if err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(DefaultSessionTTL); !exp.Equal(want) || exp.Location() != time.UTC {
		t.Errorf("expiresAt = %v, want %v in UTC", exp, want)
	}
	got, err := s.ParseSession(tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Session{UserID: userID, Nickname: "ålice ☃", ExpiresAt: exp}); got != want {
		t.Errorf("ParseSession = %+v, want %+v", got, want)
	}

	h, c := MustDecodePart(t, tok, 0), MustDecodePart(t, tok, 1)
	if h["alg"] != "HS256" {
		t.Errorf("alg = %v", h["alg"])
	}
	for k, want := range map[string]any{
		"iss": "rushline", "typ": "session", "sub": userID, "name": "ålice ☃",
		"iat": float64(testNow.Unix()), "exp": float64(exp.Unix()),
	} {
		if c[k] != want {
			t.Errorf("claim %s = %v, want %v", k, c[k], want)
		}
	}
}

func TestSessionTTL(t *testing.T) {
	now := testNow.Add(123 * time.Millisecond) // cut to whole seconds in the token
	s := MustSigner(t, WithClock(func() time.Time { return now }), WithSessionTTL(time.Hour))
	tok, exp, err := s.IssueSession("u_A", "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(time.Hour); !exp.Equal(want) {
		t.Errorf("expiresAt = %v, want %v", exp, want)
	}
	now = testNow.Add(time.Hour - time.Second)
	if _, err := s.ParseSession(tok); err != nil {
		t.Errorf("a second before expiry: %v", err)
	}
	now = testNow.Add(time.Hour)
	_, err = s.ParseSession(tok)
	checkUnauthenticated(t, err, "expired")
}

func TestIssueSessionRejects(t *testing.T) {
	s := MustSigner(t)
	cases := []struct {
		name   string
		userID string
	}{
		// Every session names a user.
		{"empty id", ""},
		// An ACTUAL user can never hold a VIRTUAL id.
		{"virtual id", "VIRTUAL:bot-1"},
		// Not even spelled differently.
		{"virtual id lower case", "virtual:bot-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tok, _, err := s.IssueSession(tc.userID, "x"); err == nil {
				t.Fatalf("issued %q", tok)
			}
		})
	}
}

func TestParseSessionRejects(t *testing.T) {
	s := MustSigner(t)
	valid := MustIssueSession(t, s, "u_ALICE", "alice")
	parts := strings.Split(valid, ".")

	cases := []struct {
		name    string
		token   func(tb testing.TB) string
		wantMsg string
	}{
		{
			// The payload swapped for another user's, signature kept.
			name: "tampered payload",
			token: func(tb testing.TB) string {
				p, _ := json.Marshal(with(sessionClaimsMap(), "sub", "u_MALLORY"))
				return parts[0] + "." + base64.RawURLEncoding.EncodeToString(p) + "." + parts[2]
			},
			wantMsg: "invalid signature",
		},
		{
			// One signature character changed (mid-string: the last one
			// partly encodes padding bits).
			name: "tampered signature",
			token: func(tb testing.TB) string {
				sig := []byte(parts[2])
				i := len(sig) / 2
				if sig[i] == 'A' {
					sig[i] = 'B'
				} else {
					sig[i] = 'A'
				}
				return parts[0] + "." + parts[1] + "." + string(sig)
			},
			wantMsg: "invalid signature",
		},
		{
			// Non-canonical base64 in the signature: padding bits set.
			name: "signature with padding bits",
			token: func(tb testing.TB) string {
				sig := []byte(parts[2])
				last := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", sig[len(sig)-1])
				sig[len(sig)-1] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last^1]
				return parts[0] + "." + parts[1] + "." + string(sig)
			},
			wantMsg: "malformed",
		},
		{
			// alg none, unsigned, made by hand.
			name: "alg none",
			token: func(tb testing.TB) string {
				return MustCraft(tb, map[string]any{"alg": "none", "typ": "JWT"}, sessionClaimsMap(), nil)
			},
			wantMsg: "invalid signature",
		},
		{
			// alg "None" with a signature anyway.
			name: "alg None signed",
			token: func(tb testing.TB) string {
				return MustCraft(tb, map[string]any{"alg": "None"}, sessionClaimsMap(), testSessionKey)
			},
			wantMsg: "invalid signature",
		},
		{
			// Right secret, HS512 instead of HS256.
			name: "HS512",
			token: func(tb testing.TB) string {
				return MustSignJWT(tb, jwt.SigningMethodHS512, sessionClaimsMap(), testSessionKey)
			},
			wantMsg: "invalid signature",
		},
		{
			// Key confusion: RS256 in the header, HMAC with the secret underneath.
			name: "RS256 header over HMAC",
			token: func(tb testing.TB) string {
				return MustCraft(tb, map[string]any{"alg": "RS256", "typ": "JWT"}, sessionClaimsMap(), testSessionKey)
			},
			wantMsg: "invalid signature",
		},
		{
			// Well formed, signed with some other secret.
			name: "other secret",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, sessionClaimsMap(), []byte("not-the-secret"))
			},
			wantMsg: "invalid signature",
		},
		{
			// A pass signed with the service key is no session.
			name: "pass as session",
			token: func(tb testing.TB) string {
				return MustIssuePass(tb, s, "ev-1", "u_ALICE", "qt-1", testNow.Add(time.Minute))
			},
			wantMsg: "invalid signature",
		},
		{
			// Pass-shaped claims under the session secret: the typ claim tells.
			name: "pass claims under the session secret",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "typ", "pass", "aud", "ev-1", "jti", "qt-1"), testSessionKey)
			},
			wantMsg: "not a session token",
		},
		{
			// No typ claim at all.
			name: "missing typ",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "typ", nil), testSessionKey)
			},
			wantMsg: "not a session token",
		},
		{
			// Expired by the clock.
			name: "expired",
			token: func(tb testing.TB) string {
				past := MustSigner(tb, WithClock(func() time.Time { return testNow.Add(-DefaultSessionTTL - time.Second) }))
				return MustIssueSession(tb, past, "u_ALICE", "alice")
			},
			wantMsg: "expired",
		},
		{
			// A token that never expires is not accepted.
			name: "no exp",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "exp", nil), testSessionKey)
			},
			wantMsg: "lacks a required claim",
		},
		{
			// Signed with the secret but by someone else.
			name: "wrong issuer",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "iss", "elsewhere"), testSessionKey)
			},
			wantMsg: "not issued by rushline",
		},
		{
			// A session must name its user.
			name: "missing sub",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "sub", nil), testSessionKey)
			},
			wantMsg: "names no user",
		},
		{
			// An ACTUAL user can never hold a VIRTUAL id, even with a valid signature.
			name: "VIRTUAL sub",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "sub", "VIRTUAL:bot-7"), testSessionKey)
			},
			wantMsg: "VIRTUAL",
		},
		{
			// Nor a VIRTUAL id in other case.
			name: "virtual sub lower case",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "sub", "Virtual:bot-7"), testSessionKey)
			},
			wantMsg: "VIRTUAL",
		},
		{
			// A claim of the wrong type.
			name: "numeric sub",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "sub", 42), testSessionKey)
			},
			wantMsg: "malformed",
		},
		{
			// Not a JWT at all.
			name:    "garbage",
			token:   func(testing.TB) string { return "not a token" },
			wantMsg: "malformed",
		},
		{
			// Three parts of nonsense.
			name:    "garbage parts",
			token:   func(testing.TB) string { return "a.b.c" },
			wantMsg: "malformed",
		},
		{
			// Nothing sent.
			name:    "empty",
			token:   func(testing.TB) string { return "" },
			wantMsg: "missing access token",
		},
		{
			// Parsing stops before huge input.
			name:    "too long",
			token:   func(testing.TB) string { return valid + strings.Repeat("A", MaxTokenLen) },
			wantMsg: "too long",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ParseSession(tc.token(t))
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			checkUnauthenticated(t, err, tc.wantMsg)
		})
	}
}

func TestNewUserID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewUserID()
		if !strings.HasPrefix(id, "u_") || len(id) < 22 {
			t.Fatalf("id %q: want u_ and 20+ characters", id)
		}
		if strings.Trim(id[2:], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("id %q is not URL-safe", id)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
	}
}

func TestPassRoundTrip(t *testing.T) {
	s := MustSigner(t)
	exp := testNow.Add(5*time.Minute + 700*time.Millisecond)
	tok := MustIssuePass(t, s, "concert-1", "u_ALICE", "qt-123", exp)
	got, err := s.ParsePass(tok, "concert-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Pass{
		EventID:    "concert-1",
		UserID:     "u_ALICE",
		QueueToken: "qt-123",
		IssuedAt:   testNow,
		ExpiresAt:  testNow.Add(5*time.Minute + time.Second), // rounded up to a whole second
	}
	if got != want {
		t.Errorf("ParsePass = %+v, want %+v", got, want)
	}

	// An order service reads the documented claims; aud is a plain string.
	c := MustDecodePart(t, tok, 1)
	for k, v := range map[string]any{
		"aud": "concert-1", "sub": "u_ALICE", "jti": "qt-123",
		"iat": float64(testNow.Unix()), "exp": float64(want.ExpiresAt.Unix()),
	} {
		if c[k] != v {
			t.Errorf("claim %s = %#v, want %#v", k, c[k], v)
		}
	}

	// Offline check with nothing but the shared key and a stock library.
	parsed, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return testPassKey, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience("concert-1"),
		jwt.WithTimeFunc(func() time.Time { return testNow }))
	if err != nil || !parsed.Valid {
		t.Errorf("stock jwt.Parse: %v", err)
	}
}

func TestIssuePassRejects(t *testing.T) {
	s := MustSigner(t)
	cases := []struct {
		name                   string
		eventID, userID, token string
		exp                    time.Time
	}{
		// Each claim is needed.
		{"no event", "", "u_A", "qt", testNow.Add(time.Minute)},
		{"no user", "ev", "", "qt", testNow.Add(time.Minute)},
		{"no queue token", "ev", "u_A", "", testNow.Add(time.Minute)},
		// A pass that is born expired.
		{"expired", "ev", "u_A", "qt", testNow.Add(-time.Second)},
		// The window ends exactly now.
		{"ends now", "ev", "u_A", "qt", testNow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tok, err := s.IssuePass(tc.eventID, tc.userID, tc.token, testNow, tc.exp); err == nil {
				t.Fatalf("issued %q", tok)
			}
		})
	}
}

// passClaimsMap is a valid pass payload at testNow, to be bent by cases.
func passClaimsMap() map[string]any {
	return map[string]any{
		"iss": "rushline",
		"typ": "pass",
		"aud": "ev-1",
		"sub": "u_ALICE",
		"jti": "qt-1",
		"iat": testNow.Unix(),
		"exp": testNow.Add(time.Minute).Unix(),
	}
}

func TestParsePassRejects(t *testing.T) {
	s := MustSigner(t)
	valid := MustIssuePass(t, s, "ev-1", "u_ALICE", "qt-1", testNow.Add(time.Minute))
	parts := strings.Split(valid, ".")
	cases := []struct {
		name    string
		token   func(tb testing.TB) string
		eventID string
		wantMsg string
	}{
		{
			// The payload swapped for another user's, signature kept.
			name: "tampered payload",
			token: func(tb testing.TB) string {
				p, _ := json.Marshal(with(passClaimsMap(), "sub", "u_MALLORY"))
				return parts[0] + "." + base64.RawURLEncoding.EncodeToString(p) + "." + parts[2]
			},
			wantMsg: "invalid signature",
		},
		{
			// A later exp, signature kept.
			name: "tampered expiry",
			token: func(tb testing.TB) string {
				p, _ := json.Marshal(with(passClaimsMap(), "exp", testNow.Add(time.Hour).Unix()))
				return parts[0] + "." + base64.RawURLEncoding.EncodeToString(p) + "." + parts[2]
			},
			wantMsg: "invalid signature",
		},
		{
			// One signature character changed.
			name: "tampered signature",
			token: func(tb testing.TB) string {
				sig := []byte(parts[2])
				sig[len(sig)/2] ^= 1
				return parts[0] + "." + parts[1] + "." + string(sig)
			},
			wantMsg: "invalid signature",
		},
		{
			// The header says none; the payload and signature are the real ones.
			name: "header swapped to alg none",
			token: func(tb testing.TB) string {
				h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
				return h + "." + parts[1] + "." + parts[2]
			},
			wantMsg: "invalid signature",
		},
		{
			// A line break in the signature: Go's base64 would skip it, so
			// the same pass would have a second spelling.
			name: "line break in signature",
			token: func(tb testing.TB) string {
				return parts[0] + "." + parts[1] + "." + parts[2][:10] + "\r\n" + parts[2][10:]
			},
			wantMsg: "malformed",
		},
		{
			// The signature stripped.
			name: "no signature",
			token: func(tb testing.TB) string {
				return parts[0] + "." + parts[1] + "."
			},
			wantMsg: "invalid signature",
		},
		{
			// A pass for one event does not open another.
			name: "wrong aud",
			token: func(tb testing.TB) string {
				return MustIssuePass(tb, s, "ev-2", "u_ALICE", "qt-1", testNow.Add(time.Minute))
			},
			wantMsg: "another event",
		},
		{
			// aud as an array is not what rushline issues.
			name: "aud array",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(passClaimsMap(), "aud", []string{"ev-1"}), testPassKey)
			},
			wantMsg: "malformed",
		},
		{
			// Expired by the clock.
			name: "expired",
			token: func(tb testing.TB) string {
				past := MustSigner(tb, WithClock(func() time.Time { return testNow.Add(-time.Hour) }))
				return MustIssuePass(tb, past, "ev-1", "u_ALICE", "qt-1", testNow.Add(-time.Second))
			},
			wantMsg: "expired",
		},
		{
			// A session token is no pass: other key.
			name: "session token as pass",
			token: func(tb testing.TB) string {
				return MustIssueSession(tb, s, "u_ALICE", "alice")
			},
			wantMsg: "invalid signature",
		},
		{
			// Session claims under the pass key: the typ claim tells.
			name: "session claims under the pass key",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(sessionClaimsMap(), "aud", "ev-1", "jti", "qt-1"), testPassKey)
			},
			wantMsg: "not a pass",
		},
		{
			// Forged with another key.
			name: "other key",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, passClaimsMap(), []byte("forger"))
			},
			wantMsg: "invalid signature",
		},
		{
			// Forged with the session secret.
			name: "session secret",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, passClaimsMap(), testSessionKey)
			},
			wantMsg: "invalid signature",
		},
		{
			// alg none made by hand.
			name: "alg none",
			token: func(tb testing.TB) string {
				return MustCraft(tb, map[string]any{"alg": "none"}, passClaimsMap(), nil)
			},
			wantMsg: "invalid signature",
		},
		{
			// Right key, HS384.
			name: "HS384",
			token: func(tb testing.TB) string {
				return MustSignJWT(tb, jwt.SigningMethodHS384, passClaimsMap(), testPassKey)
			},
			wantMsg: "invalid signature",
		},
		{
			// The queue token is the point of a pass.
			name: "missing jti",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(passClaimsMap(), "jti", nil), testPassKey)
			},
			wantMsg: "lacks a required claim",
		},
		{
			// So is the user.
			name: "missing sub",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(passClaimsMap(), "sub", nil), testPassKey)
			},
			wantMsg: "lacks a required claim",
		},
		{
			// A pass without exp would live forever.
			name: "missing exp",
			token: func(tb testing.TB) string {
				return MustCraft(tb, hs256, with(passClaimsMap(), "exp", nil), testPassKey)
			},
			wantMsg: "lacks a required claim",
		},
		{
			// Nothing to check against.
			name: "no event id",
			token: func(tb testing.TB) string {
				return MustIssuePass(tb, s, "ev-1", "u_ALICE", "qt-1", testNow.Add(time.Minute))
			},
			eventID: "-",
			wantMsg: "no event",
		},
		{
			// Not a JWT.
			name:    "garbage",
			token:   func(testing.TB) string { return "%%%" },
			wantMsg: "malformed",
		},
		{
			// Nothing sent.
			name:    "empty",
			token:   func(testing.TB) string { return "" },
			wantMsg: "missing pass",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := "ev-1"
			if tc.eventID == "-" {
				ev = ""
			}
			got, err := s.ParsePass(tc.token(t), ev)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			checkUnauthenticated(t, err, tc.wantMsg)
		})
	}
}

func TestSignerConcurrent(t *testing.T) {
	s := MustSigner(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				id := NewUserID()
				tok := MustIssueSession(t, s, id, "n")
				if got, err := s.ParseSession(tok); err != nil || got.UserID != id {
					t.Errorf("ParseSession = %+v, %v", got, err)
					return
				}
				pass := MustIssuePass(t, s, "ev", id, "qt", testNow.Add(time.Minute))
				if got, err := s.ParsePass(pass, "ev"); err != nil || got.UserID != id {
					t.Errorf("ParsePass = %+v, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkIssuePass(b *testing.B) {
	s := MustSigner(b)
	exp := testNow.Add(5 * time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.IssuePass("concert-1", "u_ALICE", "0b9f3c1e-6f1f-4a43-9d4e-2f3b5c6d7e8f", testNow, exp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSession: path=fast is ParseSession on an issued token,
// path=library the jwt library path it falls back to.
func BenchmarkParseSession(b *testing.B) {
	s := MustSigner(b)
	tok := MustIssueSession(b, s, NewUserID(), "alice")
	for _, bc := range []struct {
		name  string
		parse func(string) (Session, error)
	}{{"path=fast", s.ParseSession}, {"path=library", s.librarySession}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.parse(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParsePass(b *testing.B) {
	s := MustSigner(b)
	tok := MustIssuePass(b, s, "concert-1", "u_ALICE", "0b9f3c1e-6f1f-4a43-9d4e-2f3b5c6d7e8f", testNow.Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ParsePass(tok, "concert-1"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEqual(b *testing.B) {
	key := NewKey(newKey())
	presented := newKey()
	for b.Loop() {
		Equal(presented, key)
	}
}

func TestPassInLastPartialSecond(t *testing.T) {
	s := MustSigner(t)
	// Half a second of the active window is left: the pass rounds up to the next whole second.
	tok, err := s.IssuePass("ev", "u_A", "qt", testNow, testNow.Add(500*time.Millisecond))
	if err != nil {
		t.Fatalf("IssuePass with 500ms left: %v", err)
	}
	p, err := s.ParsePass(tok, "ev")
	if err != nil || !p.ExpiresAt.Equal(testNow.Add(time.Second)) {
		t.Fatalf("ParsePass = %+v, %v; want expiry %v", p, err, testNow.Add(time.Second))
	}
}

func TestPassIsDeterministic(t *testing.T) {
	s := MustSigner(t)
	admitted, exp := testNow.Add(-10*time.Second), testNow.Add(time.Minute)
	a, errA := s.IssuePass("ev", "u_A", "qt", admitted, exp)
	b, errB := s.IssuePass("ev", "u_A", "qt", admitted, exp)
	if errA != nil || errB != nil || a != b {
		t.Fatalf("two passes for one admission differ: %v %v", errA, errB)
	}
	p, err := s.ParsePass(a, "ev")
	if err != nil || !p.IssuedAt.Equal(admitted) {
		t.Fatalf("iat = %v (%v), want the admission time %v", p.IssuedAt, err, admitted)
	}
}

// TestFastSessionTakesIssuedTokens: the sessions rushline issues, and ones a
// client signs with the library in another key order, take the fast path
// and read as the library reads them.
func TestFastSessionTakesIssuedTokens(t *testing.T) {
	s := MustSigner(t)
	device, _, err := s.IssueDeviceSession("u_ALICE", "alice", "dev-1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		token string
	}{
		{"session", MustIssueSession(t, s, NewUserID(), "alice")},
		{"device session", device},
		{"no nickname", MustIssueSession(t, s, "u_ALICE", "")},
		{"accented nickname", MustIssueSession(t, s, "u_ALICE", "Zoë Ünal")},
		{"library map claims", MustSignJWT(t, jwt.SigningMethodHS256, jwt.MapClaims(sessionClaimsMap()), testSessionKey)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fast, ok := s.fastSession(tc.token)
			if !ok {
				t.Fatalf("fast path declined %q", tc.token)
			}
			lib, err := s.librarySession(tc.token)
			if err != nil || !reflect.DeepEqual(fast, lib) {
				t.Fatalf("fast path read %+v; the library %+v, %v", fast, lib, err)
			}
		})
	}
}
