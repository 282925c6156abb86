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

// serve runs one request through the handler in process and returns its status.
func serve(h http.Handler, method, path string, headers map[string]string, body string) int {
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
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
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
				type request struct {
					path    string
					headers map[string]string
				}
				reqs := make([]request, b.N)
				for i := range reqs {
					reqs[i].path, reqs[i].headers = op.prepare(b, i)
				}
				var n atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						r := reqs[n.Add(1)-1]
						if code := serve(h, op.method, r.path, r.headers, op.body); code != op.want {
							b.Errorf("%s = %d, want %d", op.name, code, op.want)
							return
						}
					}
				})
			})
		}
	}
}
