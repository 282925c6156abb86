package sse_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rushline/rushline/simulator/sse"
)

func TestStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refused" {
			http.Error(w, `{"error":{"code":"TOKEN_NOT_FOUND"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "retry: 1000\n\n: keep-alive\n\n")
		fmt.Fprintf(w, "id: 1-0\nevent: position\ndata: {\"position\":2}\n\n")
		fmt.Fprintf(w, "id: 2-0\r\nevent: admitted\r\ndata: line one\r\ndata: line two\r\n\r\n")
		fmt.Fprintf(w, "id: %s\nevent: echo\ndata: x\n\n", r.Header.Get("Last-Event-ID"))
	}))
	defer srv.Close()
	// Open (through an http.Client) and Dial (a connection of its own, HTTP/1.0) read alike.
	for _, how := range []string{"open", "dial"} {
		t.Run(how, func(t *testing.T) {
			open := func(url, lastID string) (*sse.Stream, error) {
				if how == "dial" {
					return sse.Dial(context.Background(), url, lastID)
				}
				return sse.Open(context.Background(), srv.Client(), url, lastID)
			}
			mustReadStream(t, srv.URL, open)
		})
	}
}

func mustReadStream(t *testing.T, url string, open func(url, lastID string) (*sse.Stream, error)) {
	t.Helper()
	s, err := open(url, "9-9")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []sse.Message{
		{ID: "1-0", Event: "position", Data: `{"position":2}`},     // comments and retry skipped
		{ID: "2-0", Event: "admitted", Data: "line one\nline two"}, // CRLF and multi-line data
		{ID: "9-9", Event: "echo", Data: "x"},                      // Last-Event-ID was sent
	}
	for i, w := range want {
		m, err := s.Next()
		if err != nil || m != w {
			t.Fatalf("message %d = %+v, %v; want %+v", i, m, err, w)
		}
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last message: %v, want EOF", err)
	}
	if s.LastID != "9-9" {
		t.Fatalf("LastID = %q", s.LastID)
	}
	_, err = open(url+"/refused", "")
	var se *sse.StatusError
	if !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("refused stream: %v", err)
	}
}

// A dialled stream ends when its context does.
func TestDialCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := sse.Dial(ctx, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel()
	if _, err := s.Next(); err == nil {
		t.Fatal("Next after cancel: no error")
	}
}
