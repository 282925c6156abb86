package httpapi_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/metrics"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/server/steps"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/server/store/storetest"
)

// quietRedis drops go-redis's own log lines (dial failures while a test
// has stopped Redis on purpose).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	os.Exit(m.Run())
}

// The fixed keys of every test server.
var testKeys = auth.Keys{
	Admin:     "test-admin-key",
	Simulator: "test-simulator-key",
	Service:   "test-service-key",
	JWTSecret: "test-jwt-secret",
}

// t0 is where every fixture clock starts: a whole second, so expiries are too.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// Clock is a settable clock shared by the engine and the signer. Safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now reads the clock.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Fixture is one API server on a private redis-server and SQLite store.
type Fixture struct {
	URL     string
	HTTP    *httptest.Server
	API     *httpapi.Server
	Client  *http.Client
	Redis   *redisproc.Process
	RDB     *redis.Client
	Store   *store.Store
	Engine  *queue.Engine
	Catalog *queue.Catalog
	Signer  *auth.Signer
	Keys    auth.Keys
	Metrics *metrics.Metrics
	Clock   *Clock
	// Push is the SSE hub, on a Redis client of its own.
	Push *push.Hub
	// Drops is the practice drop service (FixtureOptions.Drops), or nil.
	Drops *drop.Service
}

// testQueueTokenKey signs the queue tokens of every fixture.
var testQueueTokenKey = []byte("test-queue-token-key")

// testPushTick is how often a fixture's hub pushes places, and the least gap
// between two places to one stream: fast, so stream tests need not wait out
// the production defaults.
const testPushTick = 50 * time.Millisecond

// testStreamProbe is how often a fixture's streams check whether their
// client has gone: tests that close a stream need not wait out the 2 s
// default.
const testStreamProbe = 50 * time.Millisecond

// FixtureOptions adjust a fixture.
type FixtureOptions struct {
	// Redis adjust its redis-server (e.g. redistest.AppendOnly).
	Redis []func(*redisproc.Options)
	// RedisClient adjust the API's Redis client, after redistest.FailFast.
	RedisClient []func(*redis.Options)
	// Push adjust its SSE hub, after the fixture's own (tick and position
	// gap testPushTick, metrics observer, quiet logger).
	Push []push.Option
	// BindDevice is the server's device binding mode (httpapi.BindCookie, …).
	BindDevice string
	// Queue adjust its engine, after the fixture's clock (e.g. queue.WithBatching).
	Queue []queue.Option
	// Logger gets the API's log lines; nil drops them.
	Logger *slog.Logger
	// StreamCeiling is the server's stream ceiling (0: none).
	StreamCeiling int
	// TrustProxy takes the client's address from X-Forwarded-For.
	TrustProxy bool
	// RealClock runs the server on the real clock instead of the fixture's.
	RealClock bool
	// Dialect is its SQL store's (store.DialectSQLite when empty).
	Dialect string
	// Drops, when not nil, serves practice drops and solo races with a drop
	// service made with these options (its Run loop not started: no crowd
	// plays).
	Drops []drop.Option
	// Steps, when not nil, serves order steps with this flow per event.
	Steps steps.FlowFunc
}

// MustServer starts a fixture; redis options (e.g. redistest.AppendOnly)
// adjust its redis-server. Everything stops at the end of the test.
func MustServer(tb testing.TB, redisOpts ...func(*redisproc.Options)) *Fixture {
	tb.Helper()
	return MustServerWith(tb, FixtureOptions{Redis: redisOpts})
}

