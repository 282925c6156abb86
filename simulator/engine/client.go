package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rushline/rushline/simulator/report"
)

// api calls the rushline HTTP API and records every call.
type api struct {
	base    string
	client  *http.Client
	simKey  string
	adminKy string
}

// apiError is a non-2xx answer in the API.md shape.
type apiError struct {
	HTTP   int
	Code   string `json:"code"`
	Msg    string `json:"message"`
	Status string `json:"status"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.HTTP, e.Code, e.Msg) }

// do sends one request; rec (when set) gets the call's record. out receives a
// 2xx body. A non-2xx answer returns an *apiError.
func (a *api) do(ctx context.Context, step, method, path string, hdr map[string]string, body, out any, rec *[]report.Request) error {
	_, err := a.call(ctx, step, method, path, hdr, body, out, rec)
	return err
}

// call is do that also returns the answer's headers.
func (a *api) call(ctx context.Context, step, method, path string, hdr map[string]string, body, out any, rec *[]report.Request) (http.Header, error) {
	var in []byte
	if body != nil {
		var err error
		if in, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	res, err := a.client.Do(req)
	r := report.Request{Step: step, At: start, BytesOut: int64(len(in))}
	if err != nil {
		r.Latency, r.Error = time.Since(start), err.Error()
		if rec != nil && ctx.Err() == nil {
			*rec = append(*rec, r)
		}
		return nil, err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	r.Latency, r.Code, r.BytesIn = time.Since(start), res.StatusCode, int64(len(raw))
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
	if rec != nil {
		*rec = append(*rec, r)
	}
	return res.Header, result
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
