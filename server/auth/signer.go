package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rushline/rushline/server/queue"
)

const (
	// Issuer is the iss claim of every token rushline signs.
	Issuer = "rushline"
	// DefaultSessionTTL is how long a session token lives.
	DefaultSessionTTL = 24 * time.Hour
	// MaxTokenLen bounds the tokens the parsers look at; real ones are a few
	// hundred bytes.
	MaxTokenLen = 4096

	typeSession   = "session"
	typePass      = "pass"
	virtualPrefix = "VIRTUAL:"
)

var validMethods = []string{jwt.SigningMethodHS256.Alg()}

// Session is what a valid session token says about an ACTUAL user.
type Session struct {
	UserID    string
	Nickname  string
	ExpiresAt time.Time
	// Device is the device id the session was issued on, if any.
	Device string
}

// Pass is what a valid pass says: the holder of queue token QueueToken, user
// UserID, may order for event EventID until ExpiresAt.
type Pass struct {
	EventID    string
	UserID     string
	QueueToken string
	IssuedAt   time.Time
	ExpiresAt  time.Time
}

// Signer issues and checks session tokens (signed with the JWT secret) and
// passes (signed with the service key, so order services can check them
// offline). It is safe for concurrent use.
type Signer struct {
	sessionKey []byte
	passKey    []byte
	now        func() time.Time
	sessionTTL time.Duration

	sessionParser *jwt.Parser
	passParser    *jwt.Parser
	// sessionMACs pools *sessionCheck states keyed with sessionKey.
	sessionMACs sync.Pool
}

// Option configures a Signer.
type Option func(*Signer)

// WithClock sets the clock used for iat, exp and expiry checks.
func WithClock(now func() time.Time) Option {
	return func(s *Signer) {
		if now != nil {
			s.now = now
		}
	}
}

// WithSessionTTL sets the session lifetime; d ≤ 0 keeps DefaultSessionTTL.
func WithSessionTTL(d time.Duration) Option {
	return func(s *Signer) {
		if d > 0 {
			s.sessionTTL = d
		}
	}
}

// NewSigner makes a Signer. The two keys must be set and differ: order
// services hold passKey, and with it they must not be able to mint sessions.
func NewSigner(sessionSecret, passKey []byte, opts ...Option) (*Signer, error) {
	if len(sessionSecret) == 0 || len(passKey) == 0 {
		return nil, errors.New("auth: the session secret and the pass key must be set")
	}
	if bytes.Equal(sessionSecret, passKey) {
		return nil, errors.New("auth: the session secret and the pass (service) key must differ")
	}
	s := &Signer{
		sessionKey: bytes.Clone(sessionSecret),
		passKey:    bytes.Clone(passKey),
		now:        time.Now,
		sessionTTL: DefaultSessionTTL,
	}
	for _, o := range opts {
		o(s)
	}
	common := []jwt.ParserOption{
		jwt.WithValidMethods(validMethods),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(s.now),
	}
	s.sessionParser = jwt.NewParser(common...)
	s.passParser = jwt.NewParser(common...)
	s.sessionMACs.New = func() any { return &sessionCheck{mac: hmac.New(sha256.New, s.sessionKey)} }
	return s, nil
}

// NewUserID returns a fresh ACTUAL user id: "u_" and 26 base32 characters
// (128 random bits).
func NewUserID() string {
	return "u_" + rand.Text()
}

// isVirtual is deliberately case-insensitive: an ACTUAL user must not get
// anything that could be read as a VIRTUAL id.
func isVirtual(id string) bool {
	return len(id) >= len(virtualPrefix) && strings.EqualFold(id[:len(virtualPrefix)], virtualPrefix)
}

// sessionClaims is the payload of a session token.
type sessionClaims struct {
	Type   string `json:"typ"`
	Name   string `json:"name"`
	Device string `json:"dev,omitempty"`
	jwt.RegisteredClaims
}

