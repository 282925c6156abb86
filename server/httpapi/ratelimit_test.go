package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/metrics"
	"github.com/rushline/rushline/server/ratelimit"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// MustLimited serves f's API again, as another replica would, with the rate
// limits of spec counted in rdb (f's Redis when nil) and metrics of its own.
// f itself stays unlimited, for setting up.
func MustLimited(tb testing.TB, f *Fixture, spec string, trustProxy bool, rdb redis.Scripter) *Fixture {
	tb.Helper()
	rules, err := ratelimit.Parse(spec)
	if err != nil {
		tb.Fatalf("rules: %v", err)
	}
	if rdb == nil {
		rdb = redistest.MustClient(tb, f.Redis.Addr(), redistest.FailFast)
	}
	d := f.API.Deps
	d.Limiter, d.TrustProxy, d.Metrics = ratelimit.New(rdb, rules), trustProxy, metrics.New()
	api := httpapi.New(d)
	srv := httptest.NewServer(api.Handler())
	tb.Cleanup(srv.Close)
	g := *f
	g.URL, g.HTTP, g.API, g.Client, g.Metrics = srv.URL, srv, api, srv.Client(), d.Metrics
	g.Client.Timeout = 30 * time.Second
	return &g
}

// MustRateLimited asserts r is a 429 RATE_LIMITED with a Retry-After of 1 to maxSecs.
func MustRateLimited(tb testing.TB, r *Response, maxSecs int) {
	tb.Helper()
	MustError(tb, r, http.StatusTooManyRequests, "RATE_LIMITED")
	n, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || n < 1 || n > maxSecs {
		tb.Fatalf("Retry-After = %q, want 1..%d seconds", r.Header.Get("Retry-After"), maxSecs)
	}
}

// MustMetric returns the /metrics line that starts with prefix, "" if none.
func (f *Fixture) MustMetric(tb testing.TB, prefix string) string {
	tb.Helper()
	r := f.MustDo(tb, http.MethodGet, "/metrics", nil, nil)
	MustStatus(tb, r, http.StatusOK)
	for line := range strings.Lines(string(r.Raw)) {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// deadRedis is a client of an address nothing listens on.
func deadRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	// A socket path nothing listens on: unlike a loopback port let go, no
	// Redis another test starts can take it. Its folder is short, as a
	// socket path must be (104 bytes on macOS), which TempDir's may not be.
	dir, err := os.MkdirTemp("", "rl")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: filepath.Join(dir, "none.sock"), MaxRetries: -1})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestRateLimitAfterBurst(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl", "capacity", 100))
	_, alice := f.MustSession(t, "alice")
	_, bob := f.MustSession(t, "bob")
	_, carol := f.MustSession(t, "carol")
	tok := f.MustJoin(t, "rl", Bearer(alice), actual).Str("token")
	// One call a minute refills: the test never sees a refill.
	g := MustLimited(t, f, "join=1/m:2,status=1/m:3,seats=1/m:1", false, nil)

	// join: the burst of 2, then 429 with Retry-After up to the refill.
	MustStatus(t, g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(alice), actual), http.StatusOK)
	MustStatus(t, g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(bob), actual), http.StatusCreated)
	MustRateLimited(t, g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(carol), actual), 60)
	// status has a budget of its own.
	for range 3 {
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), http.StatusOK)
	}
	MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), 60)
	// seats: failed calls count too.
	MustError(t, g.MustDo(t, http.MethodGet, "/api/v1/events/rl/seats", nil, nil), http.StatusUnauthorized, "UNAUTHENTICATED")
	MustRateLimited(t, g.MustDo(t, http.MethodGet, "/api/v1/events/rl/seats", H("X-Queue-Token", tok), nil), 60)
	// Routes without a rule are not limited.
	for range 5 {
		MustStatus(t, g.MustDo(t, http.MethodGet, "/api/v1/events/rl", nil, nil), http.StatusOK)
	}
	// The limited calls are counted per route.
	for route, want := range map[string]string{"join": "1", "status": "1", "seats": "1", "orders": ""} {
		line := g.MustMetric(t, `rushline_rate_limited_total{route="`+route+`"}`)
		if got := strings.TrimSpace(strings.TrimPrefix(line, `rushline_rate_limited_total{route="`+route+`"}`)); got != want {
			t.Errorf("metric for %s = %q, want %q", route, line, want)
		}
	}
	if code := g.MustMetric(t, `rushline_errors_total{code="RATE_LIMITED"}`); !strings.HasSuffix(code, " 3") {
		t.Errorf("errors metric = %q, want 3 RATE_LIMITED", code)
	}
}

