package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// colType is how a jsonInsert column's value is written and read back.
type colType int

const (
	colText colType = iota
	colInt
	colTime
)

type column struct {
	name string
	typ  colType
}

// jsonInsert is an INSERT of any number of rows into one table that takes
// them all as one argument: a JSON array of rows, each an array of the
// column values in cols order (see jsonRows), unpacked by SQLite's json_each
// or PostgreSQL's jsonb_array_elements. A batch thus costs one bound value
// and one prepared statement, where one value per column and row cost a cgo
// call each in the SQLite driver, plus its conversion and copy.
type jsonInsert struct {
	table  string
	cols   []column
	suffix string
}

// String names the statement in errors.
func (ins *jsonInsert) String() string { return ins.table }

// text is the statement text in dialect.
func (ins *jsonInsert) text(dialect string) string {
	names := make([]string, len(ins.cols))
	for i, c := range ins.cols {
		names[i] = c.name
	}
	return "INSERT INTO " + ins.table + " (" + strings.Join(names, ", ") + ") " + ins.selectText(dialect, 1) + " " + ins.suffix
}

// selectText is the SELECT that unpacks the rows from argument arg (1-based;
// SQLite's placeholders are positional).
func (ins *jsonInsert) selectText(dialect string, arg int) string {
	exprs := make([]string, len(ins.cols))
	for i, c := range ins.cols {
		switch {
		case dialect != DialectPostgres:
			// Times are text in SQLite, as the driver writes a bound time.
			exprs[i] = "v ->> " + strconv.Itoa(i)
		case c.typ == colInt:
			exprs[i] = "(v ->> " + strconv.Itoa(i) + ")::bigint"
		case c.typ == colTime:
			exprs[i] = "(v ->> " + strconv.Itoa(i) + ")::timestamptz"
		default:
			exprs[i] = "v ->> " + strconv.Itoa(i)
		}
	}
	// SQLite: each row's text is parsed once into a JSONB blob that the
	// columns read (LIMIT keeps the subquery from being flattened into one
	// parse per column); WHERE keeps the parser from reading ON CONFLICT as
	// a join's ON.
	from := "(SELECT jsonb(value) AS v FROM json_each(?) LIMIT -1) WHERE true"
	if dialect == DialectPostgres {
		from = "jsonb_array_elements($" + strconv.Itoa(arg) + "::jsonb) AS r(v)"
	}
	return "SELECT " + strings.Join(exprs, ", ") + " FROM " + from
}

// statement is an INSERT that takes its rows as jsonRows arguments, in the
// text of a dialect.
type statement interface {
	text(dialect string) string
	// String names it in errors.
	String() string
}

// joinRunsInsert inserts entries rows of tokens that have only joined: the
// rows of a run of joins (see queue.Record.Part) differ only in seq, user
// id and joined record, so each JSON row stands for a run and carries its
// user ids as one array: event id, the first seq, the time, lane, user
// type, the stream id, the first part, then the user ids. Unpacking it
// costs a fraction of one JSON row per entry.
type joinRunsInsert struct {
	suffix string
}

// String names the statement in errors.
func (ins *joinRunsInsert) String() string { return "entries (runs of joins)" }

// joinCols are the entries columns in insertEntries' order, which
// joinRunsInsert's SELECT follows.
const joinCols = "event_id, seq, user_id, user_type, status, status_at, joined_at, admitted_at, finished_at, lane, admission_no, joined_id"

func (ins *joinRunsInsert) text(dialect string) string {
	return "INSERT INTO entries (" + joinCols + ") " + ins.selectText(dialect, 1) + " " + ins.suffix
}

// selectText is the SELECT that expands the runs of argument arg (1-based).
func (ins *joinRunsInsert) selectText(dialect string, arg int) string {
	if dialect == DialectPostgres {
		const part = "((r.v ->> 6)::bigint + u.ord - 1)"
		return "SELECT r.v ->> 0, (r.v ->> 1)::bigint + u.ord - 1, u.id, r.v ->> 4, 'WAITING', " +
			"(r.v ->> 2)::timestamptz, (r.v ->> 2)::timestamptz, NULL::timestamptz, NULL::timestamptz, r.v ->> 3, 0::bigint, " +
			"CASE WHEN " + part + " = 0 THEN r.v ->> 5 ELSE (r.v ->> 5) || '/' || " + part + " END " +
			"FROM jsonb_array_elements($" + strconv.Itoa(arg) + "::jsonb) AS r(v), " +
			"jsonb_array_elements_text(r.v -> 7) WITH ORDINALITY AS u(id, ord)"
	}
	// Each run's fields are read once (LIMIT keeps the subqueries from
	// being flattened into a read per user); json_each walks its users.
	return "SELECT r.e, r.q + u.key, u.value, r.ty, 'WAITING', r.t, r.t, NULL, NULL, r.l, 0, " +
		"CASE WHEN r.p + u.key = 0 THEN r.id ELSE r.id || '/' || (r.p + u.key) END " +
		"FROM (SELECT v ->> 0 AS e, v ->> 1 AS q, v ->> 2 AS t, v ->> 3 AS l, v ->> 4 AS ty, v ->> 5 AS id, v ->> 6 AS p, v -> 7 AS us " +
		"FROM (SELECT jsonb(value) AS v FROM json_each(?) LIMIT -1) LIMIT -1) AS r, json_each(r.us) AS u WHERE true"
}

