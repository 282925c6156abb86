// Package store is rushline's SQL persistence: event definitions, the audit
// trail of queue entries, and orders, kept with gorm in SQLite (the embedded
// default) or PostgreSQL. It is the only package that imports gorm; callers
// see queue types and the row types declared here.
//
// The hot path never waits on it: WriteRecords is fed in batches by a
// write-behind worker tailing the events' Redis streams.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/rushline/rushline/server/queue"
)

// Dialect names returned by Store.Dialect.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// DefaultSQLiteFile is the database file Open creates under its data
// directory when no database URL is given.
const DefaultSQLiteFile = "rushline.db"

// sqliteDefaults are set on every SQLite connection unless the URL names them.
// WAL lets readers run beside the one writer; busy_timeout makes writers queue
// instead of failing; immediate transactions take the write lock up front, so
// a transaction never fails half-way on a lock upgrade.
var sqliteDefaults = [][2]string{
	{"_journal_mode", "WAL"},
	{"_busy_timeout", "10000"},
	{"_synchronous", "NORMAL"},
	{"_txlock", "immediate"},
}

// migrateLockKey serialises AutoMigrate across replicas starting together on
// one PostgreSQL database.
const migrateLockKey = 0x72757368 // "rush"

// Store keeps rushline's durable state in SQL. It is safe for concurrent use
// by multiple goroutines.
type Store struct {
	db      *gorm.DB
	dialect string
	// log takes the store's own warnings (WithRetry's logger, or slog's
	// default).
	log   *slog.Logger
	stmts stmtCache
	// ready is set once the database answered and holds the schema.
	ready atomic.Bool
	// stop ends the background connect of WithRetry; done closes when it has.
	stop context.CancelFunc
	done chan struct{}
}

// OpenOption adjusts Open.
type OpenOption func(*openOptions)

type openOptions struct {
	retry time.Duration
	log   *slog.Logger
}

// WithRetry makes Open return a PostgreSQL store even while the database
// does not answer: the store keeps connecting, and then creates the schema,
// every retry in the background, logging to log. Until that succeeds every
// call fails with CodeUnavailable, and Ping says so. SQLite, a local file,
// still fails Open at once.
func WithRetry(every time.Duration, log *slog.Logger) OpenOption {
	return func(o *openOptions) { o.retry, o.log = every, log }
}

// Open connects to the database named by databaseURL, creating the schema if
// needed:
//   - "" opens the SQLite file <dataDir>/rushline.db, creating dataDir;
//   - "postgres://…", "postgresql://…" or a key=value DSN ("host=… user=…")
//     opens PostgreSQL;
//   - "sqlite:PATH" (or "sqlite://PATH") opens SQLite at PATH, and a "file:"
//     URI is handed to SQLite as it is.
//
// SQLite runs in WAL mode with a busy timeout. Only failed statements are
// logged, through slog.Default, without their arguments; an old index that
// cannot be dropped (see dropOldIndexes) is a warning on WithRetry's logger
// or slog.Default. A database that
// does not answer, or whose schema cannot be made, fails Open unless
// WithRetry is given.
func Open(ctx context.Context, databaseURL, dataDir string, opts ...OpenOption) (*Store, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	dialect, dsn, dir, err := parseDatabaseURL(databaseURL, dataDir)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("store: create data directory: %w", err)
		}
	}

	var dialector gorm.Dialector
	switch dialect {
	case DialectSQLite:
		dialector = sqlite.Open(dsn)
	default:
		dialector = postgres.Open(dsn)
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 newQuietLogger(),
		NowFunc:                now,
		TranslateError:         true,
		SkipDefaultTransaction: true,
		// gorm.Open would ping without a context; we ping with ctx below.
		DisableAutomaticPing: true,
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	s := &Store{db: db, dialect: dialect, log: o.log}
	if err := s.gate(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	err = s.connect(ctx)
	if err == nil || o.retry <= 0 || dialect != DialectPostgres {
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		return s, nil
	}
	o.log.Warn("database not reachable; retrying in the background, meanwhile what needs it answers 503",
		"dialect", dialect, "every", o.retry, "err", err)
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = stop, make(chan struct{})
	go s.retry(bg, o.retry, o.log)
	return s, nil
}

// connecting marks the context of connect's statements, which pass the gate.
type connecting struct{}

// gate fails every statement made before the store first connected: the
// schema may not exist yet, and a call should not wait on a database known
// to be away. (WriteRecords' own statements check in stmt and inTx.)
func (s *Store) gate() error {
	refuse := func(db *gorm.DB) {
		if !s.ready.Load() && db.Statement.Context.Value(connecting{}) == nil {
			_ = db.AddError(errNotConnected)
		}
	}
	cb := s.db.Callback()
	return errors.Join(
		cb.Create().Before("*").Register("rushline:gate", refuse),
		cb.Query().Before("*").Register("rushline:gate", refuse),
		cb.Update().Before("*").Register("rushline:gate", refuse),
		cb.Delete().Before("*").Register("rushline:gate", refuse),
		cb.Row().Before("*").Register("rushline:gate", refuse),
		cb.Raw().Before("*").Register("rushline:gate", refuse),
	)
}

// connect checks that the database answers and makes the schema.
func (s *Store) connect(ctx context.Context) error {
	ctx = context.WithValue(ctx, connecting{}, true)
	sqlDB, err := s.db.DB()
	if err == nil {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", s.dialect, err)
	}
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("store: migrate %s: %w", s.dialect, err)
	}
	s.ready.Store(true)
	return nil
}