// IssueSession signs a session token for an ACTUAL user.
func (s *Signer) IssueSession(userID, nickname string) (token string, expiresAt time.Time, err error) {
	return s.IssueDeviceSession(userID, nickname, "")
}

// IssueDeviceSession is IssueSession with the device id the session is
// issued on as a claim (dev), for device binding.
func (s *Signer) IssueDeviceSession(userID, nickname, device string) (token string, expiresAt time.Time, err error) {
	if userID == "" {
		return "", time.Time{}, errors.New("auth: issue session: empty user id")
	}
	if isVirtual(userID) {
		return "", time.Time{}, fmt.Errorf("auth: issue session: %q is a VIRTUAL id", userID)
	}
	now := s.now()
	exp := jwt.NewNumericDate(now.Add(s.sessionTTL))
	claims := sessionClaims{
		Type:   typeSession,
		Name:   nickname,
		Device: device,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   userID,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: exp,
		},
	}
	token, err = jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.sessionKey)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: issue session: %w", err)
	}
	return token, exp.UTC(), nil
}

// ParseSession checks a session token. Every failure is a *queue.Error with
// CodeUnauthenticated.
func (s *Signer) ParseSession(token string) (Session, error) {
	const what = "access token"
	if err := precheck(what, token); err != nil {
		return Session{}, err
	}
	if ses, ok := s.fastSession(token); ok {
		return ses, nil
	}
	return s.librarySession(token)
}

// librarySession is ParseSession through the jwt library, after precheck.
func (s *Signer) librarySession(token string) (Session, error) {
	const what = "access token"
	var c sessionClaims
	if _, err := s.sessionParser.ParseWithClaims(token, &c, keyFunc(s.sessionKey)); err != nil {
		return Session{}, tokenError(what, err)
	}
	switch {
	case c.Type != typeSession:
		return Session{}, unauthenticated("the access token is not a session token")
	case c.Subject == "":
		return Session{}, unauthenticated("the access token names no user")
	case isVirtual(c.Subject):
		return Session{}, unauthenticated("the access token names a VIRTUAL user")
	}
	return Session{UserID: c.Subject, Nickname: c.Name, ExpiresAt: c.ExpiresAt.UTC(), Device: c.Device}, nil
}

// sessionCheck is the scratch state of one fastSession call.
type sessionCheck struct {
	mac  hash.Hash
	tok  []byte
	sig  []byte
	body []byte
}

// fastSession accepts token exactly when the jwt library path would, for
// the tokens rushline issues: the canonical HS256 header, a valid signature
// and a flat payload of the session claims (typ, name, dev, iss, sub, exp,
// iat) with plain strings and integer times. It reports false for anything
// else, valid or not, and ParseSession then asks the library, which also
// words every rejection.
func (s *Signer) fastSession(token string) (Session, bool) {
	head, rest, _ := strings.Cut(token, ".")
	payload, sig, ok := strings.Cut(rest, ".")
	// passHeader is also the header the library writes for HS256 sessions.
	if !ok || head != passHeader || len(sig) != sessionSigLen || strings.IndexByte(sig, '.') >= 0 {
		return Session{}, false
	}
	c := s.sessionMACs.Get().(*sessionCheck)
	defer s.sessionMACs.Put(c)
	c.tok = append(c.tok[:0], token...)
	signed := c.tok[:len(head)+1+len(payload)]
	c.mac.Reset()
	c.mac.Write(signed)
	c.sig = base64.RawURLEncoding.AppendEncode(c.sig[:0], c.mac.Sum(c.body[:0]))
	if subtle.ConstantTimeCompare(c.sig, c.tok[len(signed)+1:]) != 1 {
		return Session{}, false
	}
	body, err := base64.RawURLEncoding.Strict().AppendDecode(c.body[:0], signed[len(head)+1:])
	if err != nil {
		return Session{}, false
	}
	c.body = body
	cl, ok := scanSessionClaims(body)
	if !ok || cl.typ != typeSession || cl.iss != Issuer || !cl.hasExp || cl.sub == "" || isVirtual(cl.sub) {
		return Session{}, false
	}
	exp := time.Unix(cl.exp, 0)
	if !s.now().Before(exp) {
		return Session{}, false
	}
	return Session{UserID: cl.sub, Nickname: cl.name, ExpiresAt: exp.UTC(), Device: cl.dev}, true
}

