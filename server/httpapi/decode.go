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

const bodyKey = "rushline.body"

// readBody reads the whole body before anything else, so an oversize body
// is refused with 413 ahead of every check but the rate limit.
func readBody(c *gin.Context) error {
	if c.Request.Body == nil || c.Request.Method == http.MethodGet {
		return nil
	}
	if c.Request.ContentLength > MaxBody {
		return queue.Errorf(queue.CodeBodyTooLarge, "the request body is over %d bytes", MaxBody)
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return queue.Errorf(queue.CodeBodyTooLarge, "the request body is over %d bytes", MaxBody)
	}
	if err != nil {
		return badRequest("could not read the request body")
	}
	c.Set(bodyKey, b)
	return nil
}

// decode parses the request body, read by readBody, into v: one JSON object
// with known fields of the right types and nothing after it.
func decode(c *gin.Context, v any) error {
	raw, _ := c.Get(bodyKey)
	b, _ := raw.([]byte)
	b = bytes.TrimSpace(b)
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
