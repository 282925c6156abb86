package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// Every string the API takes is text: valid UTF-8 without control
// characters. Anything else is refused at the edge with 400, naming the
// field, before it reaches Redis or SQL (PostgreSQL refuses a NUL, which
// would otherwise come back as a 503). encoding/json would quietly turn
// invalid UTF-8 and lone surrogates into U+FFFD, so the raw body is checked.

// validText reports whether s is valid UTF-8 without control characters.
func validText(s string) bool {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if (r == utf8.RuneError && n == 1) || unicode.IsControl(r) {
			return false
		}
		s = s[n:]
	}
	return true
}

// textError is the 400 for a field that is not text.
func textError(field string) error {
	return badRequest("%s must be text: valid UTF-8 without NUL or other control characters", field)
}

// plainJSON reports whether b needs no closer look: ASCII without escapes
// or DEL, so every string in it is text (JSON has no raw control bytes).
func plainJSON(b []byte) bool {
	for _, c := range b {
		if c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// checkText finds the first string value of the JSON document b that is not
// text and returns the 400 naming its field. b must be valid JSON.
func checkText(b []byte) error {
	if plainJSON(b) {
		return nil
	}
	type frame struct {
		object  bool
		key     string
		index   int
		wantKey bool
	}
	var stack []frame
	done := func() { // a value ended: the enclosing frame moves on
		if n := len(stack); n > 0 {
			if f := &stack[n-1]; f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end; decode has already refused malformed JSON
		}
		raw := b[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			if !textLiteral(raw[bytes.IndexByte(raw, '"'):]) {
				var path strings.Builder
				for _, f := range stack {
					if f.object {
						if path.Len() > 0 {
							path.WriteByte('.')
						}
						path.WriteString(f.key)
					} else {
						path.WriteString("[" + strconv.Itoa(f.index) + "]")
					}
				}
				return textError("field " + path.String())
			}
			done()
		default:
			done()
		}
	}
}

// textLiteral reports whether the JSON string literal lit (quotes included)
// holds text: its raw bytes valid UTF-8, its escapes no control character
// and no surrogate without its pair.
func textLiteral(lit []byte) bool {
	s := lit[1 : len(lit)-1]
	for len(s) > 0 {
		if s[0] != '\\' {
			r, n := utf8.DecodeRune(s)
			if (r == utf8.RuneError && n == 1) || unicode.IsControl(r) {
				return false
			}
			s = s[n:]
			continue
		}
		if s[1] != 'u' {
			if bytes.IndexByte([]byte(`"\/`), s[1]) < 0 {
				return false // \b \f \n \r \t: control characters
			}
			s = s[2:]
			continue
		}
		r := hex4(s[2:6])
		s = s[6:]
		if utf16.IsSurrogate(r) {
			if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
				return false
			}
			if r = utf16.DecodeRune(r, hex4(s[2:6])); r == unicode.ReplacementChar {
				return false
			}
			s = s[6:]
		}
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape (valid JSON: they are).
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}

// textParams refuses a path or query parameter that is not text, naming
// it. Routes run it where such values would reach SQL (the admin and
// practice routes), after their credential checks; elsewhere they reach
// only Redis, where they name nothing (404).
func textParams(c *gin.Context) error {
	for _, p := range c.Params {
		if !validText(p.Value) {
			return textError("path parameter " + p.Key)
		}
	}
	for k, vs := range c.Request.URL.Query() {
		for _, v := range vs {
			if !validText(k) || !validText(v) {
				return textError("query parameter " + strconv.Quote(k))
			}
		}
	}
	return nil
}

// params is textParams as a middleware.
func (s *Server) params(c *gin.Context) {
	if err := textParams(c); err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
}
