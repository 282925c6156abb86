package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// LoadFigures are one closed-loop load's results.
type LoadFigures struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	// CPU per answered request, in µs: the server's, Redis's and the load
	// generator's (this process). On a shared machine throughput follows
	// their sum, so these say where a ratio comes from.
	ServerCPU float64 `json:"server_cpu_us,omitempty"`
	RedisCPU  float64 `json:"redis_cpu_us,omitempty"`
	ClientCPU float64 `json:"client_cpu_us,omitempty"`
	// PerScript is answered requests per script call (EVAL, EVALSHA) Redis
	// ran meanwhile: 1 for the naive join, the batch size for a batched
	// one. It explains most swings in Redis CPU per request. 0 when no
	// script ran.
	PerScript float64 `json:"requests_per_script,omitempty"`
	// ServerCPURounds and RedisCPURounds are ServerCPU and RedisCPU of each
	// round alone, in order, when the figures sum more than one: how far
	// they swing from round to round on the same build.
	ServerCPURounds []float64 `json:"server_cpu_us_rounds,omitempty"`
	RedisCPURounds  []float64 `json:"redis_cpu_us_rounds,omitempty"`
}

// RedisCPUMedian is the median over the rounds of Redis CPU per request,
// RedisCPU when one round ran. The targets take it: on a shared machine one
// slow round moves a sum but not a median.
func (f LoadFigures) RedisCPUMedian() float64 {
	if len(f.RedisCPURounds) == 0 {
		return f.RedisCPU
	}
	return median(f.RedisCPURounds)
}

// ServerCPUMedian is as RedisCPUMedian, for the server's CPU per request.
func (f LoadFigures) ServerCPUMedian() float64 {
	if len(f.ServerCPURounds) == 0 {
		return f.ServerCPU
	}
	return median(f.ServerCPURounds)
}

// ServerCPUOver is f's server CPU per request over g's: the median of the
// two's ratio round by round (the servers take turns within a round, so
// each pair ran minutes apart at most), or the ratio of the sums when they
// did not run the same number of rounds.
func (f LoadFigures) ServerCPUOver(g LoadFigures) float64 {
	return roundRatio(f.ServerCPURounds, g.ServerCPURounds, f.ServerCPU, g.ServerCPU)
}

// RedisCPUOver is as ServerCPUOver, for Redis CPU per request.
func (f LoadFigures) RedisCPUOver(g LoadFigures) float64 {
	return roundRatio(f.RedisCPURounds, g.RedisCPURounds, f.RedisCPU, g.RedisCPU)
}

// ServerRedisCPUOver is as ServerCPUOver, for server and Redis CPU per
// request together.
func (f LoadFigures) ServerRedisCPUOver(g LoadFigures) float64 {
	return roundRatio(addRounds(f.ServerCPURounds, f.RedisCPURounds), addRounds(g.ServerCPURounds, g.RedisCPURounds),
		f.ServerCPU+f.RedisCPU, g.ServerCPU+g.RedisCPU)
}

// addRounds adds two lists of rounds element by element; nil unless they
// are as long.
func addRounds(a, b []float64) []float64 {
	if len(a) != len(b) {
		return nil
	}
	s := make([]float64, len(a))
	for i := range a {
		s[i] = a[i] + b[i]
	}
	return s
}

// roundRatio is the median of a[i] / b[i], or sumA / sumB when the rounds do
// not pair up; 0 when a denominator is 0.
func roundRatio(a, b []float64, sumA, sumB float64) float64 {
	if len(a) == 0 || len(a) != len(b) || slices.Contains(b, 0) {
		if sumB == 0 {
			return 0
		}
		return sumA / sumB
	}
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return median(r)
}

// median is the middle value of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 0 {
		return (s[m-1] + s[m]) / 2
	}
	return s[m]
}

// load is one vegeta attack by a fixed number of workers at maximum rate: a
// closed loop of workers clients, each sending its next request when the last
// one is answered; or, with rate set, at that rate.
type load struct {
	name    string
	workers int
	// rate, when set, sends rate requests a second whether or not the
	// earlier ones were answered (an open loop: vegeta's constant pacer);
	// workers is then how many vegeta starts with, and it adds more while
	// requests wait, up to openLoopWorkers.
	rate int
	// duration bounds the attack; with count > 0 it ends after count requests instead.
	duration time.Duration
	count    int
	// target fills in request i (0-based).
	target func(i uint64, t *vegeta.Target)
	// keep, when set, sees the body of every answered request i.
	keep func(i uint64, body []byte)
}

