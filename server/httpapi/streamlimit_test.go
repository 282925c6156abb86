package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/simulator/sse"
)

// mustRefused asserts a stream request answers status and code with a
// Retry-After of whole seconds.
func mustRefused(tb testing.TB, r *Response, status int, code string) {
	tb.Helper()
	MustError(tb, r, status, code)
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
		tb.Errorf("Retry-After = %q, want whole seconds >= 1", r.Header.Get("Retry-After"))
	}
}

// mustStreamEventually opens a stream at path once the server takes it: a
// closed stream's place comes back when the server notices the client left.
func (f *Fixture) mustStreamEventually(tb testing.TB, path string) {
	tb.Helper()
	f.mustStreamVia(tb, &http.Client{Transport: f.Client.Transport}, path)
}

// mustStreamVia is mustStreamEventually through client.
func (f *Fixture) mustStreamVia(tb testing.TB, client *http.Client, path string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := sse.Open(ctx, client, f.URL+path, "")
		if err == nil {
			tb.Cleanup(func() { cancel(); _ = s.Close() })
			return
		}
		cancel()
		var se *sse.StatusError
		if !errors.As(err, &se) || time.Now().After(deadline) {
			tb.Fatalf("stream %s not taken again: %v", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStreamsPerToken: a token holds at most 4 open streams; a fifth answers
// 429 and the four go on, other tokens are not affected, and a closed
// stream's place comes back.
func TestStreamsPerToken(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	aliceTok, alice, bobID, bobTok := f.waitingSetup(t, "tabs")
	_, carol := f.MustSession(t, "carol")
	carolTok := f.MustJoin(t, "tabs", Bearer(carol), actual).Str("token")
	tabs := make([]*LiveStream, httpapi.MaxStreamsPerToken)
	for i := range tabs {
		tabs[i] = f.MustOpenStream(t, "tabs", bobTok, "")
		mustPosition(t, tabs[i].Next(t))
	}
	for range 3 {
		mustRefused(t, f.MustDo(t, http.MethodGet, spath("tabs", bobTok), nil, nil), http.StatusTooManyRequests, "RATE_LIMITED")
	}
	other := f.MustOpenStream(t, "tabs", carolTok, "")
	mustPosition(t, other.Next(t))
	f.mustMetricEventually(t, `rushline_streams_refused_total{reason="token"}`, "3 refusals", func(v float64, ok bool) bool { return ok && v == 3 })

	// The four stay: each gets its admission.
	f.mustPromoteBob(t, "tabs", aliceTok, alice)
	want := f.mustActive(t, "tabs", bobTok)
	for _, st := range tabs {
		mustSame(t, mustAdmitted(t, untilNot(t, st, "position")), want)
		st.MustEnd(t)
	}
	f.mustPass(t, want.Pass, "tabs", bobID, bobTok)

	// A client that goes away gives its place back.
	_, dave := f.MustSession(t, "dave")
	daveTok := f.MustJoin(t, "tabs", Bearer(dave), actual).Str("token")
	for i := range tabs {
		tabs[i] = f.MustOpenStream(t, "tabs", daveTok, "")
		mustPosition(t, tabs[i].Next(t))
	}
	mustRefused(t, f.MustDo(t, http.MethodGet, spath("tabs", daveTok), nil, nil), http.StatusTooManyRequests, "RATE_LIMITED")
	tabs[0].Close()
	f.mustStreamEventually(t, spath("tabs", daveTok))
}

// TestStreamCeiling: beyond the server's stream ceiling, queue and stats
// streams answer 503 with Retry-After while every other call answers.
func TestStreamCeiling(t *testing.T) {
	t.Parallel()
	const ceiling = 3
	f := MustServerWith(t, FixtureOptions{StreamCeiling: ceiling})
	_, _, _, bobTok := f.waitingSetup(t, "full")
	tokens := make([]string, 3)
	for i := range tokens {
		tokens[i] = f.MustJoin(t, "full", simH, map[string]any{"user_type": "VIRTUAL"}).Str("token")
	}
	mustPosition(t, f.MustOpenStream(t, "full", bobTok, "").Next(t))
	mustPosition(t, f.MustOpenStream(t, "full", tokens[0], "").Next(t))
	stats := f.MustOpenPath(t, "/api/v1/events/full/stats/stream", "")
	if m := stats.Next(t); m.Event != "stats" {
		t.Fatalf("stats stream: %+v", m)
	}

	mustRefused(t, f.MustDo(t, http.MethodGet, spath("full", tokens[1]), nil, nil), http.StatusServiceUnavailable, "UNAVAILABLE")
	mustRefused(t, f.MustDo(t, http.MethodGet, "/api/v1/events/full/stats/stream", nil, nil), http.StatusServiceUnavailable, "UNAVAILABLE")
	MustStatus(t, f.MustDo(t, http.MethodGet, "/healthz", nil, nil), http.StatusOK)
	MustStatus(t, f.MustDo(t, http.MethodGet, qpath("full", tokens[1]), nil, nil), http.StatusOK)
	f.MustJoin(t, "full", simH, map[string]any{"user_type": "VIRTUAL"})
	for series, want := range map[string]float64{
		`rushline_streams_refused_total{reason="ceiling"}`: 2,
		"rushline_streams_ceiling":                         ceiling,
		"rushline_streams_open":                            ceiling,
	} {
		f.mustMetricEventually(t, series, strconv.FormatFloat(want, 'f', -1, 64), func(v float64, ok bool) bool { return ok && v == want })
	}

	// A stream that ends gives its place back.
	stats.Close()
	f.mustStreamEventually(t, spath("full", tokens[1]))
	if m := f.MustDo(t, http.MethodGet, "/metrics", nil, nil); !strings.Contains(string(m.Raw), "rushline_streams_open 3") {
		t.Errorf("/metrics: want rushline_streams_open 3")
	}
}

// forwardedFor sends every request as if a proxy had seen it from addr.
type forwardedFor struct {
	addr string
	next http.RoundTripper
}

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return f.next.RoundTrip(r)
}

// TestStatsStreamsPerAddress: one client address holds at most
// MaxStatsStreamsPerAddress public stats streams; the next answers 429 while
// another address still gets one, and a closed stream's place comes back.
func TestStatsStreamsPerAddress(t *testing.T) {
	t.Parallel()
	f := MustServerWith(t, FixtureOptions{TrustProxy: true})
	f.MustCreateEvent(t, map[string]any{"id": "watched", "seats": 10, "capacity": 5, "admit_batch": 5,
		"admit_interval_ms": 1000, "active_ttl_s": 60, "policy": "batch"})
	const path = "/api/v1/events/watched/stats/stream"
	from := func(addr string) *http.Client {
		return &http.Client{Transport: forwardedFor{addr: addr, next: f.Client.Transport}}
	}
	open := func(c *http.Client) (*sse.Stream, error) {
		ctx, cancel := context.WithCancel(context.Background())
		s, err := sse.Open(ctx, c, f.URL+path, "")
		if err != nil {
			cancel()
			return nil, err
		}
		t.Cleanup(func() { cancel(); _ = s.Close() })
		return s, nil
	}
	screens := from("203.0.113.7")
	held := make([]*sse.Stream, httpapi.MaxStatsStreamsPerAddress)
	for i := range held {
		s, err := open(screens)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		held[i] = s
	}
	_, err := open(screens)
	var se *sse.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests {
		t.Fatalf("stream %d from one address: %v, want 429", len(held)+1, err)
	}
	if _, err := open(from("198.51.100.9")); err != nil {
		t.Fatalf("another address: %v", err)
	}
	f.mustMetricEventually(t, `rushline_streams_refused_total{reason="address"}`, "1 refusal", func(v float64, ok bool) bool { return ok && v == 1 })
	held[0].Close()
	f.mustStreamVia(t, screens, path)
}

func TestDefaultStreamCeiling(t *testing.T) {
	for _, tc := range []struct {
		name        string
		descriptors uint64
		want        int
	}{
		{"common default", 1024, 768},    // a quarter kept back
		{"this machine", 20_000, 15_000}, // a quarter kept back
		{"small", 256, 128},              // at least 128 kept back
		{"tiny", 100, 50},                // at most half kept back
		{"large", 1 << 20, 3 << 18},      // a quarter kept back
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := httpapi.DefaultStreamCeiling(tc.descriptors); got != tc.want {
				t.Fatalf("DefaultStreamCeiling(%d) = %d, want %d", tc.descriptors, got, tc.want)
			}
		})
	}
}
