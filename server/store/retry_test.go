package store_test

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/store"
)

// TestOpenWithRetry: with WithRetry, a PostgreSQL that does not answer
// still gives a store, whose calls answer CodeUnavailable naming the
// database until it connects; SQLite still fails at once.
func TestOpenWithRetry(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := t.Context()
	s, err := store.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable", "", store.WithRetry(20*time.Millisecond, quiet))
	if err != nil {
		t.Fatalf("Open with retry: %v", err)
	}
	for name, call := range map[string]func() error{
		"ping":         func() error { return s.Ping(ctx) },
		"create event": func() error { return s.CreateEvent(ctx, testEvent("ev1", t0)) },
		"events":       func() error { _, err := s.Events(ctx); return err },
		"write records": func() error {
			_, err := s.WriteRecords(ctx, []queue.Record{{ID: "1-0", EventID: "ev1", Kind: queue.RecordJoined, Seq: 1, UserID: "u_1", At: t0}})
			return err
		},
	} {
		var qe *queue.Error
		if err := call(); !errors.As(err, &qe) || qe.Code != queue.CodeUnavailable || !strings.Contains(qe.Message, "database") {
			t.Errorf("%s while not connected: %v, want UNAVAILABLE naming the database", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	// A SQLite file that cannot be made is a configuration error: no retry.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(ctx, "sqlite:"+filepath.Join(blocker, "x.db"), "", store.WithRetry(20*time.Millisecond, quiet)); err == nil {
		s.Close()
		t.Fatal("SQLite under a file opened")
	}
}
