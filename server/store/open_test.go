package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// mustReopen opens url twice: what the first store wrote, the second reads.
func mustReopen(t *testing.T, databaseURL, dataDir, wantDialect string, whileOpen func(t *testing.T)) {
	t.Helper()
	ctx := t.Context()
	s, err := store.Open(ctx, databaseURL, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Dialect(); got != wantDialect {
		t.Fatalf("Dialect() = %q, want %q", got, wantDialect)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateEvent(ctx, testEvent("ev1", t0)); err != nil {
		t.Fatal(err)
	}
	if whileOpen != nil {
		whileOpen(t)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = store.Open(ctx, databaseURL, dataDir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	got, err := s.Event(ctx, "ev1")
	if err != nil {
		t.Fatalf("after reopen: %v", err)
	}
	mustEqualEvent(t, got, testEvent("ev1", t0))
}

func mustExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// url and file get the test's temporary directory.
		url  func(dir string) string
		file func(dir string) string
	}{
		// No URL: <dataDir>/rushline.db, the directory created.
		{"default", func(string) string { return "" }, func(dir string) string { return filepath.Join(dir, "data", "nested", "rushline.db") }},
		// sqlite:PATH, the parent directory created.
		{"sqlite:PATH", func(dir string) string { return "sqlite:" + filepath.Join(dir, "db", "x.db") }, func(dir string) string { return filepath.Join(dir, "db", "x.db") }},
		// sqlite:///abs/path.
		{"sqlite://PATH", func(dir string) string { return "sqlite://" + filepath.Join(dir, "y.db") }, func(dir string) string { return filepath.Join(dir, "y.db") }},
		// sqlite:PATH with a parameter of its own, which is kept.
		{"sqlite:PATH?params", func(dir string) string { return "sqlite:" + filepath.Join(dir, "p.db") + "?_busy_timeout=2000" }, func(dir string) string { return filepath.Join(dir, "p.db") }},
		// A file: URI goes to SQLite as it is.
		{"file:PATH", func(dir string) string { return "file:" + filepath.Join(dir, "f", "z.db") + "?cache=private" }, func(dir string) string { return filepath.Join(dir, "f", "z.db") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := tt.file(dir)
			mustReopen(t, tt.url(dir), filepath.Join(dir, "data", "nested"), store.DialectSQLite, func(t *testing.T) {
				mustExist(t, file)
				mustExist(t, file+"-wal") // WAL mode
			})
		})
	}
}

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  func(u *url.URL) string
	}{
		// postgres://
		{"postgres://", func(u *url.URL) string { return u.String() }},
		// postgresql://
		{"postgresql://", func(u *url.URL) string { v := *u; v.Scheme = "postgresql"; return v.String() }},
		// A key=value DSN.
		{"key=value", func(u *url.URL) string {
			kv := []string{"host=" + u.Hostname(), "dbname=" + strings.TrimPrefix(u.Path, "/")}
			if p := u.Port(); p != "" {
				kv = append(kv, "port="+p)
			}
			if u.User != nil {
				kv = append(kv, "user="+u.User.Username())
				if pw, ok := u.User.Password(); ok {
					kv = append(kv, "password="+pw)
				}
			}
			for k, vs := range u.Query() {
				kv = append(kv, k+"="+vs[0])
			}
			return strings.Join(kv, " ")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(storetest.MustPostgresSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			mustReopen(t, tt.url(u), t.TempDir(), store.DialectPostgres, nil)
		})
	}
}

// Replicas starting together on one fresh PostgreSQL database all migrate.
func TestOpenPostgresConcurrent(t *testing.T) {
	t.Parallel()
	dsn := storetest.MustPostgresSchema(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := store.Open(t.Context(), dsn, "")
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Events(t.Context()); err != nil {
				t.Error(err)
			}
			s.Close()
		})
	}
	wg.Wait()
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url, dataDir string
	}{
		// An unknown scheme; the message must not show the password.
		{"unknown scheme", "mysql://root:s3cret@127.0.0.1/db", "x"},
		// A bare path is ambiguous: say sqlite: or file:.
		{"bare path", "/var/lib/rushline.db", "x"},
		// Nothing to open.
		{"nothing", "", ""},
		// PostgreSQL that does not answer.
		{"unreachable postgres", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&password=s3cret", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s, err := store.Open(ctx, tt.url, tt.dataDir)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// TestOpenDropsOldIndexes: an index an earlier version made and this one
// no longer wants (idx_entries_event_user) is gone once Open migrates.
func TestOpenDropsOldIndexes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dialect, driver, count string
		url                    func(t *testing.T) string
	}{
		{store.DialectSQLite, "sqlite3", "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = $1",
			func(t *testing.T) string { return filepath.Join(t.TempDir(), "old.db") }},
		{store.DialectPostgres, "pgx", "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1",
			func(t *testing.T) string { return storetest.MustPostgresSchema(t) }},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			t.Parallel()
			dsn := tc.url(t)
			storeURL := dsn
			if tc.dialect == store.DialectSQLite {
				storeURL = "sqlite:" + dsn
			}
			open := func() {
				t.Helper()
				s, err := store.Open(t.Context(), storeURL, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			open()
			db, err := sql.Open(tc.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			count := func() int {
				t.Helper()
				var n int
				if err := db.QueryRowContext(t.Context(), tc.count, "idx_entries_event_user").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			// As the earlier version made it.
			if _, err := db.ExecContext(t.Context(), "CREATE INDEX idx_entries_event_user ON entries (event_id, user_id)"); err != nil {
				t.Fatal(err)
			}
			if n := count(); n != 1 {
				t.Fatalf("the old index is not there to drop: %d", n)
			}
			open()
			if n := count(); n != 0 {
				t.Errorf("after Open the old index is still there (%d)", n)
			}
		})
	}
}

// TestOpenDropsOnlyItsOwnIndex: on PostgreSQL the old index goes from the
// store's schema (the first of search_path) alone; another install's
// index of the same name further along search_path stays, whether or not
// the store's own schema holds one.
func TestOpenDropsOnlyItsOwnIndex(t *testing.T) {
	t.Parallel()
	mine, other := storetest.MustPostgresSchema(t), storetest.MustPostgresSchema(t)
	dbs, schemas := make([]*sql.DB, 2), make([]string, 2)
	for i, dsn := range []string{mine, other} {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRowContext(t.Context(), "SELECT current_schema()").Scan(&schemas[i]); err != nil {
			t.Fatal(err)
		}
		dbs[i] = db
	}
	mustExec := func(db *sql.DB, stmt string) {
		t.Helper()
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(dbs[1], "CREATE TABLE entries (event_id text, seq bigint, user_id text, PRIMARY KEY (event_id, seq))")
	mustExec(dbs[1], "CREATE INDEX idx_entries_event_user ON entries (event_id, user_id)")
	// mine's DSN with both schemas on its search_path, mine first: its
	// search_path parameter, in a URL or a key=value DSN, is the last.
	both := strings.Replace(mine, schemas[0], schemas[0]+","+schemas[1], 1)
	if both == mine {
		t.Fatalf("no schema %s in %q", schemas[0], mine)
	}
	open := func(stage string) {
		t.Helper()
		s, err := store.Open(t.Context(), both, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{0, 1} {
			var n int
			if err := dbs[1].QueryRowContext(t.Context(), "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2",
				schemas[i], "idx_entries_event_user").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("%s: schema %d of search_path (%s) holds the old index %d times, want %d", stage, i+1, schemas[i], n, want)
			}
		}
	}
	open("the store's schema new")
	mustExec(dbs[0], "CREATE INDEX idx_entries_event_user ON entries (event_id, user_id)")
	open("both schemas with the index")
}

// TestOpenLeavesALockedOldIndex: SQLite held by another writer cannot drop
// the old index; Open still succeeds (the drop gives up, with a warning),
// and the next Open, free of it, drops it.
func TestOpenLeavesALockedOldIndex(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "held.db")
	open := func() {
		t.Helper()
		s, err := store.Open(t.Context(), "sqlite:"+file, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	open()
	db, err := sql.Open("sqlite3", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_entries_event_user'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.ExecContext(t.Context(), "CREATE INDEX idx_entries_event_user ON entries (event_id, user_id)"); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	open()
	if _, err := holder.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("the old index went while another writer held the file (%d left)", n)
	}
	open()
	if n := count(); n != 0 {
		t.Errorf("after the writer let go, Open left the old index (%d)", n)
	}
}
