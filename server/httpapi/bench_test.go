package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
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

// BenchmarkJoinHandler: new ACTUAL users joining one event (auth, decode,
// the join script, the answer), in process on a real Redis.
func BenchmarkJoinHandler(b *testing.B) {
	f := MustServer(b)
	f.MustCreateEvent(b, EventBody("bench", "capacity", 1))
	h := f.API.Handler()
	const body = `{"user_type":"ACTUAL"}`
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok, _, err := f.Signer.IssueSession("u_bench"+strconv.FormatInt(n.Add(1), 10), "bench")
			if err != nil {
				b.Error(err)
				return
			}
			if code := serve(h, http.MethodPost, "/api/v1/events/bench/queue", Bearer(tok), body); code != http.StatusCreated {
				b.Errorf("join = %d", code)
				return
			}
		}
	})
}

// BenchmarkStatusHandler: status polls of 1,000 waiting tokens.
func BenchmarkStatusHandler(b *testing.B) {
	f := MustServer(b)
	f.MustCreateEvent(b, EventBody("bench", "capacity", 1))
	const users = 1000
	tokens := make([]string, users)
	ctx := context.Background()
	for i := range tokens {
		en, _, err := f.Engine.Join(ctx, "bench", "u_status"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		tokens[i] = en.Token
	}
	h := f.API.Handler()
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok := tokens[n.Add(1)%users]
			if code := serve(h, http.MethodGet, qpath("bench", tok), nil, ""); code != http.StatusOK {
				b.Errorf("status = %d", code)
				return
			}
		}
	})
}