// retry connects every retry until it succeeds or ctx ends.
func (s *Store) retry(ctx context.Context, every time.Duration, log *slog.Logger) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		attempt, cancel := context.WithTimeout(ctx, max(every, 5*time.Second))
		err := s.connect(attempt)
		cancel()
		if err == nil {
			log.Info("database connected", "dialect", s.dialect)
			return
		}
	}
}

// droppedIndexes are indexes earlier versions made that AutoMigrate, which
// only adds, leaves in place. idx_entries_event_user (entries by event and
// user) served no query but CrowdFloor's, run once at a drop's resume, while
// every join's entries row paid for it: a random insert into a B-tree as
// large as the table, about 45% of SQLite's CPU per joined record
// (BenchmarkWriteJoins: 3.2 against 1.8 µs over 400,000 rows).
var droppedIndexes = []string{"idx_entries_event_user"}

func (s *Store) migrate(ctx context.Context) error {
	models := []any{&EventRow{}, &Entry{}, &JoinRun{}, &Transition{}, &Order{}, &PriorityGrant{}, &OrderConflict{}}
	models = append(models, dropModels...)
	models = append(models, &PressRow{})
	db := s.db.WithContext(ctx)
	var err error
	if s.dialect != DialectPostgres {
		err = db.AutoMigrate(models...)
	} else {
		// DDL is transactional in PostgreSQL: replicas starting at once take
		// turns instead of racing on CREATE TABLE.
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrateLockKey).Error; err != nil {
				return err
			}
			return tx.AutoMigrate(models...)
		})
	}
	if err != nil {
		return err
	}
	s.dropOldIndexes(ctx)
	return nil
}

// dropOldIndexes drops droppedIndexes where they are, each on its own and
// at best: an index only slows writes, so one that cannot go within two
// seconds (a role that does not own it, a table or database file another
// holds) stays, with one warning, until a later start tries again. On
// PostgreSQL only the store's own schema is looked in (current_schema: the
// first schema of search_path that exists), and DROP INDEX, which locks the
// whole table, waits at most two seconds for that lock.
func (s *Store) dropOldIndexes(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// The warning below says it once; the statement's own failure is not
	// logged again.
	db := s.db.Session(&gorm.Session{Context: ctx, Logger: logger.Discard})
	for _, idx := range droppedIndexes {
		var err error
		if s.dialect == DialectPostgres {
			err = db.Transaction(func(tx *gorm.DB) error {
				var schema string
				if err := tx.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
					return err
				}
				if err := tx.Exec("SET LOCAL lock_timeout = '2s'").Error; err != nil {
					return err
				}
				return tx.Exec("DROP INDEX IF EXISTS " + quoteIdent(schema) + "." + quoteIdent(idx)).Error
			})
		} else {
			err = s.dropSQLiteIndex(ctx, idx)
		}
		if err != nil {
			s.log.Warn("store: an index earlier versions made could not be dropped; joins write more slowly until it is",
				"index", idx, "err", err)
		}
	}
}

// dropSQLiteIndex drops idx on one connection whose busy timeout is two
// seconds for the while (a cancelled context does not cut SQLite's wait for
// a lock another process holds), then as it was.
func (s *Store) dropSQLiteIndex(ctx context.Context, idx string) error {
	pool, err := s.db.DB()
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var was int64
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&was); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 2000"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "DROP INDEX IF EXISTS "+quoteIdent(idx))
	_, reset := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", was))
	return errors.Join(err, reset)
}

// quoteIdent quotes an SQL identifier, as both dialects read it.
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Close stops connecting in the background and closes the database connections.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return errors.Join(s.stmts.close(), sqlDB.Close())
}

// errNotConnected is the cause of every failure before the first connect.
var errNotConnected = errors.New("store: the database has not answered since the start")

// Ping checks that the database answers and holds the schema.
func (s *Store) Ping(ctx context.Context) error {
	if !s.ready.Load() {
		return dbUnavailable(errNotConnected)
	}
	sqlDB, err := s.db.DB()
	if err == nil {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		return dbUnavailable(fmt.Errorf("store: ping: %w", err))
	}
	return nil
}

