package store

import (
	"strings"
	"testing"
)

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	const defaults = "_journal_mode=WAL&_busy_timeout=10000&_synchronous=NORMAL&_txlock=immediate"
	tests := []struct {
		name, url, dataDir      string
		dialect, dsn, dir, fail string
	}{
		// No URL: SQLite in the data directory.
		{name: "default", dataDir: "data", dialect: "sqlite", dsn: "data/rushline.db?" + defaults, dir: "data"},
		// No URL and no data directory.
		{name: "nothing", fail: "neither"},
		// PostgreSQL URLs pass through untouched.
		{name: "postgres", url: "postgres://u:p@h/db?sslmode=disable", dialect: "postgres", dsn: "postgres://u:p@h/db?sslmode=disable"},
		// Either scheme spelling, any case.
		{name: "postgresql", url: "PostgreSQL://h/db", dialect: "postgres", dsn: "PostgreSQL://h/db"},
		// A key=value DSN is PostgreSQL's.
		{name: "key=value", url: "host=h user=u dbname=db", dialect: "postgres", dsn: "host=h user=u dbname=db"},
		// sqlite:PATH, relative.
		{name: "sqlite relative", url: "sqlite:var/r.db", dialect: "sqlite", dsn: "var/r.db?" + defaults, dir: "var"},
		// sqlite:///abs.
		{name: "sqlite triple slash", url: "sqlite:///srv/r.db", dialect: "sqlite", dsn: "/srv/r.db?" + defaults, dir: "/srv"},
		// The URL's own settings win over the defaults.
		{name: "sqlite params", url: "sqlite:/srv/r.db?_journal_mode=DELETE", dialect: "sqlite",
			dsn: "/srv/r.db?_journal_mode=DELETE&_busy_timeout=10000&_synchronous=NORMAL&_txlock=immediate", dir: "/srv"},
		// A file name alone needs no directory.
		{name: "sqlite bare file", url: "sqlite:r.db", dialect: "sqlite", dsn: "r.db?" + defaults},
		// sqlite: without a path.
		{name: "sqlite empty", url: "sqlite:", fail: "without a path"},
		// A file: URI keeps its prefix and parameters.
		{name: "file", url: "file:/srv/r.db?cache=shared", dialect: "sqlite", dsn: "file:/srv/r.db?cache=shared&" + defaults, dir: "/srv"},
		// An in-memory database has no directory.
		{name: "file memory", url: "file:mem1?mode=memory&cache=shared", dialect: "sqlite", dsn: "file:mem1?mode=memory&cache=shared&" + defaults},
		// Other schemes are refused without echoing the URL.
		{name: "mysql", url: "mysql://root:pw@h/db", fail: `"mysql"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dialect, dsn, dir, err := parseDatabaseURL(tt.url, tt.dataDir)
			if tt.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tt.fail) {
					t.Fatalf("error %v, want one containing %q", err, tt.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if dialect != tt.dialect || dsn != tt.dsn || dir != tt.dir {
				t.Fatalf("got (%q, %q, %q), want (%q, %q, %q)", dialect, dsn, dir, tt.dialect, tt.dsn, tt.dir)
			}
		})
	}
}
