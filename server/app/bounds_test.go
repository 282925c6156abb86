//go:build linux

package app_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rushline/rushline/internal/testutil"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
	"github.com/rushline/rushline/simulator/sse"
)

// callTimeout bounds each call a bounds test makes: far longer than any
// answer takes, far shorter than the stalls the limits prevent.
const callTimeout = 10 * time.Second

// metric reads one sample of base's /metrics; ok is false when absent.
func metric(ctx context.Context, hc *http.Client, base, series string) (float64, bool, error) {
	code, _, body, err := raw(ctx, hc, "GET", base+"/metrics", nil, "")
	if err != nil || code != http.StatusOK {
		return 0, false, fmt.Errorf("metrics: %d %v", code, err)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if name, val, ok := strings.Cut(sc.Text(), " "); ok && name == series {
			v, err := strconv.ParseFloat(val, 64)
			return v, err == nil, err
		}
	}
	return 0, false, nil
}

// mustMetric checks that base's /metrics shows want for series.
func mustMetric(ctx context.Context, tb testing.TB, hc *http.Client, base, series string, want float64) {
	tb.Helper()
	if v, ok, err := metric(ctx, hc, base, series); err != nil || !ok || v != want {
		tb.Errorf("%s = %v (present %v, %v), want %v", series, v, ok, err, want)
	}
}

// openStream opens the stream at url and reads its first message, which
// must be an event named first.
func openStream(ctx context.Context, hc *http.Client, url, first string) (*sse.Stream, error) {
	s, err := sse.Open(ctx, hc, url, "")
	if err != nil {
		return nil, err
	}
	m, err := s.Next()
	if err == nil && m.Event != first {
		err = fmt.Errorf("first message %q, want %q", m.Event, first)
	}
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return s, nil
}

// mustRefusal checks that a GET of url answers status and code with a
// Retry-After.
func mustRefusal(ctx context.Context, hc *http.Client, url string, status int, code string) error {
	call, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	got, retry, body, err := raw(call, hc, "GET", url, nil, "")
	if err != nil {
		return err
	}
	if n, _ := strconv.Atoi(retry); got != status || n < 1 || !strings.Contains(body, `"`+code+`"`) {
		return fmt.Errorf("GET %s: %d, Retry-After %q: %s; want %d %s with Retry-After", url, got, retry, body, status, code)
	}
	return nil
}

// bystander is another client that keeps calling health checks, sessions
// and joins while something else goes on, and reports what failed.
type bystander struct {
	calls atomic.Int64
	mu    sync.Mutex
	errs  []error
	stop  context.CancelFunc
	done  chan struct{}
}

// startBystander calls base until Stop, with a connection pool of its own.
func startBystander(ctx context.Context, tb testing.TB, base string, keys auth.Keys, event string) *bystander {
	hc := newHTTPClient(tb)
	ctx, stop := context.WithCancel(ctx)
	b := &bystander{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for ctx.Err() == nil {
			if err := b.round(ctx, hc, base, event); err != nil && ctx.Err() == nil {
				b.mu.Lock()
				b.errs = append(b.errs, err)
				b.mu.Unlock()
			}
			b.calls.Add(1)
		}
	}()
	return b
}

// round is one health check and one join of a new person.
func (b *bystander) round(ctx context.Context, hc *http.Client, base, event string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := call(ctx, hc, "GET", base+"/healthz", nil, nil, 200, nil); err != nil {
		return err
	}
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	if err := call(ctx, hc, "POST", base+"/api/v1/sessions", nil, map[string]string{"nickname": "bystander"}, 201, &sess); err != nil {
		return err
	}
	return call(ctx, hc, "POST", base+"/api/v1/events/"+event+"/queue", map[string]string{"Authorization": "Bearer " + sess.AccessToken},
		map[string]string{"user_type": "ACTUAL"}, 201, nil)
}

// Stop ends the calls and fails tb if any failed or none was made.
func (b *bystander) Stop(tb testing.TB) {
	tb.Helper()
	b.stop()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, err := range b.errs[:min(len(b.errs), 5)] {
		tb.Errorf("another client's call failed: %v", err)
	}
	if b.calls.Load() == 0 {
		tb.Error("another client made no call")
	}
}

// mustLogLine checks that the server logged its descriptor limit and
// stream ceiling.
func mustLogLine(tb testing.TB, p *proc, descriptors, ceiling int) {
	tb.Helper()
	want := fmt.Sprintf("descriptors=%d ceiling=%d", descriptors, ceiling)
	// The process's output reaches p.Log through a pipe, which may lag
	// behind its first answers.
	testutil.Eventually(tb, 10*time.Second, "the log line "+want, func() bool { return strings.Contains(p.Log(), want) })
}