// MustServerWith starts a fixture adjusted by o. Everything stops at the end
// of the test.
func MustServerWith(tb testing.TB, o FixtureOptions) *Fixture {
	tb.Helper()
	p := redistest.MustStart(tb, o.Redis...)
	// FailFast: the tests that stop Redis get their 503s without waiting out
	// go-redis's default dial retries.
	rdb := redistest.MustClient(tb, p.Addr(), append([]func(*redis.Options){redistest.FailFast}, o.RedisClient...)...)
	// The hub's tails block on their connections: a client of their own, as in production.
	tails := redistest.MustClient(tb, p.Addr(), redistest.FailFast)
	st := storetest.MustOpen(tb, cmp.Or(o.Dialect, store.DialectSQLite))
	clk := &Clock{t: t0}
	now := clk.Now
	if o.RealClock {
		now = time.Now
	}
	eng := queue.New(rdb, testQueueTokenKey, append([]queue.Option{queue.WithClock(now)}, o.Queue...)...)
	tb.Cleanup(eng.Close)
	signer, err := auth.NewSigner([]byte(testKeys.JWTSecret), []byte(testKeys.Service), auth.WithClock(now))
	if err != nil {
		tb.Fatalf("signer: %v", err)
	}
	m := metrics.New()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hubOpts := append([]push.Option{push.WithTick(testPushTick), push.WithPositionEvery(testPushTick),
		push.WithObserver(m), push.WithLogger(quiet)}, o.Push...)
	hub := push.New(queue.New(tails, testQueueTokenKey, queue.WithClock(now)), hubOpts...)
	catalog := queue.NewCatalog(st, eng)
	var drops *drop.Service
	if o.Drops != nil {
		if drops, err = drop.New(eng, catalog, st, "fixture", append([]drop.Option{drop.WithLogger(quiet)}, o.Drops...)...); err != nil {
			tb.Fatalf("drops: %v", err)
		}
	}
	var races *practice.Service
	if drops != nil {
		races = practice.New(drops, eng)
	}
	var orderSteps *steps.Service
	if o.Steps != nil {
		orderSteps = steps.New(eng, rdb, o.Steps, steps.WithPresses(st))
	}
	api := httpapi.New(httpapi.Deps{
		Steps:    orderSteps,
		Drops:    drops,
		Practice: races,
		Engine:   eng,
		Catalog:  catalog,
		Signer:   signer,
		Keys:     testKeys,
		Metrics:  m,
		Push:     hub,
		Logger:   cmp.Or(o.Logger, quiet),
		// FAST TRACK grants kept in the fixture's SQL and Redis.
		Priority:      queue.NewPriority(st, eng),
		AdmissionLog:  st,
		BindDevice:    o.BindDevice,
		StreamCeiling: o.StreamCeiling,
		TrustProxy:    o.TrustProxy,
		StreamProbe:   testStreamProbe,
		Ready: map[string]func(context.Context) error{
			"redis":    func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
			"database": st.Ping,
		},
	})
	srv := httptest.NewServer(api.Handler())
	tb.Cleanup(srv.Close)
	// Runs before srv.Close: open streams end when the hub closes, so the
	// server need not wait for them.
	tb.Cleanup(hub.Close)
	client := srv.Client()
	client.Timeout = 30 * time.Second
	return &Fixture{
		URL: srv.URL, HTTP: srv, API: api, Client: client, Redis: p, RDB: rdb, Store: st,
		Engine: eng, Catalog: api.Catalog, Signer: signer, Keys: testKeys, Metrics: m, Clock: clk, Push: hub,
		Drops: drops,
	}
}

// H builds request headers from key, value pairs.
func H(kv ...string) map[string]string {
	h := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// Bearer is the header of a user's access token.
func Bearer(token string) map[string]string { return H("Authorization", "Bearer "+token) }

// Headers of the three server keys, right and wrong.
var (
	adminH    = H("X-Admin-Key", testKeys.Admin)
	simH      = H("X-Simulator-Key", testKeys.Simulator)
	serviceH  = H("X-Service-Key", testKeys.Service)
	badAdminH = H("X-Admin-Key", "not-the-admin-key")
	badSimH   = H("X-Simulator-Key", "not-the-simulator-key")
)

// Merge joins header maps; later ones win.
func Merge(hs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}

// Response is one answer of the API.
type Response struct {
	Status int
	Header http.Header
	// Body is the decoded JSON object; nil when the body is not one.
	Body map[string]any
	Raw  []byte
}

// Err returns the error code and message of an error body.
func (r *Response) Err() (code, message string) {
	e, _ := r.Body["error"].(map[string]any)
	code, _ = e["code"].(string)
	message, _ = e["message"].(string)
	return code, message
}

// Str returns a string field of the body.
func (r *Response) Str(field string) string { s, _ := r.Body[field].(string); return s }

// Num returns a number field of the body; ok is false when it is absent.
func (r *Response) Num(field string) (float64, bool) { n, ok := r.Body[field].(float64); return n, ok }

func (r *Response) String() string {
	return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Raw))
}

// Do sends one request. body is sent as is when it is a string, []byte or
// io.Reader (a reader is sent chunked), as JSON otherwise, and not at all when nil.
// It is safe for concurrent use; use it off the test goroutine.
func (f *Fixture) Do(method, path string, headers map[string]string, body any) (*Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = struct{ io.Reader }{b} // hide the length: chunked
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, f.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := f.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	r := &Response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r, nil
}

