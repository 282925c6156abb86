package httpapi

import (
	"bytes"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// joinRequest is the body of a join.
type joinRequest struct {
	UserType     *string `json:"user_type"`
	BotID        *string `json:"bot_id"`
	PriorityCode *string `json:"priority_code"`
	Priority     *bool   `json:"priority"`
	// Challenge and Solution answer an event's proof-of-work challenge.
	Challenge *string `json:"challenge"`
	Solution  *string `json:"solution"`
}

// The user types a join names, shared so a parsed body points at them.
var (
	actualType  = string(queue.UserActual)
	virtualType = string(queue.UserVirtual)
	yes, no     = true, false
)

// decodeJoin parses a join body into req. The bodies clients send, a flat
// object of plain strings, booleans and nulls under the known names, are
// read by a small scanner that allocates nothing for the usual ones;
// anything else goes through decode, which takes or refuses it and words
// the error, so the answers are decode's (TestJoinBodyMatchesDecode).
func decodeJoin(c *gin.Context, req *joinRequest) error {
	if scanJoin(bytes.TrimSpace(requestBody(c)), req) {
		return nil
	}
	*req = joinRequest{}
	return decode(c, req)
}

// scanJoin reads b into req when b is one flat JSON object whose members
// are all known join fields with a string (printable ASCII, no escapes),
// boolean or null value of the field's type; false for anything else.
func scanJoin(b []byte, req *joinRequest) bool {
	s := scanner{b: b}
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return s.i == len(b)
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		switch string(key) {
		case "user_type":
			ok = s.strField(&req.UserType)
		case "bot_id":
			ok = s.strField(&req.BotID)
		case "priority_code":
			ok = s.strField(&req.PriorityCode)
		case "priority":
			ok = s.boolField(&req.Priority)
		case "challenge":
			ok = s.strField(&req.Challenge)
		case "solution":
			ok = s.strField(&req.Solution)
		default:
			return false
		}
		if !ok {
			return false
		}
		if s.byte('}') {
			return s.i == len(b)
		}
		if !s.byte(',') {
			return false
		}
	}
}

// scanner reads the few JSON tokens scanJoin knows.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// byte consumes c, after white space, if it comes next.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *scanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// word consumes the literal w if it comes next.
func (s *scanner) word(w string) bool {
	s.space()
	if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.i += len(w)
		return true
	}
	return false
}

// strField reads a string or null into *dst.
func (s *scanner) strField(dst **string) bool {
	if s.word("null") {
		*dst = nil
		return true
	}
	v, ok := s.str()
	if !ok {
		return false
	}
	switch string(v) {
	case actualType:
		*dst = &actualType
	case virtualType:
		*dst = &virtualType
	default:
		str := string(v)
		*dst = &str
	}
	return true
}

// boolField reads a boolean or null into *dst.
func (s *scanner) boolField(dst **bool) bool {
	switch {
	case s.word("null"):
		*dst = nil
	case s.word("true"):
		*dst = &yes
	case s.word("false"):
		*dst = &no
	default:
		return false
	}
	return true
}