// sessionSigLen is the length of an encoded HMAC-SHA256.
var sessionSigLen = base64.RawURLEncoding.EncodedLen(sha256.Size)

// fastClaims are the session claims scanSessionClaims read.
type fastClaims struct {
	typ, name, dev, iss, sub string
	exp                      int64
	hasExp                   bool
}

// scanSessionClaims reads a JSON object of the session claims, each at most
// once, without whitespace; strings without escapes or control characters
// and valid UTF-8; exp and iat integers of at most 15 digits (exact as
// float64, which the library reads them as). Anything else is not ok.
func scanSessionClaims(b []byte) (fastClaims, bool) {
	var c fastClaims
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return c, false
	}
	b = b[1 : len(b)-1]
	var seen [7]bool
	for first := true; len(b) > 0 || first; first = false {
		if !first {
			if b[0] != ',' {
				return c, false
			}
			b = b[1:]
		}
		key, rest, ok := scanString(b)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return c, false
		}
		b = rest[1:]
		var slot int
		var dst *string
		switch string(key) {
		case "typ":
			slot, dst = 0, &c.typ
		case "name":
			slot, dst = 1, &c.name
		case "dev":
			slot, dst = 2, &c.dev
		case "iss":
			slot, dst = 3, &c.iss
		case "sub":
			slot, dst = 4, &c.sub
		case "exp":
			slot = 5
		case "iat":
			slot = 6
		default:
			return c, false
		}
		if seen[slot] {
			return c, false
		}
		seen[slot] = true
		if dst != nil {
			v, rest, ok := scanString(b)
			if !ok {
				return c, false
			}
			*dst, b = string(v), rest
			continue
		}
		n, rest, ok := scanInt(b)
		if !ok {
			return c, false
		}
		if slot == 5 {
			c.exp, c.hasExp = n, true
		}
		b = rest
	}
	return c, true
}

// scanString reads a JSON string at the start of b that has no escapes, no
// control characters and is valid UTF-8, and returns its contents and the
// rest of b.
func scanString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			s = b[1:i]
			return s, b[i+1:], utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// scanInt reads a JSON integer of 1 to 15 digits, without sign, fraction or
// exponent, at the start of b and returns it and the rest of b.
func scanInt(b []byte) (n int64, rest []byte, ok bool) {
	i := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 || i > 15 || b[0] == '0' && i > 1 {
		return 0, nil, false
	}
	if i < len(b) && b[i] != ',' {
		return 0, nil, false
	}
	return n, b[i:], true
}