// MustDo is Do that fails the test on a transport error.
func (f *Fixture) MustDo(tb testing.TB, method, path string, headers map[string]string, body any) *Response {
	tb.Helper()
	r, err := f.Do(method, path, headers, body)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// MustStatus asserts the status of r.
func MustStatus(tb testing.TB, r *Response, want int) {
	tb.Helper()
	if r.Status != want {
		tb.Fatalf("status = %s, want %d", r, want)
	}
}

// internalText are fragments of Go or Redis error strings no client may see.
var internalText = []string{"dial tcp", "redis:", "connection refused", "127.0.0.1", "goroutine", ".go:", "EOF", "i/o timeout", "queue:", "sql:", "gorm"}

// MustError asserts r is an API error: the status, the code, a non-empty
// message and the {"error": {"code", "message"}} shape; a 5xx must not leak
// internals.
func MustError(tb testing.TB, r *Response, status int, code string) {
	tb.Helper()
	if r.Status != status {
		tb.Fatalf("status = %s, want %d %s", r, status, code)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("Content-Type = %q, want application/json", ct)
	}
	if len(r.Body) != 1 || r.Body["error"] == nil {
		tb.Fatalf("body = %s, want exactly {\"error\": {...}}", r.Raw)
	}
	got, msg := r.Err()
	if got != code {
		tb.Fatalf("error code = %q, want %q (body %s)", got, code, r.Raw)
	}
	if strings.TrimSpace(msg) == "" {
		tb.Errorf("error message is empty: %s", r.Raw)
	}
	if status >= 500 {
		for _, s := range internalText {
			if strings.Contains(string(r.Raw), s) {
				tb.Errorf("5xx body leaks %q: %s", s, r.Raw)
			}
		}
	}
}

// MustSession makes a guest session and returns its user id and access token.
func (f *Fixture) MustSession(tb testing.TB, nickname string) (userID, token string) {
	tb.Helper()
	r := f.MustDo(tb, http.MethodPost, "/api/v1/sessions", nil, map[string]any{"nickname": nickname})
	MustStatus(tb, r, http.StatusCreated)
	userID, token = r.Str("user_id"), r.Str("access_token")
	if !strings.HasPrefix(userID, "u_") || token == "" {
		tb.Fatalf("session body = %s", r.Raw)
	}
	return userID, token
}

// EventBody is a valid create-event body for id: capacity 1, batch 10,
// 100 ms interval, 300 s windows. kv pairs override or add fields; a nil
// value removes one.
func EventBody(id string, kv ...any) map[string]any {
	b := map[string]any{
		"id": id, "name": "Event " + id, "seats": 10, "capacity": 1, "admit_batch": 10,
		"admit_interval_ms": 100, "active_ttl_s": 300, "policy": "capacity",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(b, k)
			continue
		}
		b[k] = kv[i+1]
	}
	return b
}

// MustCreateEvent creates an event as admin and returns the answer's body.
func (f *Fixture) MustCreateEvent(tb testing.TB, body map[string]any) map[string]any {
	tb.Helper()
	r := f.MustDo(tb, http.MethodPost, "/api/v1/admin/events", adminH, body)
	MustStatus(tb, r, http.StatusCreated)
	return r.Body
}

// MustJoin joins eventID with headers and body and asserts 200 or 201.
func (f *Fixture) MustJoin(tb testing.TB, eventID string, headers map[string]string, body any) *Response {
	tb.Helper()
	r := f.MustDo(tb, http.MethodPost, "/api/v1/events/"+eventID+"/queue", headers, body)
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		tb.Fatalf("join %s: %s", eventID, r)
	}
	if r.Str("token") == "" {
		tb.Fatalf("join %s: no token in %s", eventID, r.Raw)
	}
	return r
}

// actual is the body of an ACTUAL join.
var actual = map[string]any{"user_type": "ACTUAL"}

// MustTick moves the clock on by a second, so a tick is due, and runs it as
// the only replica.
func (f *Fixture) MustTick(tb testing.TB, eventID string) queue.TickResult {
	tb.Helper()
	f.Clock.Advance(time.Second)
	res, err := f.Engine.Tick(context.Background(), eventID, "test-replica", time.Minute)
	if err != nil {
		tb.Fatalf("tick %s: %v", eventID, err)
	}
	return res
}

// MustSnapshot captures what a failed call must leave alone: the event list,
// each event with its stats, and the length of each event's record stream.
func (f *Fixture) MustSnapshot(tb testing.TB, eventIDs ...string) string {
	tb.Helper()
	var b strings.Builder
	r := f.MustDo(tb, http.MethodGet, "/api/v1/events", nil, nil)
	MustStatus(tb, r, http.StatusOK)
	b.Write(r.Raw)
	for _, id := range eventIDs {
		r := f.MustDo(tb, http.MethodGet, "/api/v1/events/"+id, nil, nil)
		MustStatus(tb, r, http.StatusOK)
		recs, err := f.Engine.Records(context.Background(), id, "0", 1<<20)
		if err != nil {
			tb.Fatalf("records %s: %v", id, err)
		}
		fmt.Fprintf(&b, "\n%s records=%d", r.Raw, len(recs))
	}
	return b.String()
}
