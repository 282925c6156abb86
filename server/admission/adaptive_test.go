package admission_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rushline/rushline/server/admission"
	"github.com/rushline/rushline/server/metrics"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/redisproc/redistest"
)

// offsetClock is the real clock moved on by a settable offset.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }

func (c *offsetClock) Skip(d time.Duration) { c.mu.Lock(); c.off += d; c.mu.Unlock() }

// scrape returns the /metrics text of m.
func scrape(tb testing.TB, m *metrics.Metrics) string {
	tb.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// waitMetric polls the scrape until it holds line.
func waitMetric(tb testing.TB, m *metrics.Metrics, line string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(scrape(tb, m), line+"\n") {
		if time.Now().After(deadline) {
			tb.Fatalf("no %q in /metrics:\n%s", line, scrape(tb, m))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAdaptiveGauges: the adaptive ticker's batch and load figure show in
// Prometheus as they change: half of max_tps, saturated, and a stale figure
// (the downstream is down) pausing promotion.
func TestAdaptiveGauges(t *testing.T) {
	p := redistest.MustStart(t)
	clk := &offsetClock{}
	eng := queue.New(redistest.MustClient(t, p.Addr()), []byte("k"), queue.WithClock(clk.Now))
	ctx := context.Background()
	ev := queue.Event{ID: "adapt", Seats: 10, Capacity: 100_000, AdmitBatch: 11, AdmitIntervalMS: 50,
		ActiveTTLS: 600, Policy: queue.PolicyAdaptive, MaxTPS: 10}
	if err := eng.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if _, _, err := eng.Join(ctx, ev.ID, fmt.Sprintf("u_%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	r := admission.New(eng, "r1", admission.WithObserver(m), admission.WithSweep(10*time.Millisecond),
		admission.WithDiscover(20*time.Millisecond))
	wg.Go(func() { r.Run(runCtx) })

	steps := []struct {
		name       string
		report     float64 // <0: none
		skip       time.Duration
		batch, tps string
	}{
		// 5 of max_tps 10: the batch halfway between 11 and 1.
		{name: "half load", report: 5, batch: "6", tps: "5"},
		// At max_tps: one per tick.
		{name: "saturated", report: 10, batch: "1", tps: "10"},
		// No figure for over 10 s: promotion pauses, the load shows -1.
		{name: "stale", report: -1, skip: queue.LoadStale + time.Second, batch: "0", tps: "-1"},
		// A fresh figure of zero: the full batch again.
		{name: "recovered", report: 0, batch: "11", tps: "0"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.report >= 0 {
				if err := eng.ReportLoad(ctx, ev.ID, s.report); err != nil {
					t.Fatal(err)
				}
			}
			clk.Skip(s.skip)
			waitMetric(t, m, `rushline_admit_batch{event="adapt"} `+s.batch)
			waitMetric(t, m, `rushline_admit_load_tps{event="adapt"} `+s.tps)
		})
	}
}