// Dialect reports the database in use: DialectSQLite or DialectPostgres.
func (s *Store) Dialect() string { return s.dialect }

// parseDatabaseURL picks the dialect and driver DSN for databaseURL, and the
// directory to create for a SQLite file ("" when there is none to create).
func parseDatabaseURL(databaseURL, dataDir string) (dialect, dsn, dir string, err error) {
	u := strings.TrimSpace(databaseURL)
	switch {
	case u == "":
		if dataDir == "" {
			return "", "", "", errors.New("store: neither a database URL nor a data directory given")
		}
		return DialectSQLite, sqliteDSN(filepath.Join(dataDir, DefaultSQLiteFile)), dataDir, nil
	case hasPrefixFold(u, "postgres://"), hasPrefixFold(u, "postgresql://"):
		return DialectPostgres, u, "", nil
	case hasPrefixFold(u, "sqlite:"):
		p := strings.TrimPrefix(u[len("sqlite:"):], "//")
		path, _, _ := strings.Cut(p, "?")
		if path == "" {
			return "", "", "", errors.New("store: sqlite URL without a path")
		}
		return DialectSQLite, sqliteDSN(p), sqliteDir(path), nil
	case strings.HasPrefix(u, "file:"): // as go-sqlite3 spells it
		p := u[len("file:"):]
		path, query, _ := strings.Cut(p, "?")
		path = strings.TrimPrefix(path, "//")
		if q, _ := url.ParseQuery(query); q.Get("mode") == "memory" || strings.Contains(path, ":memory:") {
			return DialectSQLite, sqliteDSN(u), "", nil
		}
		return DialectSQLite, sqliteDSN(u), sqliteDir(path), nil
	case !strings.Contains(u, "://") && strings.Contains(u, "="):
		return DialectPostgres, u, "", nil
	}
	// Never echo the URL: it may hold a password.
	scheme, _, _ := strings.Cut(u, ":")
	if len(scheme) > 20 {
		scheme = scheme[:20] + "…"
	}
	return "", "", "", fmt.Errorf("store: unsupported database URL scheme %q (want postgres://, postgresql://, a key=value DSN, sqlite:PATH or file:PATH)", scheme)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func sqliteDir(path string) string {
	if path == "" || path == ":memory:" {
		return ""
	}
	if d := filepath.Dir(path); d != "." {
		return d
	}
	return ""
}

// sqliteDSN adds sqliteDefaults to dsn, keeping any value dsn already sets.
func sqliteDSN(dsn string) string {
	path, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		q = url.Values{}
	}
	var add []string
	for _, kv := range sqliteDefaults {
		if !q.Has(kv[0]) {
			add = append(add, kv[0]+"="+kv[1])
		}
	}
	if len(add) == 0 {
		return dsn
	}
	if query != "" {
		return path + "?" + query + "&" + strings.Join(add, "&")
	}
	return path + "?" + strings.Join(add, "&")
}

// now is gorm's clock: UTC at the microsecond precision both dialects keep.
func now() time.Time { return utc(time.Now()) }

// utc normalises a time for storage, so that both dialects store and return
// the same instant.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

// unavailable wraps a database failure for the caller.
func unavailable(op string, err error) error {
	return dbUnavailable(fmt.Errorf("store: %s: %w", op, err))
}

// dbUnavailable is a database failure as the API answers it: 503, naming
// the database rather than the queue, which works on without it.
func dbUnavailable(err error) *queue.Error {
	return &queue.Error{Code: queue.CodeUnavailable, Message: "the database is unavailable, try again shortly", Err: err}
}

// quietLogger logs failed statements only, leaving out the ones the store
// expects and handles (duplicate keys, missing rows, cancelled contexts), and
// never the statements' arguments. It never logs slow queries.
type quietLogger struct {
	logger.Interface
}

func newQuietLogger() logger.Interface {
	return quietLogger{logger.NewSlogLogger(slog.Default().With("component", "store"), logger.Config{
		LogLevel:                  logger.Error,
		IgnoreRecordNotFoundError: true,
		ParameterizedQueries:      true,
	})}
}

func (l quietLogger) LogMode(level logger.LogLevel) logger.Interface {
	return quietLogger{l.Interface.LogMode(level)}
}

// Trace skips the inner logger unless it has something to say: building the
// SQL text for a 1,000-row insert only to drop it costs real time.
func (l quietLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if err == nil ||
		errors.Is(err, gorm.ErrDuplicatedKey) ||
		errors.Is(err, gorm.ErrRecordNotFound) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return
	}
	l.Interface.Trace(ctx, begin, fc, err)
}

// ParamsFilter keeps arguments (user ids, order ids) out of the logs.
func (quietLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}
