package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/rushline/rushline/server/queue"
)

// MaxBody is the largest request body accepted (API.md: 64 KiB).
const MaxBody = 64 << 10

// smallBody is the largest body readBody reads into a buffer of the size
// the request announces (a join's is under 200 bytes).
const smallBody = 4 << 10

// readBody reads the whole body before anything else, so an oversize body
// is refused with 413 ahead of every check but the rate limit. The body
// then stays in the request as a readBuffer, where requestBody finds it.
func readBody(c *gin.Context) error {
	if c.Request.Body == nil || c.Request.Method == http.MethodGet {
		return nil
	}
	n := c.Request.ContentLength
	if n > MaxBody {
		return queue.Errorf(queue.CodeBodyTooLarge, "the request body is over %d bytes", MaxBody)
	}
	var b []byte
	var err error
	if n >= 0 && n <= smallBody {
		// net/http stops a body of known length at its length: one read
		// into a buffer of that size, none grown on the way. Only for
		// small ones: a larger buffer grows with what arrives, so that
		// slow clients cannot hold 64 KiB each by announcing it.
		b = make([]byte, n)
		_, err = io.ReadFull(c.Request.Body, b)
	} else {
		b, err = io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBody))
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return queue.Errorf(queue.CodeBodyTooLarge, "the request body is over %d bytes", MaxBody)
	}
	if err != nil {
		return badRequest("could not read the request body")
	}
	c.Request.Body = &readBuffer{b: b}
	return nil
}

// readBuffer is a request body readBody has read: it reads again from the
// start, and requestBody takes its bytes as they are. Kept in the request
// rather than in the gin context's keys, which would cost a map per request.
type readBuffer struct {
	b   []byte
	off int
}

// Read reads the body from where the last read ended.
func (r *readBuffer) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// Close does nothing: the bytes are in memory.
func (r *readBuffer) Close() error { return nil }

// requestBody is the body readBody read, nil when it read none.
func requestBody(c *gin.Context) []byte {
	if r, ok := c.Request.Body.(*readBuffer); ok {
		return r.b
	}
	return nil
}

// decode parses the request body, read by readBody, into v: one JSON object
// with known fields of the right types and nothing after it.
func decode(c *gin.Context, v any) error {
	b := bytes.TrimSpace(requestBody(c))
	if len(b) == 0 || b[0] != '{' {
		return badRequest("the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("%s", describe(err))
	}
	// More() misses a stray '}' or ']'; b is trimmed, so the object must end it.
	if dec.InputOffset() != int64(len(b)) {
		return badRequest("the request body must hold one JSON object")
	}
	return checkText(b)
}

// describe turns a JSON decoding error into a sentence for the client.
func describe(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return fmt.Sprintf("field %s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end"
	default:
		return "malformed JSON: " + err.Error()
	}
}

func jsonKind(goType string) string {
	switch {
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "string"), strings.Contains(goType, "Time"):
		return "a string"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	}
	return "of another type"
}