// TestStreamFloodOnOneToken is the probe that exhausted the server's
// descriptors: 21,000 stream requests from one client on one WAITING token.
// Four streams are held, every other request answers 429 at once, the four
// go on to their admission, and another client's health checks and joins
// keep answering throughout.
func TestStreamFloodOnOneToken(t *testing.T) {
	if testing.Short() {
		t.Skip("21,000 requests: not in -short")
	}
	t.Parallel()
	const (
		event    = "flood"
		attempts = 21_000
		// Well under the flood, as on the machine the probe ran on.
		descriptors = 4096
	)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t)
	keys := newKeys(t)
	p := MustProcWith(t, []string{"prlimit", "--nofile=" + strconv.Itoa(descriptors)}, MustServerBinary(t), "redis://"+rp.Addr(), "", keys)
	mustLogLine(t, p, descriptors, httpapi.DefaultStreamCeiling(descriptors))
	hc := newHTTPClient(t)
	mustCreate(ctx, t, hc, p.base, keys, event, 100, 100, 100, true) // paused: everyone waits
	tok := mustJoinBots(ctx, t, hc, []string{p.base}, keys, event, "victim", 1)[0].Token
	url := p.base + "/api/v1/events/" + event + "/queue/" + tok + "/stream"

	held := make([]*sse.Stream, httpapi.MaxStreamsPerToken)
	for i := range held {
		s, err := openStream(ctx, hc, url, "position")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		held[i] = s
	}
	others := startBystander(ctx, t, p.base, keys, event)
	var next atomic.Int64
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for n := next.Add(1); n <= attempts-int64(len(held)); n = next.Add(1) {
				if err := mustRefusal(ctx, hc, url, http.StatusTooManyRequests, "RATE_LIMITED"); err != nil {
					errs <- fmt.Errorf("attempt %d: %w", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	others.Stop(t)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mustMetric(ctx, t, hc, p.base, `rushline_streams_refused_total{reason="token"}`, attempts-float64(len(held)))
	mustMetric(ctx, t, hc, p.base, "rushline_streams_open", float64(len(held)))

	// The four held streams were never disturbed: each gets its admission.
	mustAdmin(ctx, t, hc, p.base, keys, event, "resume")
	for i, s := range held {
		for {
			m, err := s.Next()
			if err != nil {
				t.Fatalf("held stream %d: %v", i, err)
			}
			if m.Event != "position" {
				if m.Event != "admitted" {
					t.Errorf("held stream %d: %q, want admitted", i, m.Event)
				}
				break
			}
		}
	}
}

// TestStreamCeilingOfTheProcess: a server under a small descriptor limit
// derives its stream ceiling from it; streams of many tokens fill it, the
// next answer 503 with Retry-After (a fifth on one token still 429), and
// health checks and joins keep answering. A closed stream frees its place.
func TestStreamCeilingOfTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of streams of a child process: not in -short")
	}
	t.Parallel()
	const (
		event       = "ceiling"
		descriptors = 512
	)
	ceiling := httpapi.DefaultStreamCeiling(descriptors)
	tokens := ceiling / httpapi.MaxStreamsPerToken
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t)
	keys := newKeys(t)
	p := MustProcWith(t, []string{"prlimit", "--nofile=" + strconv.Itoa(descriptors)}, MustServerBinary(t), "redis://"+rp.Addr(), "", keys)
	mustLogLine(t, p, descriptors, ceiling)
	hc := newHTTPClient(t)
	mustCreate(ctx, t, hc, p.base, keys, event, 100, 100, 100, true)
	bots := mustJoinBots(ctx, t, hc, []string{p.base}, keys, event, "b", tokens+1)
	streamURL := func(i int) string { return p.base + "/api/v1/events/" + event + "/queue/" + bots[i].Token + "/stream" }

	streams := make([]*sse.Stream, ceiling)
	errs := make([]error, ceiling)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < ceiling; i += 16 {
				streams[i], errs[i] = openStream(ctx, hc, streamURL(i/httpapi.MaxStreamsPerToken), "position")
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("stream %d of %d: %v", i+1, ceiling, err)
		}
		defer streams[i].Close()
	}

	others := startBystander(ctx, t, p.base, keys, event)
	for _, tc := range []struct {
		name, url    string
		status       int
		code         string
		wantRefusals float64
	}{
		{"another token", streamURL(tokens), http.StatusServiceUnavailable, "UNAVAILABLE", 1},
		{"stats stream", p.base + "/api/v1/events/" + event + "/stats/stream", http.StatusServiceUnavailable, "UNAVAILABLE", 2},
		{"a fifth on a full token", streamURL(0), http.StatusTooManyRequests, "RATE_LIMITED", 2},
	} {
		if err := mustRefusal(ctx, hc, tc.url, tc.status, tc.code); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		mustMetric(ctx, t, hc, p.base, `rushline_streams_refused_total{reason="ceiling"}`, tc.wantRefusals)
	}
	if err := call(ctx, hc, "GET", p.base+"/readyz", nil, nil, 200, nil); err != nil {
		t.Error(err)
	}
	others.Stop(t)
	mustMetric(ctx, t, hc, p.base, "rushline_streams_ceiling", float64(ceiling))
	mustMetric(ctx, t, hc, p.base, "rushline_streams_open", float64(ceiling))

	_ = streams[0].Close()
	eventually(ctx, t, "a place freed by a closed stream", func() error {
		s, err := openStream(ctx, hc, streamURL(tokens), "position")
		if err == nil {
			_ = s.Close()
		}
		return err
	})
}

