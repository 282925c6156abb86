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

// text is the statement's text in dialect: the SELECT unpacks the rows from
// its one argument.
func (ins *jsonInsert) text(dialect string) string {
	names := make([]string, len(ins.cols))
	for i, c := range ins.cols {
		names[i] = c.name
	}
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
		from = "jsonb_array_elements($1::jsonb) AS r(v)"
	}
	return "INSERT INTO " + ins.table + " (" + strings.Join(names, ", ") + ") SELECT " + strings.Join(exprs, ", ") +
		" FROM " + from + " " + ins.suffix
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

// lines writes n strings, line(0) to line(n-1), as one string, a line each.
func (j *jsonRows) lines(n int, line func(i int) string) *jsonRows {
	j.sep()
	j.b = append(j.b, '"')
	for i := range n {
		if i > 0 {
			j.b = append(j.b, '\\', 'n')
		}
		j.b = appendJSONText(j.b, line(i))
	}
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
	dst = append(dst, '"')
	dst = appendJSONText(dst, s)
	return append(dst, '"')
}

// appendJSONText appends s escaped as in a JSON string, without the quotes.
func appendJSONText(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
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
	return append(dst, s[start:]...)
}

// stmtCache holds a store's prepared statements until Close.
type stmtCache struct {
	mu sync.Mutex
	m  map[*jsonInsert]*sql.Stmt
}

// stmt returns the prepared statement of ins, preparing it on the pool the
// first time.
func (s *Store) stmt(ctx context.Context, ins *jsonInsert) (*sql.Stmt, error) {
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
		c.m = map[*jsonInsert]*sql.Stmt{}
	}
	c.m[ins] = st
	return st, nil
}

// insert runs ins in tx for rows; no rows runs nothing.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, ins *jsonInsert, rows *jsonRows) error {
	if rows.n == 0 {
		return nil
	}
	st, err := s.stmt(ctx, ins)
	if err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, rows.String()); err != nil {
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
