package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/queue"
)

// filled returns an entryJSON with every field set, through reflection, so
// a field added to the type is caught when appendJSON misses it.
func filled(t *testing.T) entryJSON {
	t.Helper()
	var b entryJSON
	v := reflect.ValueOf(&b).Elem()
	at := time.Date(2026, 11, 22, 10, 0, 1, 500_000_000, time.UTC)
	n := int64(7)
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x-" + v.Type().Field(i).Name)
		case reflect.Int64:
			f.SetInt(int64(100 + i))
		case reflect.Pointer:
			switch f.Type().Elem() {
			case reflect.TypeFor[time.Time]():
				f.Set(reflect.ValueOf(&at))
			case reflect.TypeFor[int64]():
				f.Set(reflect.ValueOf(&n))
			default:
				t.Fatalf("field %s: appendJSON knows no %s", v.Type().Field(i).Name, f.Type())
			}
		default:
			t.Fatalf("field %s: appendJSON knows no %s", v.Type().Field(i).Name, f.Type())
		}
	}
	return b
}

func TestEntryJSONMatchesEncodingJSON(t *testing.T) {
	eta := int64(0)
	exp := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		b    entryJSON
	}{
		// Every field set: none may be missing from appendJSON.
		{"every field", filled(t)},
		// A join answer while waiting, with a zero ETA that must still show.
		{"waiting join", entryJSON{Token: "tok_1", UserID: "u_1", UserType: queue.UserActual, Status: queue.StatusWaiting,
			Seq: 3, Position: 3, Waiting: 3, ETASeconds: &eta}},
		// A status answer while active: no identity, times and pass.
		{"active status", entryJSON{Status: queue.StatusActive, Seq: 1, Pass: "a.b.c", ExpiresAt: &exp, AdmittedAt: &exp,
			AdmissionNo: 1, AdmittedTotal: 1}},
		// Zero values where omitempty drops them and where it does not.
		{"zero", entryJSON{}},
		// Strings encoding/json escapes: quotes, HTML, control and non-ASCII.
		{"escapes", entryJSON{Token: `a"b\c`, UserID: "<script>&", Status: "WAITING\n", Pass: "ümlaut\u2028"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.b.appendJSON(nil); string(got) != string(want) {
				t.Errorf("appendJSON\n got %s\nwant %s", got, want)
			}
		})
	}
}

func BenchmarkEntryJSON(b *testing.B) {
	eta := int64(12)
	e := entryJSON{Token: "tok_0123456789abcdef", UserID: "u_0123456789", UserType: queue.UserActual,
		Status: queue.StatusWaiting, Seq: 123456, Position: 123456, Waiting: 1000000, ETASeconds: &eta}
	for _, bc := range []struct {
		name string
		enc  func() []byte
	}{
		{"enc=append", func() []byte { return e.appendJSON(make([]byte, 0, 512)) }},
		{"enc=encoding_json", func() []byte { js, _ := json.Marshal(e); return js }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.enc()
			}
		})
	}
}

func TestRequestLogAndLatency(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level
		path  string
		line  bool
	}{
		// A success writes no line at the default level...
		{"success at info", slog.LevelInfo, "/healthz", false},
		// ...but does with debug logging on.
		{"success at debug", slog.LevelDebug, "/healthz", true},
		// A failure is always logged.
		{"failure at info", slog.LevelInfo, "/api/v1/nowhere", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := New(Deps{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level}))})
			for range 2 {
				s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
			}
			if got := strings.Count(logs.String(), "msg=http"); got != map[bool]int{true: 2}[tc.line] {
				t.Errorf("%d request lines, want line=%v:\n%s", got, tc.line, logs.String())
			}
			// Both requests land in one latency series, logged or not.
			mfs, err := s.metrics.Registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() != "rushline_http_request_duration_seconds" {
					continue
				}
				if len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetHistogram().GetSampleCount() != 2 {
					t.Errorf("latency series %v, want one with 2 samples", mf.GetMetric())
				}
			}
		})
	}
}
