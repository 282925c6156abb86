package queue

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"

	"github.com/rushline/rushline/internal/fair"
)

// ChallengeTTL is how long an issued proof-of-work challenge may be used.
const ChallengeTTL = 2 * time.Minute

// ChallengeTicket is an issued proof-of-work challenge: a stateless token
// signed for its event, holding its bits, expiry and a nonce, so issuing one
// writes nothing; a solution spends it (single use).
type ChallengeTicket struct {
	Challenge string    `json:"challenge"`
	Bits      int       `json:"bits"`
	ExpiresAt time.Time `json:"expires_at"`
}

// challengeLen is the payload's size: expiry ms (8 bytes), bits, nonce (8 bytes).
const challengeLen = 17

// challengeDomain sets challenge signatures apart from queue tokens': no
// event id holds a "/".
func challengeDomain(eventID string) string { return eventID + "/challenge" }

// IssueChallenge returns a fresh challenge of bits for eventID, signed with
// the engine's token key (every replica checks it alike).
func (e *Engine) IssueChallenge(eventID string, bitCount int) ChallengeTicket {
	exp := e.now().Add(ChallengeTTL).Truncate(time.Millisecond).UTC()
	p := make([]byte, challengeLen)
	binary.BigEndian.PutUint64(p, uint64(exp.UnixMilli()))
	p[8] = byte(bitCount)
	_, _ = rand.Read(p[9:])
	c := b64.EncodeToString(p) + "." + b64.EncodeToString(e.tokens.mac(nil, challengeDomain(eventID), p))
	return ChallengeTicket{Challenge: c, Bits: bitCount, ExpiresAt: exp}
}

// CheckChallenge checks a join's solution to a challenge of eventID: signed
// for the event, not expired, SHA-256(challenge + solution) starting with the
// challenge's bits of zeros, and not used before, which it records until the
// challenge expires. Anything else is CodeChallengeFailed.
func (e *Engine) CheckChallenge(ctx context.Context, eventID, challenge, solution string) error {
	p, s, ok := strings.Cut(challenge, ".")
	payload, err := b64.DecodeString(p)
	if !ok || err != nil || len(payload) != challengeLen || len(solution) > 64 {
		return Errorf(CodeChallengeFailed, "the challenge is not one this server issued for event %q", eventID)
	}
	sig, err := b64.DecodeString(s)
	if err != nil || !hmac.Equal(sig, e.tokens.mac(nil, challengeDomain(eventID), payload)) {
		return Errorf(CodeChallengeFailed, "the challenge is not one this server issued for event %q", eventID)
	}
	exp := time.UnixMilli(int64(binary.BigEndian.Uint64(payload)))
	if !e.now().Before(exp) {
		return Errorf(CodeChallengeFailed, "the challenge expired at %s; fetch a new one", exp.UTC().Format(time.RFC3339))
	}
	if !fair.PowSolves(challenge, solution, int(payload[8])) {
		return Errorf(CodeChallengeFailed, "the solution does not give %d leading zero bits", payload[8])
	}
	spent, err := e.rdb.SetNX(ctx, keyOpen+eventID+keyClose+"ch:"+hex.EncodeToString(payload[9:]), 1,
		exp.Sub(e.now())+time.Second).Result()
	if err != nil {
		return storeErr(ctx, err)
	}
	if !spent {
		return Errorf(CodeChallengeFailed, "the challenge was used already; fetch a new one")
	}
	return nil
}
