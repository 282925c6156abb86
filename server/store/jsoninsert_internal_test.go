package store

import (
	"encoding/json"
	"testing"
	"time"
)

// TestJSONRowsTimeIsDriverText holds the text jsonRows writes a time in to
// the text go-sqlite3 stores for a bound time.Time: the entries upsert
// compares stored times as text, rows written before included.
func TestJSONRowsTimeIsDriverText(t *testing.T) {
	s := mustOpenSQLite(t)
	pool, err := s.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{
		time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC),
		time.Date(2030, 1, 2, 10, 0, 0, 120_000_000, time.UTC),
		time.Date(2030, 12, 31, 23, 59, 59, 123_456_000, time.UTC),
		time.UnixMilli(1_764_131_234_567).UTC(),
	} {
		var driver string
		if err := pool.QueryRowContext(t.Context(), "SELECT ?", at).Scan(&driver); err != nil {
			t.Fatal(err)
		}
		var rows jsonRows
		rows.row().time(at).end()
		var got [][]string
		if err := json.Unmarshal([]byte(rows.String()), &got); err != nil {
			t.Fatalf("%s: %v", rows.String(), err)
		}
		if got[0][0] != driver {
			t.Errorf("%v: jsonRows writes %q, the driver %q", at, got[0][0], driver)
		}
	}
}

// TestJSONRows checks the argument's shape: rows of values, strings quoted
// as encoding/json reads them, a nil time as null, a time repeated from
// the row before written again, lines as one string.
func TestJSONRows(t *testing.T) {
	var rows jsonRows
	if got := rows.String(); got != "[]" {
		t.Fatalf("no rows: %s, want []", got)
	}
	at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	odd := "q\"b\\n\nt\tc\x01z é 🎟"
	rows.row().str(odd).int(-42).time(at).timePtr(nil).end()
	rows.row().str("").int(0).time(at).timePtr(&at).end()
	lines := []string{odd, "", "two"}
	rows.row().lines(len(lines), func(i int) string { return lines[i] }).lines(0, nil).end()
	var got [][]any
	if err := json.Unmarshal([]byte(rows.String()), &got); err != nil {
		t.Fatalf("%s: %v", rows.String(), err)
	}
	want := [][]any{{odd, -42.0, "2030-01-02 10:00:00+00:00", nil}, {"", 0.0, "2030-01-02 10:00:00+00:00", "2030-01-02 10:00:00+00:00"},
		{odd + "\n\ntwo", ""}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Errorf("row %d value %d: %#v, want %#v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// mustOpenSQLite opens an empty SQLite store in a temporary folder.
func mustOpenSQLite(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), "", tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