// passClaims is the payload of a pass. aud is a plain string, not the
// one-element array jwt.RegisteredClaims would write, so order services
// reading it by hand find the event id as is.
type passClaims struct {
	Issuer    string           `json:"iss"`
	Type      string           `json:"typ"`
	Audience  string           `json:"aud"`
	Subject   string           `json:"sub"`
	ID        string           `json:"jti"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
	ExpiresAt *jwt.NumericDate `json:"exp"`
}

var _ jwt.Claims = (*passClaims)(nil)

func (c *passClaims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt, nil }
func (c *passClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt, nil }
func (c *passClaims) GetNotBefore() (*jwt.NumericDate, error)      { return nil, nil }
func (c *passClaims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *passClaims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *passClaims) GetAudience() (jwt.ClaimStrings, error) {
	if c.Audience == "" {
		return nil, nil
	}
	return jwt.ClaimStrings{c.Audience}, nil
}

// IssuePass signs a pass for the active queue token queueToken, issued at
// admittedAt and valid until expiresAt rounded up to a whole second (JWT's
// precision), so every instant of an active window has a pass. Equal inputs
// give the identical pass, so a reconnecting client gets the same one. Order
// services wanting the exact end call verify.
func (s *Signer) IssuePass(eventID, userID, queueToken string, admittedAt, expiresAt time.Time) (string, error) {
	if eventID == "" || userID == "" || queueToken == "" {
		return "", errors.New("auth: issue pass: event id, user id and queue token must be set")
	}
	now := s.now()
	// JWT times are whole seconds: round the window's end up, so a pass exists
	// for every instant the token is active. The live verify stays exact.
	secs := expiresAt.Unix()
	if expiresAt.Nanosecond() > 0 {
		secs++
	}
	if !expiresAt.After(now) {
		return "", fmt.Errorf("auth: issue pass: expiry %s is not after now", expiresAt.UTC().Format(time.RFC3339))
	}
	return signPass(s.passKey, eventID, userID, queueToken, admittedAt.Unix(), secs), nil
}

// ParsePass checks a pass for eventID: algorithm, signature, issuer, type,
// expiry and audience. Every failure is a *queue.Error with
// CodeUnauthenticated.
func (s *Signer) ParsePass(token, eventID string) (Pass, error) {
	const what = "pass"
	if eventID == "" {
		return Pass{}, unauthenticated("no event to check the pass against")
	}
	if err := precheck(what, token); err != nil {
		return Pass{}, err
	}
	var c passClaims
	if _, err := s.passParser.ParseWithClaims(token, &c, keyFunc(s.passKey)); err != nil {
		return Pass{}, tokenError(what, err)
	}
	switch {
	case c.Type != typePass:
		return Pass{}, unauthenticated("the token is not a pass")
	case c.Audience != eventID:
		return Pass{}, unauthenticated("the pass is for another event")
	case c.Subject == "" || c.ID == "" || c.IssuedAt == nil:
		return Pass{}, unauthenticated("the pass lacks a required claim")
	}
	return Pass{
		EventID:    c.Audience,
		UserID:     c.Subject,
		QueueToken: c.ID,
		IssuedAt:   c.IssuedAt.UTC(),
		ExpiresAt:  c.ExpiresAt.UTC(),
	}, nil
}

// keyFunc hands out key only for HS256; WithValidMethods checks the alg
// name too, this also pins the implementation.
func keyFunc(key []byte) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		if t.Method != jwt.SigningMethodHS256 {
			return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
		}
		return key, nil
	}
}

func precheck(what, token string) error {
	switch {
	case token == "":
		return unauthenticated("missing " + what)
	case len(token) > MaxTokenLen:
		return unauthenticated("the " + what + " is too long")
	case !compactJWS(token):
		return unauthenticated("the " + what + " is malformed")
	}
	return nil
}

// compactJWS reports whether token holds only base64url characters and
// dots. Go's base64 decoders skip \r and \n, so without this a signed token
// with line breaks inserted would be accepted as a second spelling of itself.
func compactJWS(token string) bool {
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func unauthenticated(msg string) *queue.Error {
	return &queue.Error{Code: queue.CodeUnauthenticated, Message: msg}
}

// tokenError turns a jwt failure into a client-facing message; the cause
// stays in Err for logs.
func tokenError(what string, err error) *queue.Error {
	var msg string
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		msg = "the " + what + " is malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		msg = "the " + what + " has an invalid signature"
	case errors.Is(err, jwt.ErrTokenExpired):
		msg = "the " + what + " has expired"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		msg = "the " + what + " was not issued by rushline"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		msg = "the " + what + " lacks a required claim"
	default:
		msg = "the " + what + " is invalid"
	}
	return &queue.Error{Code: queue.CodeUnauthenticated, Message: msg, Err: err}
}
