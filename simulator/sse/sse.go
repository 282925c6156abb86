// Package sse is a Server-Sent Events client: it reads one stream's messages
// and reconnects with Last-Event-ID on request. The simulator's bots and the
// server's tests use it.
package sse

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Message is one event of a stream.
type Message struct {
	ID    string
	Event string
	Data  string
}

// Stream is an open event stream. Not safe for concurrent use.
type Stream struct {
	body   io.ReadCloser
	r      *bufio.Reader
	LastID string
}

// Open connects to url; lastID, when set, is sent as Last-Event-ID. A non-200
// answer is an error that includes the body.
func Open(ctx context.Context, client *http.Client, url, lastID string) (*Stream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		return nil, &StatusError{Code: res.StatusCode, Body: string(b)}
	}
	return &Stream{body: res.Body, r: bufio.NewReaderSize(res.Body, 4096), LastID: lastID}, nil
}

// StatusError is a stream refused with a non-200 answer.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("sse: status %d: %s", e.Code, e.Body) }

// Next returns the next message, skipping comments and retry hints; io.EOF
// when the server closed the stream.
func (s *Stream) Next() (Message, error) {
	var m Message
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				return Message{}, io.EOF
			}
			return Message{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if m.Event == "" && len(data) == 0 {
				continue // a comment or retry block
			}
			m.Data = strings.Join(data, "\n")
			if m.Event == "" {
				m.Event = "message"
			}
			if m.ID != "" {
				s.LastID = m.ID
			}
			return m, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			m.ID = value
		case "event":
			m.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }
