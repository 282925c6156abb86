package bench

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// LoadFigures are one closed-loop load's results.
type LoadFigures struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
}

// load is one vegeta attack by a fixed number of workers at maximum rate: a
// closed loop of workers clients, each sending its next request when the last
// one is answered.
type load struct {
	name    string
	workers int
	// duration bounds the attack; with count > 0 it ends after count requests instead.
	duration time.Duration
	count    int
	// target fills in request i (0-based).
	target func(i uint64, t *vegeta.Target)
	// keep, when set, sees the body of every answered request i.
	keep func(i uint64, body []byte)
}

// loadTotals sums one or more loads of the same kind: latency percentiles
// over every request, throughput over the loads' summed attack time.
type loadTotals struct {
	m       vegeta.Metrics
	ok      int
	elapsed time.Duration
}

// run attacks and adds the answers to tot.
func (l load) run(ctx context.Context, tot *loadTotals) {
	var next atomic.Uint64
	tr := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if l.count > 0 && i >= uint64(l.count) {
			return vegeta.ErrNoTargets
		}
		l.target(i, t)
		return nil
	}
	w := uint64(l.workers)
	atk := vegeta.NewAttacker(vegeta.Workers(w), vegeta.MaxWorkers(w), vegeta.Connections(l.workers),
		vegeta.MaxConnections(l.workers), vegeta.Timeout(30*time.Second), vegeta.Redirects(vegeta.NoFollow))
	du := l.duration
	if l.count > 0 {
		du = 0
	}
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	var first, last time.Time
	for r := range atk.Attack(tr, vegeta.ConstantPacer{}, du, l.name) {
		if r.Code == 0 && r.Error == vegeta.ErrNoTargets.Error() {
			continue
		}
		if first.IsZero() || r.Timestamp.Before(first) {
			first = r.Timestamp
		}
		if end := r.End(); end.After(last) {
			last = end
		}
		if r.Code >= 200 && r.Code < 400 {
			tot.ok++
			if l.keep != nil {
				l.keep(r.Seq, r.Body)
			}
		}
		tot.m.Add(r)
	}
	tot.elapsed += last.Sub(first)
}

// figures closes the totals: throughput counts answers with a 2xx or 3xx
// status per second of attack.
func (tot *loadTotals) figures() LoadFigures {
	tot.m.Close()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	f := LoadFigures{Requests: int(tot.m.Requests), Errors: int(tot.m.Requests) - tot.ok,
		P50: ms(tot.m.Latencies.P50), P99: ms(tot.m.Latencies.P99)}
	if tot.elapsed > 0 {
		f.RPS = float64(tot.ok) / tot.elapsed.Seconds()
	}
	return f
}

// errLoad reports a load that got no answer at all.
var errLoad = errors.New("bench: load got no successful answers")

// postTarget fills t with a JSON POST.
func postTarget(t *vegeta.Target, url string, hdr http.Header, body []byte) {
	t.Method, t.URL, t.Header, t.Body = http.MethodPost, url, hdr, body
}