// vmHWM reads the peak resident set of process pid, in bytes.
func vmHWM(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// TestSeatMapMemory: 16 clients read a 1,000,000-seat map at once, by
// section, each the whole of it; the server's peak RSS stays under 400 MB
// and every answer under 2 MB. (Answering the whole map as one list, 30 MB
// a read, took a server to 2 GB.)
func TestSeatMapMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1,600 section reads of a 1,000,000-seat map: not in -short")
	}
	t.Parallel()
	const (
		event   = "million"
		seats   = 1_000_000
		sold    = 200_000
		readers = 16
		maxRSS  = 400 << 20
	)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	rp := redistest.MustStart(t)
	rdb := redistest.MustClient(t, rp.Addr())
	keys := newKeys(t)
	p := MustProcWith(t, nil, MustServerBinary(t), "redis://"+rp.Addr(), "", keys)
	hc := newHTTPClient(t)
	mustCreate(ctx, t, hc, p.base, keys, event, seats, 100, 100, false)
	tok := mustJoinBots(ctx, t, hc, []string{p.base}, keys, event, "reader", 1)[0].Token
	eventually(ctx, t, "the reader admitted", func() error {
		var s statusBody
		err := call(ctx, hc, "GET", p.base+"/api/v1/events/"+event+"/queue/"+tok, nil, nil, 200, &s)
		if err == nil && s.Status != "ACTIVE" {
			err = fmt.Errorf("status %s", s.Status)
		}
		return err
	})
	// Every fifth seat sold, written straight into the event's seat hash
	// (the overview's free count below proves it is the right key).
	taken := queue.Keys(event)[7]
	for from := 0; from < seats; from += 50_000 {
		kv := make([]any, 0, 2*10_000)
		for i := from; i < from+50_000; i += 5 {
			kv = append(kv, queue.SeatID(seats, i), "VIRTUAL:x|1|o_x")
		}
		if err := rdb.HSet(ctx, taken, kv...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	base := p.base + "/api/v1/events/" + event + "/seats"
	hdr := map[string]string{"X-Queue-Token": tok}
	var over struct {
		Sections []struct {
			ID    string `json:"id"`
			Seats int    `json:"seats"`
			Free  int    `json:"free"`
		} `json:"sections"`
	}
	if err := call(ctx, hc, "GET", base, hdr, nil, 200, &over); err != nil {
		t.Fatal(err)
	}
	free := 0
	for _, s := range over.Sections {
		free += s.Free
	}
	if len(over.Sections) != 100 || free != seats-sold {
		t.Fatalf("overview: %d sections, %d free; want 100, %d", len(over.Sections), free, seats-sold)
	}
	before, err := vmHWM(p.Pid())
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for r := range readers {
		wg.Go(func() {
			for k := range over.Sections {
				s := over.Sections[(k+r*7)%len(over.Sections)]
				code, _, body, err := raw(ctx, hc, "GET", base+"?section="+s.ID, hdr, "")
				if err == nil && (code != 200 || len(body) > 2<<20 || strings.Count(body, `"taken":true`) != s.Seats-s.Free ||
					strings.Count(body, `"id":`) != s.Seats) {
					err = fmt.Errorf("section %s: %d, %d bytes, %d taken; want 200, under 2 MB, %d taken", s.ID, code, len(body),
						strings.Count(body, `"taken":true`), s.Seats-s.Free)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	peak, err := vmHWM(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server peak RSS %d MB before the readers, %d MB after %d readers × %d sections", before>>20, peak>>20, readers, len(over.Sections))
	if peak > maxRSS {
		t.Errorf("server peak RSS %d MB, want under %d MB", peak>>20, maxRSS>>20)
	}
}
