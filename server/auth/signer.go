package auth

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

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
	Type string `json:"typ"`
	Name string `json:"name"`
	jwt.RegisteredClaims
}

// IssueSession signs a session token for an ACTUAL user.
func (s *Signer) IssueSession(userID, nickname string) (token string, expiresAt time.Time, err error) {
	if userID == "" {
		return "", time.Time{}, errors.New("auth: issue session: empty user id")
	}
	if isVirtual(userID) {
		return "", time.Time{}, fmt.Errorf("auth: issue session: %q is a VIRTUAL id", userID)
	}
	now := s.now()
	exp := jwt.NewNumericDate(now.Add(s.sessionTTL))
	claims := sessionClaims{
		Type: typeSession,
		Name: nickname,
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
	return Session{UserID: c.Subject, Nickname: c.Name, ExpiresAt: c.ExpiresAt.UTC()}, nil
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
	}
	return nil
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
