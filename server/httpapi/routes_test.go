package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/metrics"
)

// TestUnknownRoutesAndMethods: under /api/, a path that names no route and a
// known path called with another method answer in the API.md error shape
// through the one error path (the code counts in rushline_errors_total like
// any other), the 405 with Allow; other GETs still serve the web pages.
func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	web := fstest.MapFS{
		"index.html": {Data: []byte("<p>home</p>")},
		"app.js":     {Data: []byte("export const app = 1")},
	}
	api := httpapi.New(httpapi.Deps{Metrics: m, Web: web, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	f := &Fixture{URL: srv.URL, Client: srv.Client()}

	get, post, put, del := http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	errs := []struct {
		name, method, path string
		status             int
		code               string
		allow              []string
	}{
		{"unknown api route", get, "/api/v1/nope", 404, "NOT_FOUND", nil},
		{"unknown api route post", post, "/api/v1/nope", 404, "NOT_FOUND", nil},
		{"unknown api version", get, "/api/v2/events", 404, "NOT_FOUND", nil},
		{"unknown route with a body method outside the api", post, "/app.js", 404, "NOT_FOUND", nil},
		{"put on the event list", put, "/api/v1/events", 405, "METHOD_NOT_ALLOWED", []string{"GET"}},
		{"get on sessions", get, "/api/v1/sessions", 405, "METHOD_NOT_ALLOWED", []string{"POST"}},
		{"post on a queue token", post, "/api/v1/events/ev/queue/tok", 405, "METHOD_NOT_ALLOWED", []string{"GET", "DELETE"}},
		{"delete on an admin event", del, "/api/v1/admin/events/ev", 405, "METHOD_NOT_ALLOWED", []string{"PATCH"}},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, tc.method, tc.path, nil, nil)
			MustError(t, r, tc.status, tc.code)
			allow := r.Header.Get("Allow")
			for _, m := range tc.allow {
				if !strings.Contains(allow, m) {
					t.Errorf("Allow = %q, want it to list %s", allow, m)
				}
			}
			if tc.allow == nil && allow != "" {
				t.Errorf("Allow = %q on a %d", allow, r.Status)
			}
		})
	}

	pages := []struct{ name, path, want string }{
		{"a file", "/app.js", "export const app = 1"},
		{"the root", "/", "<p>home</p>"},
		{"a page path that names no file", "/practice/some-race", "<p>home</p>"},
	}
	for _, tc := range pages {
		t.Run(tc.name, func(t *testing.T) {
			r := f.MustDo(t, get, tc.path, nil, nil)
			MustStatus(t, r, http.StatusOK)
			if string(r.Raw) != tc.want {
				t.Errorf("body = %q, want %q", r.Raw, tc.want)
			}
		})
	}

	r := f.MustDo(t, get, "/metrics", nil, nil)
	MustStatus(t, r, http.StatusOK)
	for _, want := range []string{`rushline_errors_total{code="NOT_FOUND"} 4`, `rushline_errors_total{code="METHOD_NOT_ALLOWED"} 4`} {
		if !strings.Contains(string(r.Raw), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
