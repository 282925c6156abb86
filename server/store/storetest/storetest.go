// Package storetest gives tests a fresh store.Store on SQLite or PostgreSQL.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to manage test schemas

	"github.com/rushline/rushline/server/store"
)

// Dialects lists the databases every store test runs against.
var Dialects = []string{store.DialectSQLite, store.DialectPostgres}

// PostgresEnv names the environment variable that overrides DefaultPostgresURL.
const PostgresEnv = "RUSHLINE_TEST_POSTGRES"

// DefaultPostgresURL is the test server: local, trust authentication.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresServerURL returns the test server's URL: $RUSHLINE_TEST_POSTGRES or
// DefaultPostgresURL.
func PostgresServerURL() string {
	if u := os.Getenv(PostgresEnv); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// MustOpen opens an empty, migrated store of the given dialect (one of
// Dialects) and closes it at the end of the test. SQLite lives in
// tb.TempDir(); PostgreSQL gets a schema of its own, dropped at the end. An
// unreachable PostgreSQL fails the test: it is never skipped.
func MustOpen(tb testing.TB, dialect string) *store.Store {
	tb.Helper()
	var databaseURL string
	switch dialect {
	case store.DialectSQLite:
	case store.DialectPostgres:
		databaseURL = MustPostgresSchema(tb)
	default:
		tb.Fatalf("storetest: unknown dialect %q (want one of %v)", dialect, Dialects)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, databaseURL, tb.TempDir())
	if err != nil {
		tb.Fatalf("storetest: open %s store: %v", dialect, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("storetest: close %s store: %v", dialect, err)
		}
	})
	if got := s.Dialect(); got != dialect {
		tb.Fatalf("storetest: opened a %s store, want %s", got, dialect)
	}
	return s
}

// MustPostgresSchema creates an empty schema rl_test_<random> on the test
// server, drops it (with everything in it) at the end of the test, and
// returns the server's URL with search_path set to it.
func MustPostgresSchema(tb testing.TB) string {
	tb.Helper()
	server := PostgresServerURL()
	db, err := sql.Open("pgx", server)
	if err != nil {
		tb.Fatalf("storetest: PostgreSQL URL %s=%q: %v", PostgresEnv, redact(server), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		tb.Fatalf("storetest: PostgreSQL at %s is unreachable: %v\n"+
			"Every store test runs against PostgreSQL too: start it, or point %s at one.",
			redact(server), err, PostgresEnv)
	}

	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "rl_test_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = db.Close()
		tb.Fatalf("storetest: create schema %s: %v", schema, err)
	}
	// Registered before MustOpen's Close, so it runs after it.
	tb.Cleanup(func() {
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("storetest: drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(server, schema)
}

// withSearchPath sets search_path in a URL or key=value DSN.
func withSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// redact hides a password in a URL.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	if strings.Contains(dsn, "password=") {
		return "(key=value DSN with a password)"
	}
	return dsn
}