// TestRateLimitPrecedence: a limited call gets 429 whatever else is wrong
// with it (API.md: 429 first).
func TestRateLimitPrecedence(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl"))
	_, alice := f.MustSession(t, "alice")
	_, bob := f.MustSession(t, "bob")
	g := MustLimited(t, f, "1/m:1", false, nil)
	r := g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(alice), actual)
	MustStatus(t, r, http.StatusCreated)
	tok := r.Str("token")
	post := http.MethodPost
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    any
	}{
		// 400 otherwise.
		{"malformed body", post, "/api/v1/events/rl/queue", Bearer(alice), `{"user_type":`},
		// 413 otherwise.
		{"body too large", post, "/api/v1/events/rl/queue", Bearer(alice), `{"user_type":"` + strings.Repeat("x", httpapi.MaxBody) + `"}`},
		// 413 otherwise, sent chunked.
		{"chunked too large", post, "/api/v1/events/rl/queue", Bearer(alice), strings.NewReader(strings.Repeat(" ", httpapi.MaxBody+1))},
		// 401 otherwise.
		{"no credential", post, "/api/v1/events/rl/queue", nil, actual},
		// 401 otherwise.
		{"bad bearer", post, "/api/v1/events/rl/queue", Bearer("nope"), actual},
		// 403 otherwise: a wrong simulator key is no exemption.
		{"wrong simulator key", post, "/api/v1/events/rl/queue", badSimH, map[string]any{"user_type": "VIRTUAL"}},
		// 404 otherwise.
		{"unknown event", post, "/api/v1/events/nope/queue", Bearer(alice), actual},
		// 404 otherwise.
		{"unknown token", http.MethodGet, qpath("rl", "nope"), nil, nil},
		// 400 otherwise.
		{"order with a bad body", post, "/api/v1/events/rl/orders", Bearer(alice), `[1]`},
		// 403 TOKEN_OWNER_MISMATCH otherwise.
		{"another user's token", post, "/api/v1/events/rl/orders", Bearer(bob), map[string]any{"token": tok, "seat": "A-1"}},
		// 403 TOKEN_OWNER_MISMATCH otherwise.
		{"leave another user's token", http.MethodDelete, qpath("rl", tok), Bearer(bob), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each route has its own budget: spend it first.
			_, _ = g.Do(tc.method, tc.path, tc.headers, nil)
			MustRateLimited(t, g.MustDo(t, tc.method, tc.path, tc.headers, tc.body), 60)
		})
	}
}

// TestRateLimitShared: two replicas on one Redis share each client's budget.
func TestRateLimitShared(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl"))
	a := MustLimited(t, f, "join=1/m:2", false, nil)
	b := MustLimited(t, f, "join=1/m:2", false, nil)
	var users []string
	for _, n := range []string{"alice", "bob", "carol", "dave"} {
		_, tok := f.MustSession(t, n)
		users = append(users, tok)
	}
	MustStatus(t, a.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(users[0]), actual), http.StatusCreated)
	MustStatus(t, b.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(users[1]), actual), http.StatusCreated)
	MustRateLimited(t, a.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(users[2]), actual), 60)
	MustRateLimited(t, b.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", Bearer(users[3]), actual), 60)
}

// TestRateLimitExempt: valid simulator and admin keys are never limited; a
// wrong key is.
func TestRateLimitExempt(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl", "capacity", 100))
	_, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "rl", Bearer(alice), actual).Str("token")
	g := MustLimited(t, f, "1/m:1", false, nil)
	virtual := map[string]any{"user_type": "VIRTUAL"}
	for range 5 {
		r := g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", simH, virtual)
		MustStatus(t, r, http.StatusCreated)
		// A bot's own status call carries the key too.
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", r.Str("token")), simH, nil), http.StatusOK)
		// An admin looking at a user's place.
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), adminH, nil), http.StatusOK)
	}
	// A wrong simulator key: 403 once, then limited.
	MustError(t, g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", badSimH, virtual), http.StatusForbidden, "FORBIDDEN")
	MustRateLimited(t, g.MustDo(t, http.MethodPost, "/api/v1/events/rl/queue", badSimH, virtual), 60)
	// A wrong admin key on a status call: the budget's one call, then limited.
	MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), badAdminH, nil), http.StatusOK)
	MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), badAdminH, nil), 60)
	// An empty key is none.
	MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), H("X-Simulator-Key", " "), nil), 60)
}