// openLoopWorkers caps an open loop's workers (and connections): past it a
// server that cannot keep up with the rate slows the load down rather than
// taking ever more connections.
const openLoopWorkers = 1024

// loadTotals sums one or more loads of the same kind: latency percentiles
// over every request, throughput over the loads' summed attack time.
type loadTotals struct {
	m       vegeta.Metrics
	ok      int
	elapsed time.Duration
	// cpu sums the CPU time of the server, Redis and this process over the loads.
	cpu [3]time.Duration
	// scripts sums the script calls Redis ran over the loads.
	scripts int64
	// rounds are each load's answered requests and CPU time, in order.
	rounds []roundCPU
}

// roundCPU is one load's answered requests and its server's and Redis's
// CPU time.
type roundCPU struct {
	ok            int
	server, redis time.Duration
}

// cpuMeter reads the CPU time used so far by the server, Redis and this
// process; a zero pid reads as 0. With rdb it also counts Redis's script
// calls.
type cpuMeter struct {
	server, redis int
	rdb           *redis.Client
}

// scripts is the script calls Redis has run so far, 0 without rdb or when
// it cannot tell.
func (c cpuMeter) scripts(ctx context.Context) int64 {
	if c.rdb == nil {
		return 0
	}
	n, _ := ScriptCalls(ctx, c.rdb)
	return n
}

func (c cpuMeter) read() [3]time.Duration {
	var ru syscall.Rusage
	self := time.Duration(0)
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return [3]time.Duration{pidCPU(c.server), pidCPU(c.redis), self}
}

func pidCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	return procCPU(pid)
}

// run attacks and adds the answers, and the CPU meter's time, to tot.
func (l load) run(ctx context.Context, tot *loadTotals, meter cpuMeter) {
	before, scripts, ok := meter.read(), meter.scripts(ctx), tot.ok
	defer func() {
		after := meter.read()
		for i := range tot.cpu {
			tot.cpu[i] += after[i] - before[i]
		}
		tot.scripts += meter.scripts(ctx) - scripts
		tot.rounds = append(tot.rounds, roundCPU{ok: tot.ok - ok, server: after[0] - before[0], redis: after[1] - before[1]})
	}()
	var next atomic.Uint64
	tr := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if l.count > 0 && i >= uint64(l.count) {
			return vegeta.ErrNoTargets
		}
		l.target(i, t)
		return nil
	}
	w, maxW := uint64(l.workers), uint64(l.workers)
	pacer := vegeta.ConstantPacer{}
	if l.rate > 0 {
		pacer = vegeta.ConstantPacer{Freq: l.rate, Per: time.Second}
		maxW = max(w, openLoopWorkers)
	}
	// A transport of the load's own, closed after it: vegeta's keeps its
	// connections open for good, so every load would leave its workers'
	// connections (and a goroutine each) idle in the servers and in this
	// process, for the later loads' garbage collections to scan.
	transport := &http.Transport{MaxIdleConnsPerHost: int(maxW), MaxConnsPerHost: int(maxW),
		DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext}
	defer transport.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: transport}), vegeta.Workers(w), vegeta.MaxWorkers(maxW),
		vegeta.Timeout(30*time.Second), vegeta.Redirects(vegeta.NoFollow))
	du := l.duration
	if l.count > 0 {
		du = 0
	}
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	var first, last time.Time
	for r := range atk.Attack(tr, pacer, du, l.name) {
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
	if tot.ok > 0 {
		us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(tot.ok) }
		f.ServerCPU, f.RedisCPU, f.ClientCPU = us(tot.cpu[0]), us(tot.cpu[1]), us(tot.cpu[2])
		if tot.scripts > 0 {
			f.PerScript = float64(tot.ok) / float64(tot.scripts)
		}
	}
	if len(tot.rounds) > 1 {
		for _, r := range tot.rounds {
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(max(r.ok, 1)) }
			f.ServerCPURounds, f.RedisCPURounds = append(f.ServerCPURounds, us(r.server)), append(f.RedisCPURounds, us(r.redis))
		}
	}
	return f
}

// errLoad reports a load that got no answer at all.
var errLoad = errors.New("bench: load got no successful answers")

// postTarget fills t with a JSON POST.
func postTarget(t *vegeta.Target, url string, hdr http.Header, body []byte) {
	t.Method, t.URL, t.Header, t.Body = http.MethodPost, url, hdr, body
}
