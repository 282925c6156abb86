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
	// macs recycles keyed HMACs (Reset is far cheaper than hmac.New), each
	// with a buffer for what it signs.
	macs *sync.Pool
}

// macState is a keyed HMAC, its input buffer and room for its sum.
type macState struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

func newTokenCodec(key []byte) tokenCodec {
	key = slices.Clone(key)
	return tokenCodec{macs: &sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, key)} }}}
}

// b64 writes tokens and challenges and reads them strictly: a token has one
// spelling, so unused low bits in its last character do not make another.
var b64 = base64.RawURLEncoding.Strict()

// mac appends the first tokenMACLen bytes of the token MAC of payload in
// eventID to dst.
func (c tokenCodec) mac(dst []byte, eventID string, payload []byte) []byte {
	m := c.macs.Get().(*macState)
	m.h.Reset()
	m.buf = append(append(append(m.buf[:0], eventID...), 0), payload...)
	m.h.Write(m.buf)
	dst = append(dst, m.h.Sum(m.sum[:0])[:tokenMACLen]...)
	c.macs.Put(m)
	return dst
}

// Mint returns the token of attempt seq by userID in eventID: the payload
// and the MAC, each base64url, joined by a dot. They are built in one buffer,
// on the stack unless the user id is long, so the token string is the one
// allocation.
func (c tokenCodec) Mint(eventID string, seq int64, userID string) string {
	// Room for the raw payload and MAC, then their encoding after them.
	var room [mintRoom]byte
	buf := room[:0]
	if n := 3*(binary.MaxVarintLen64+len(userID)) + 2*tokenMACLen + 8; n > mintRoom {
		buf = make([]byte, 0, n)
	}
	buf = binary.AppendUvarint(buf, uint64(seq))
	buf = append(buf, userID...)
	buf = c.mac(buf, eventID, buf)
	payload, sig := buf[:len(buf)-tokenMACLen], buf[len(buf)-tokenMACLen:]
	var b strings.Builder
	b.Grow(b64.EncodedLen(len(payload)) + 1 + b64.EncodedLen(tokenMACLen))
	enc := b64.AppendEncode(buf[len(buf):], payload)
	enc = append(enc, '.')
	enc = b64.AppendEncode(enc, sig)
	b.Write(enc)
	return b.String()
}

// mintRoom is the stack buffer Mint builds a token in: user ids of up to
// 64 bytes fit.
const mintRoom = 256

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
	var mac [tokenMACLen]byte
	if err != nil || !hmac.Equal(sig, c.mac(mac[:0], eventID, payload)) {
		return 0, "", false
	}
	u, n := binary.Uvarint(payload)
	if n <= 0 || u == 0 || u > 1<<53 || n == len(payload) {
		return 0, "", false
	}
	return int64(u), string(payload[n:]), true
}