// TestRateLimitClientAddress: X-Forwarded-For names the client only behind
// --trust-proxy; otherwise it is ignored and the peer address counts.
func TestRateLimitClientAddress(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl", "capacity", 100))
	_, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "rl", Bearer(alice), actual).Str("token")
	xff := func(ip string) map[string]string { return H("X-Forwarded-For", ip) }
	// Each case starts with the peer's budget unspent.
	forgetPeer := func(t *testing.T) {
		if err := f.RDB.Del(context.Background(), ratelimit.KeyPrefix+"status:127.0.0.1").Err(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("untrusted", func(t *testing.T) {
		forgetPeer(t)
		g := MustLimited(t, f, "status=1/m:1", false, nil)
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("203.0.113.1"), nil), http.StatusOK)
		// A forged header does not buy a new budget.
		MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("203.0.113.2"), nil), 60)
		MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), H("X-Real-IP", "203.0.113.3"), nil), 60)
	})
	t.Run("trusted", func(t *testing.T) {
		forgetPeer(t)
		g := MustLimited(t, f, "status=1/m:1", true, nil)
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("203.0.113.1"), nil), http.StatusOK)
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("203.0.113.2"), nil), http.StatusOK)
		// The address our proxy added counts; one the client sent ahead of it does not.
		MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("198.51.100.7, 203.0.113.1"), nil), 60)
		// The last of several header lines.
		req, err := http.NewRequest(http.MethodGet, g.URL+qpath("rl", tok), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Add("X-Forwarded-For", "198.51.100.8")
		req.Header.Add("X-Forwarded-For", "203.0.113.2")
		res, err := g.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("two header lines: status %d, want 429", res.StatusCode)
		}
		// Another spelling of one address is the same client.
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("2001:db8::1"), nil), http.StatusOK)
		MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("2001:0db8:0:0::1"), nil), 60)
		// Without the header, the proxy's own address.
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), http.StatusOK)
		MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), 60)
		// A header that is no address does not name a client: the peer counts.
		MustRateLimited(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), xff("not-an-ip"), nil), 60)
	})
}

// TestRateLimitOffByDefault: with no limiter, nothing is limited and no
// limiter metric is exported.
func TestRateLimitOffByDefault(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl"))
	_, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "rl", Bearer(alice), actual).Str("token")
	for range 50 {
		MustStatus(t, f.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), http.StatusOK)
	}
	if line := f.MustMetric(t, "rushline_rate_limit"); line != "" {
		t.Errorf("metrics has %q with no limits", line)
	}
	// "off" parses to no rules, and a limiter without rules installs nothing.
	g := MustLimited(t, f, "off", false, deadRedis(t))
	for range 5 {
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), http.StatusOK)
	}
	if line := g.MustMetric(t, "rushline_rate_limit"); line != "" {
		t.Errorf("metrics has %q with limits off", line)
	}
}

// TestRateLimitFailsOpen: when the limiter cannot reach Redis, calls go
// through, are counted, and a real outage answers 503 from the handler.
func TestRateLimitFailsOpen(t *testing.T) {
	t.Parallel()
	f := MustServer(t)
	f.MustCreateEvent(t, EventBody("rl", "capacity", 100))
	_, alice := f.MustSession(t, "alice")
	tok := f.MustJoin(t, "rl", Bearer(alice), actual).Str("token")

	g := MustLimited(t, f, "1/m:1", false, deadRedis(t))
	for range 5 {
		MustStatus(t, g.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), http.StatusOK)
	}
	if line := g.MustMetric(t, "rushline_rate_limit_errors_total"); line != "rushline_rate_limit_errors_total 5" {
		t.Errorf("failure metric = %q, want 5", line)
	}

	// The limiter and the queue share a Redis, and it goes away.
	h := MustLimited(t, f, "1/m:1", false, nil)
	MustStatus(t, h.MustDo(t, http.MethodGet, qpath("rl", tok), nil, nil), http.StatusOK)
	if err := f.Redis.Stop(); err != nil {
		t.Fatalf("stop redis: %v", err)
	}
	for _, path := range []string{qpath("rl", tok), qpath("rl", tok)} {
		r := h.MustDo(t, http.MethodGet, path, nil, nil)
		MustError(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
	}
}