// entriesPG writes both forms of entries rows on PostgreSQL in one
// statement, the runs ($1) and the rows ($2), in key order. In two
// statements a writer would lock the runs' rows first, so two writers whose
// overlapping batches split tokens between the forms differently could lock
// in opposite orders and deadlock. (SQLite runs one writer at a time.)
type entriesPG struct {
	runs *joinRunsInsert
	rows *jsonInsert
}

// String names the statement in errors.
func (ins *entriesPG) String() string { return "entries" }

func (ins *entriesPG) text(string) string {
	return "INSERT INTO entries (" + joinCols + ") SELECT * FROM (" + ins.runs.selectText(DialectPostgres, 1) +
		" UNION ALL " + ins.rows.selectText(DialectPostgres, 2) + ") AS x ORDER BY 1, 2 " + ins.rows.suffix
}

// sqliteTime is the layout go-sqlite3 writes a bound time.Time in; times
// are stored as this text, which orders as the times do (all are UTC).
const sqliteTime = "2006-01-02 15:04:05.999999999-07:00"

// jsonRows builds the argument of a jsonInsert, one row at a time:
// rows.row().str(a).int(b).end(). Times must be UTC (utc), and are written
// as go-sqlite3 writes a bound time, which PostgreSQL reads as well.
type jsonRows struct {
	b []byte
	// n counts the rows; more says the open row has a value already.
	n    int
	more bool
	// last and lastText remember the last time written: records of one
	// stream entry share theirs.
	last     time.Time
	lastText []byte
}

// row opens a row.
func (j *jsonRows) row() *jsonRows {
	if j.n == 0 {
		j.b = append(j.b, '[')
	} else {
		j.b = append(j.b, ',')
	}
	j.n++
	j.b = append(j.b, '[')
	j.more = false
	return j
}

// end closes the row.
func (j *jsonRows) end() { j.b = append(j.b, ']') }

// list opens an array as the row's next value; endList closes it.
func (j *jsonRows) list() *jsonRows {
	j.sep()
	j.b = append(j.b, '[')
	j.more = false
	return j
}

func (j *jsonRows) endList() {
	j.b = append(j.b, ']')
	j.more = true
}

func (j *jsonRows) sep() {
	if j.more {
		j.b = append(j.b, ',')
	}
	j.more = true
}

func (j *jsonRows) str(s string) *jsonRows {
	j.sep()
	j.b = appendJSONString(j.b, s)
	return j
}

func (j *jsonRows) int(n int64) *jsonRows {
	j.sep()
	j.b = strconv.AppendInt(j.b, n, 10)
	return j
}

func (j *jsonRows) time(t time.Time) *jsonRows {
	j.sep()
	if !t.Equal(j.last) || j.lastText == nil {
		j.last = t
		j.lastText = t.AppendFormat(j.lastText[:0], sqliteTime)
	}
	j.b = append(j.b, '"')
	j.b = append(j.b, j.lastText...)
	j.b = append(j.b, '"')
	return j
}

// timePtr writes *t, or null when t is nil.
func (j *jsonRows) timePtr(t *time.Time) *jsonRows {
	if t == nil {
		j.sep()
		j.b = append(j.b, "null"...)
		return j
	}
	return j.time(*t)
}

// String is the argument: the JSON array of the rows.
func (j *jsonRows) String() string {
	if j.n == 0 {
		return "[]"
	}
	return string(j.b) + "]"
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 goes through
// as it is, as a bound string would.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// stmtCache holds a store's prepared statements until Close.
type stmtCache struct {
	mu sync.Mutex
	m  map[statement]*sql.Stmt
}

// stmt returns the prepared statement of ins, preparing it on the pool the
// first time.
func (s *Store) stmt(ctx context.Context, ins statement) (*sql.Stmt, error) {
	c := &s.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[ins]; st != nil {
		return st, nil
	}
	if !s.ready.Load() {
		return nil, errNotConnected
	}
	pool, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	st, err := pool.PrepareContext(ctx, ins.text(s.dialect))
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", ins, err)
	}
	if c.m == nil {
		c.m = map[statement]*sql.Stmt{}
	}
	c.m[ins] = st
	return st, nil
}

// insert runs ins in tx for rows, one argument each; none runs nothing.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, ins statement, rows ...*jsonRows) error {
	args := make([]any, len(rows))
	empty := true
	for i, r := range rows {
		args[i], empty = r.String(), empty && r.n == 0
	}
	if empty {
		return nil
	}
	st, err := s.stmt(ctx, ins)
	if err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("%s: %w", ins, err)
	}
	return nil
}

// close closes the prepared statements.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, k)
	}
	return errors.Join(errs...)
}
