// Package sse is a Server-Sent Events client: it reads one stream's messages
// and reconnects with Last-Event-ID on request. The simulator's bots and the
// server's tests use it.
package sse

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

// bufSize is the read buffer of a dialled stream: messages are short, and a
// longer line still reads whole.
const bufSize = 512

// Dial opens url on a connection of its own, without an http.Client: a held
// stream then costs one socket and two small buffers, with no transport
// goroutines, so one process holds tens of thousands. lastID, when set, is
// sent as Last-Event-ID; ctx ending closes the stream.
func Dial(ctx context.Context, rawURL, lastID string) (*Stream, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		conn = tls.Client(conn, &tls.Config{ServerName: u.Hostname()})
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	// HTTP/1.0: the answer comes unchunked and ends with the connection, so
	// the stream reads straight off one small buffer on the socket, and a
	// waiting bot's goroutine stays shallow (its stack is most of its cost).
	var b strings.Builder
	b.WriteString("GET " + u.RequestURI() + " HTTP/1.0\r\nHost: " + u.Host + "\r\nAccept: text/event-stream\r\nUser-Agent: rushline-sim\r\n")
	if lastID != "" {
		b.WriteString("Last-Event-ID: " + lastID + "\r\n")
	}
	b.WriteString("\r\n")
	fail := func(err error) (*Stream, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(conn, bufSize)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return fail(err)
	}
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fail(&StatusError{Code: res.StatusCode, Body: string(body)})
	}
	if len(res.TransferEncoding) > 0 {
		return fail(fmt.Errorf("sse: %s answered HTTP/1.0 with transfer encoding %v", u.Host, res.TransferEncoding))
	}
	return &Stream{body: &connBody{conn: conn, stop: stop}, r: br, LastID: lastID}, nil
}

// connBody is a dialled stream's body: closing it closes the connection.
type connBody struct {
	conn net.Conn
	stop func() bool
}

func (c *connBody) Read(p []byte) (int, error) { return c.conn.Read(p) }

func (c *connBody) Close() error {
	c.stop()
	return c.conn.Close()
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
