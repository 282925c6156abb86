package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/rushline/rushline/simulator/report"
)

// api calls the rushline HTTP API and records every call but set-up ones.
type api struct {
	base    string
	client  *http.Client
	simKey  string
	adminKy string
	rec     *report.Recorder
	// inflight, when set, bounds the requests in flight to the pool's
	// connections: the others wait their turn here, cheaply, rather than
	// each holding a request and a goroutine inside the transport.
	inflight chan struct{}
}

// stepSetup names the run's own calls (create, sample): never recorded.
const stepSetup = "setup"

// apiError is a non-2xx answer in the API.md shape.
type apiError struct {
	HTTP   int
	Code   string `json:"code"`
	Msg    string `json:"message"`
	Status string `json:"status"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.HTTP, e.Code, e.Msg) }

// do sends one request and records it (unless step is stepSetup). out
// receives a 2xx body. A non-2xx answer returns an *apiError.
func (a *api) do(ctx context.Context, step, method, path string, hdr map[string]string, body, out any) error {
	_, err := a.call(ctx, step, method, path, hdr, body, out)
	return err
}

// call is do that also returns the answer's headers. A request is timed from
// when it was written to the connection (httptrace's WroteRequest) to its
// answer read; the time before, waiting for a connection or dialling one,
// is the client's own wait, recorded apart.
func (a *api) call(ctx context.Context, step, method, path string, hdr map[string]string, body, out any) (h http.Header, err error) {
	start := time.Now()
	if a.inflight != nil {
		select {
		case a.inflight <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-a.inflight }()
	}
	shallow(func() { h, err = a.send(ctx, start, step, method, path, hdr, body, out) })
	return h, err
}

// shallow runs fn on a goroutine of its own and waits for it. HTTP and JSON
// work then grows that short-lived goroutine's stack, not the bot's: a
// goroutine keeps the stack of its deepest call for as long as it waits
// (a GC halves it only when three quarters are unused), and a waiting bot
// should cost a few kilobytes, not the 16 KB an HTTP call leaves behind.
func shallow(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// send is call on the caller's goroutine, the request decided at start.
func (a *api) send(ctx context.Context, start time.Time, step, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	var in []byte
	if body != nil {
		var err error
		if in, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	// Set on the transport's goroutine: the time from start to written.
	var wrote atomic.Int64
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(int64(time.Since(start))) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, a.base+path, bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := a.client.Do(req)
	r := report.Request{Step: step, At: start, BytesOut: int64(len(in))}
	timed := func() {
		total, w := time.Since(start), time.Duration(wrote.Load())
		if w == 0 {
			r.Wait = total
			return
		}
		r.Wait, r.Latency = w, total-w
	}
	if err != nil {
		timed()
		r.Error = err.Error()
		if ctx.Err() == nil {
			a.record(r)
		}
		return nil, err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	timed()
	r.Code, r.BytesIn = res.StatusCode, int64(len(raw))
	var result error
	switch {
	case err != nil:
		r.Error, result = err.Error(), err
	case res.StatusCode >= 300:
		var e struct {
			Error apiError `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		e.Error.HTTP = res.StatusCode
		r.ErrCode, r.ErrStatus, result = e.Error.Code, e.Error.Status, &e.Error
	case out != nil:
		if err := json.Unmarshal(raw, out); err != nil {
			r.Error, result = "decode: "+err.Error(), err
		}
	}
	a.record(r)
	return res.Header, result
}

func (a *api) record(r report.Request) {
	if a.rec != nil && r.Step != stepSetup {
		a.rec.Request(r)
	}
}

func (a *api) sim() map[string]string   { return map[string]string{"X-Simulator-Key": a.simKey} }
func (a *api) admin() map[string]string { return map[string]string{"X-Admin-Key": a.adminKy} }

// event is the part of an event the simulator reads.
type event struct {
	ID      string             `json:"id"`
	Seats   int                `json:"seats"`
	OpensAt *time.Time         `json:"opens_at"`
	Stats   *report.EventStats `json:"stats"`
	// Challenge "pow" asks each join for a proof of work of PowBits.
	Challenge string `json:"challenge"`
	PowBits   int    `json:"pow_bits"`
}

// entry is a join or status answer.
type entry struct {
	Token       string    `json:"token"`
	Status      string    `json:"status"`
	Seq         int64     `json:"seq"`
	Position    int64     `json:"position"`
	AdmittedAt  time.Time `json:"admitted_at"`
	AdmissionNo int64     `json:"admission_no"`
}
