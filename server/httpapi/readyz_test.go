package httpapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rushline/rushline/server/httpapi"
)

// mustNotReady asserts a /readyz answer is 503 UNAVAILABLE with Retry-After
// that names exactly down, beside the error, and leaks no internals.
func mustNotReady(tb testing.TB, r *Response, down ...string) {
	tb.Helper()
	if r.Status != http.StatusServiceUnavailable || r.Str("status") != "unavailable" {
		tb.Fatalf("readyz = %s, want 503 unavailable", r)
	}
	if code, msg := r.Err(); code != "UNAVAILABLE" || !strings.Contains(msg, down[0]) {
		tb.Errorf("readyz error = %s %q, want UNAVAILABLE naming %s", code, msg, down[0])
	}
	var got []string
	list, _ := r.Body["down"].([]any)
	for _, d := range list {
		s, _ := d.(string)
		got = append(got, s)
	}
	if !slices.Equal(got, down) {
		tb.Errorf("readyz down = %q, want %q (%s)", got, down, r.Raw)
	}
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
		tb.Errorf("Retry-After = %q, want whole seconds >= 1", r.Header.Get("Retry-After"))
	}
	for _, s := range internalText {
		if strings.Contains(string(r.Raw), s) {
			tb.Errorf("readyz leaks %q: %s", s, r.Raw)
		}
	}
}

// TestReadyzNamesWhatIsDown: /readyz answers 200 when every check passes,
// else 503 naming the failing ones, sorted.
func TestReadyzNamesWhatIsDown(t *testing.T) {
	t.Parallel()
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("dial tcp 127.0.0.1:5432: connection refused") }
	for _, tc := range []struct {
		name            string
		redis, database func(context.Context) error
		want            []string
	}{
		// everything answers
		{"ready", up, up, nil},
		// SQL is away: the database, not the queue, is named
		{"database down", up, down, []string{"database"}},
		// Redis is away
		{"redis down", down, up, []string{"redis"}},
		// both
		{"both down", down, down, []string{"database", "redis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := httpapi.New(httpapi.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Ready: map[string]func(context.Context) error{"redis": tc.redis, "database": tc.database}})
			srv := httptest.NewServer(api.Handler())
			defer srv.Close()
			r := (&Fixture{URL: srv.URL, Client: srv.Client()}).MustDo(t, http.MethodGet, "/readyz", nil, nil)
			if tc.want == nil {
				MustStatus(t, r, http.StatusOK)
				if r.Str("status") != "ready" {
					t.Errorf("readyz = %s", r)
				}
				return
			}
			mustNotReady(t, r, tc.want...)
		})
	}
}

// TestReadyzNamesTheAuditBacklog: /readyz carries the audit backlog while
// there is one, ready or not, and stays ready on a backlog alone (joins go
// on while SQL catches up).
func TestReadyzNamesTheAuditBacklog(t *testing.T) {
	t.Parallel()
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("database away") }
	for _, tc := range []struct {
		name     string
		database func(context.Context) error
		backlog  int64
		want     int
	}{
		{"caught up", up, 0, http.StatusOK},
		{"catching up", up, 42, http.StatusOK},
		{"SQL away", down, 42, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := httpapi.New(httpapi.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Ready:        map[string]func(context.Context) error{"redis": up, "database": tc.database},
				AuditBacklog: func() int64 { return tc.backlog }})
			srv := httptest.NewServer(api.Handler())
			defer srv.Close()
			r := (&Fixture{URL: srv.URL, Client: srv.Client()}).MustDo(t, http.MethodGet, "/readyz", nil, nil)
			MustStatus(t, r, tc.want)
			got, present := r.Body["audit_backlog"].(float64)
			if int64(got) != tc.backlog || present != (tc.backlog > 0) {
				t.Errorf("audit_backlog = %v (present %v), want %d: %s", r.Body["audit_backlog"], present, tc.backlog, r.Raw)
			}
		})
	}
}
