package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// passHeader is the encoded JOSE header of every pass.
var passHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// signPass encodes and signs a pass directly: passes are signed once per
// admission, in bursts of a whole tick, so this path avoids a general JWT
// library's reflection and allocations. ParsePass reads it with that library.
func signPass(key []byte, aud, sub, jti string, iat, exp int64) string {
	claims := make([]byte, 0, 96+len(aud)+len(sub)+len(jti))
	claims = append(claims, `{"iss":`...)
	claims = appendJSONString(claims, Issuer)
	claims = append(claims, `,"typ":`...)
	claims = appendJSONString(claims, typePass)
	claims = append(claims, `,"aud":`...)
	claims = appendJSONString(claims, aud)
	claims = append(claims, `,"sub":`...)
	claims = appendJSONString(claims, sub)
	claims = append(claims, `,"jti":`...)
	claims = appendJSONString(claims, jti)
	claims = append(claims, `,"iat":`...)
	claims = strconv.AppendInt(claims, iat, 10)
	claims = append(claims, `,"exp":`...)
	claims = strconv.AppendInt(claims, exp, 10)
	claims = append(claims, '}')

	enc := base64.RawURLEncoding
	out := make([]byte, 0, len(passHeader)+1+enc.EncodedLen(len(claims))+1+enc.EncodedLen(sha256.Size))
	out = append(out, passHeader...)
	out = append(out, '.')
	out = enc.AppendEncode(out, claims)
	m := hmac.New(sha256.New, key)
	m.Write(out)
	out = append(out, '.')
	out = enc.AppendEncode(out, m.Sum(nil))
	return string(out)
}

// appendJSONString appends s as a JSON string, escaping what JSON requires.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	return append(b, '"')
}
