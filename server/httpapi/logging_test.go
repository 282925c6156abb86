package httpapi_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// logRecorder is a slog.Handler that keeps every record. Safe for
// concurrent use.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}

// attrs are a record's attributes by key, as strings.
func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

// Len is how many records there are so far.
func (l *logRecorder) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records)
}

// MustRequestLine waits for the request line of method and path among the
// records from index from on, and returns its level and attributes.
func (l *logRecorder) MustRequestLine(tb testing.TB, from int, method, path string) (slog.Level, map[string]string) {
	tb.Helper()
	// Generous: a request that waits out a stopped Redis logs only when its
	// reads give up, later still on a machine busy with the whole suite
	// (10 s ran out twice in clean-clone CI runs).
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		rs := slices.Clone(l.records[from:])
		l.mu.Unlock()
		for _, r := range rs {
			if a := attrs(r); r.Message == "http" && a["method"] == method && a["path"] == path {
				return r.Level, a
			}
		}
		if time.Now().After(deadline) {
			msgs := make([]string, 0, len(rs))
			for _, r := range rs {
				msgs = append(msgs, r.Message)
			}
			tb.Fatalf("no log line for %s %s (lines logged: %q)", method, path, msgs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRequestLogLevels: the answers a race produces by the thousand (every
// 409, 429, a token polled after it left) are logged at Debug and counted
// by code; other client errors at Info; server faults at Error.
func TestRequestLogLevels(t *testing.T) {
	rec := &logRecorder{}
	f := MustServerWith(t, FixtureOptions{Logger: slog.New(rec)})
	f.MustCreateEvent(t, EventBody("lv"))
	_, ahead := f.MustSession(t, "ahead")
	f.MustJoin(t, "lv", Bearer(ahead), actual) // capacity 1: whoever comes next waits
	_, tok := f.MustSession(t, "lv")
	waiting := f.MustJoin(t, "lv", Bearer(tok), actual).Str("token")
	limited := MustLimited(t, f, "sessions=1/m", false, nil)
	MustStatus(t, limited.MustDo(t, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": "first"}), http.StatusCreated)

	for _, tc := range []struct {
		name         string
		fixture      *Fixture
		method, path string
		hdr          map[string]string
		body         any
		status       int
		code         string
		level        slog.Level
	}{
		{"event exists", f, http.MethodPost, "/api/v1/admin/events", adminH, EventBody("lv"), 409, "EVENT_EXISTS", slog.LevelDebug},
		{"order before admission", f, http.MethodPost, "/api/v1/events/lv/orders", Bearer(tok),
			map[string]any{"token": waiting, "seat": "A-1"}, 409, "NOT_ACTIVE", slog.LevelDebug},
		{"token polled after it left", f, http.MethodGet, "/api/v1/events/lv/queue/gone-token", nil, nil, 404, "TOKEN_NOT_FOUND", slog.LevelDebug},
		{"rate limited", limited, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": "second"}, 429, "RATE_LIMITED", slog.LevelDebug},
		{"unknown event", f, http.MethodGet, "/api/v1/events/nope", nil, nil, 404, "EVENT_NOT_FOUND", slog.LevelInfo},
		{"bad nickname", f, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": ""}, 400, "BAD_REQUEST", slog.LevelInfo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := rec.Len()
			MustError(t, tc.fixture.MustDo(t, tc.method, tc.path, tc.hdr, tc.body), tc.status, tc.code)
			level, a := rec.MustRequestLine(t, from, tc.method, tc.path)
			if level != tc.level || a["status"] != strconv.Itoa(tc.status) || a["code"] != tc.code {
				t.Errorf("logged at %v with %v, want %v with status %d and code %s", level, a, tc.level, tc.status, tc.code)
			}
			if line := tc.fixture.MustMetric(t, `rushline_errors_total{code="`+tc.code+`"}`); line == "" {
				t.Errorf("rushline_errors_total has no %s series", tc.code)
			}
		})
	}
}

// TestRedisDownLogsAtError: a real fault stays an Error line.
func TestRedisDownLogsAtError(t *testing.T) {
	rec := &logRecorder{}
	f := MustServerWith(t, FixtureOptions{Logger: slog.New(rec)})
	if err := f.Redis.Stop(); err != nil {
		t.Fatal(err)
	}
	MustError(t, f.MustDo(t, http.MethodGet, "/api/v1/events/down", nil, nil), http.StatusServiceUnavailable, "UNAVAILABLE")
	if level, a := rec.MustRequestLine(t, 0, http.MethodGet, "/api/v1/events/down"); level != slog.LevelError {
		t.Errorf("Redis down: logged at %v (%v), want ERROR", level, a)
	}
}

// TestClientGoneLogsAtDebug: a join whose client hangs up while Redis is
// slow ends in a 503 nobody reads; in a flood of impatient clients that
// was one Error line each.
func TestClientGoneLogsAtDebug(t *testing.T) {
	rec := &logRecorder{}
	// A read from the stopped Redis gives up after 300 ms, not go-redis's
	// 3 s, so the join's pipeline, still waiting when the test ends, does
	// not hold up the fixture's shutdown.
	f := MustServerWith(t, FixtureOptions{Logger: slog.New(rec), RedisClient: []func(*redis.Options){func(o *redis.Options) {
		o.ReadTimeout, o.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	}}})
	f.MustCreateEvent(t, EventBody("gone"))
	_, tok := f.MustSession(t, "gone")
	pid := f.Redis.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	// The client sends the whole join and hangs up while Redis holds it up.
	// On a raw connection, so the request is surely in the server's socket
	// before the hang-up: an http.Client's WroteRequest trace fires before
	// the transport flushes, and a hang-up there lost the request in a
	// clean-clone CI run (no log line at all).
	req, _ := http.NewRequest(http.MethodPost, f.URL+"/api/v1/events/gone/queue", strings.NewReader(`{"user_type":"ACTUAL"}`))
	for k, v := range Bearer(tok) {
		req.Header.Set(k, v)
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	level, a := rec.MustRequestLine(t, 0, http.MethodPost, "/api/v1/events/gone/queue")
	if level != slog.LevelDebug || a["status"] != "503" {
		t.Errorf("client gone: logged at %v with %v, want DEBUG with status 503", level, a)
	}
}
