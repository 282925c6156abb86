package queue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"slices"
	"strings"
	"sync"
)

// tokenMACLen is how many bytes of HMAC-SHA256 a token carries (96 bits).
const tokenMACLen = 12

// tokenCodec mints and opens queue tokens. A token is the signed pair
// (seq, user id) of one attempt, so Redis stores nothing per token: the
// attempt's state is found from the user's place in the waiting or active set.
// Safe for concurrent use.
type tokenCodec struct {
	// macs recycles keyed HMACs: Reset is far cheaper than hmac.New.
	macs *sync.Pool
}

func newTokenCodec(key []byte) tokenCodec {
	key = slices.Clone(key)
	return tokenCodec{macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

var b64 = base64.RawURLEncoding

func (c tokenCodec) mac(eventID string, payload []byte) []byte {
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(eventID))
	m.Write([]byte{0})
	m.Write(payload)
	sum := m.Sum(make([]byte, 0, sha256.Size))[:tokenMACLen]
	c.macs.Put(m)
	return sum
}

// Mint returns the token of attempt seq by userID in eventID.
func (c tokenCodec) Mint(eventID string, seq int64, userID string) string {
	payload := binary.AppendUvarint(make([]byte, 0, 10+len(userID)), uint64(seq))
	payload = append(payload, userID...)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(c.mac(eventID, payload))
}

// Open checks a token's signature for eventID and returns its attempt.
func (c tokenCodec) Open(eventID, token string) (seq int64, userID string, ok bool) {
	p, s, found := strings.Cut(token, ".")
	if !found || len(token) > 512 {
		return 0, "", false
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return 0, "", false
	}
	sig, err := b64.DecodeString(s)
	if err != nil || !hmac.Equal(sig, c.mac(eventID, payload)) {
		return 0, "", false
	}
	u, n := binary.Uvarint(payload)
	if n <= 0 || u == 0 || u > 1<<53 || n == len(payload) {
		return 0, "", false
	}
	return int64(u), string(payload[n:]), true
}
