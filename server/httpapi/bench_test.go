package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rushline/rushline/server/queue"
)

// request builds one request as a client would send it.
func request(method, path string, headers map[string]string, body string) *http.Request {
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// sink is a ResponseWriter that keeps the status alone, reused from one
// request to the next, so a benchmark counts the handler's work and not a
// recorder's.
type sink struct {
	h    http.Header
	code int
}

func (s *sink) Header() http.Header { return s.h }

func (s *sink) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}

func (s *sink) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

// serve runs req through h on s and returns the status.
func (s *sink) serve(h http.Handler, req *http.Request) int {
	clear(s.h)
	s.code = 0
	h.ServeHTTP(s, req)
	return s.code
}

// BenchmarkHandler runs join (new ACTUAL users: auth, decode, the join
// script, the answer) and status (1,000 waiting tokens) through the
// handler in process on a real Redis, with and without batching, from
// ~64 goroutines at once. Session tokens are signed before the clock runs.
func BenchmarkHandler(b *testing.B) {
	const body = `{"user_type":"ACTUAL"}`
	for _, batching := range []struct {
		name string
		cfg  queue.Batching
	}{{"on", queue.DefaultBatching}, {"off", queue.Batching{}}} {
		f := MustServerWith(b, FixtureOptions{Queue: []queue.Option{queue.WithBatching(batching.cfg)}})
		f.MustCreateEvent(b, EventBody("bench", "capacity", 1))
		h := f.API.Handler()
		tokens := make([]string, 1000)
		for i := range tokens {
			en, _, err := f.Engine.Join(context.Background(), "bench", "u_status"+strconv.Itoa(i))
			if err != nil {
				b.Fatal(err)
			}
			tokens[i] = en.Token
		}
		var users atomic.Int64
		for _, op := range []struct {
			name string
			// prepare returns the i-th request's path and headers.
			prepare func(b *testing.B, i int) (string, map[string]string)
			method  string
			body    string
			want    int
		}{
			{"join", func(b *testing.B, _ int) (string, map[string]string) {
				tok, _, err := f.Signer.IssueSession("u_bench"+strconv.FormatInt(users.Add(1), 10), "bench")
				if err != nil {
					b.Fatal(err)
				}
				return "/api/v1/events/bench/queue", Bearer(tok)
			}, http.MethodPost, body, http.StatusCreated},
			{"status", func(_ *testing.B, i int) (string, map[string]string) {
				return qpath("bench", tokens[i%len(tokens)]), nil
			}, http.MethodGet, "", http.StatusOK},
		} {
			b.Run(fmt.Sprintf("op=%s/batching=%s", op.name, batching.name), func(b *testing.B) {
				mustTopUp(b, f, "bench")
				// The requests are built before the clock runs, as a
				// client would have sent them.
				reqs := make([]*http.Request, b.N)
				for i := range reqs {
					path, headers := op.prepare(b, i)
					reqs[i] = request(op.method, path, headers, op.body)
				}
				var n atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					w := &sink{h: http.Header{}}
					for pb.Next() {
						if code := w.serve(h, reqs[n.Add(1)-1]); code != op.want {
							b.Errorf("%s = %d, want %d", op.name, code, op.want)
							return
						}
					}
				})
			})
		}
	}
}

// mustTopUp reserves the event's seqs a block ahead, as a replica's keeper
// does in production (the fixture runs none): a benchmark's joins would
// otherwise use up the first block and be answered 503.
func mustTopUp(b *testing.B, f *Fixture, eventID string) {
	b.Helper()
	held, err := f.Engine.Holds(b.Context(), []string{eventID})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Catalog.TopUp(b.Context(), eventID, held[0]); err != nil {
		b.Fatal(err)
	}
}
