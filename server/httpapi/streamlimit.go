package httpapi

import (
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rushline/rushline/server/queue"
)

// MaxStreamsPerToken is how many streams one queue token may hold open on
// one server (API.md: a fifth answers 429).
const MaxStreamsPerToken = 4

// streamRetryAfter is the Retry-After of a refused fifth stream: about the
// time a server takes to notice that a client closed one (probeEvery).
const streamRetryAfter = "2"

// Why a stream was refused, as rushline_streams_refused_total labels it.
const (
	refusedToken   = "token"
	refusedCeiling = "ceiling"
)

// DefaultStreamCeiling is the stream ceiling of a process allowed
// descriptors open files: what is left after a reserve of a quarter (at
// least 128, at most half) for everything that is not a stream, namely
// ordinary API calls and their idle keep-alive connections, health checks,
// the Redis and SQL pools, the listener and log files.
func DefaultStreamCeiling(descriptors uint64) int {
	reserve := min(max(descriptors/4, 128), descriptors/2)
	return int(min(descriptors-reserve, 1<<31-1))
}

// streamLimits counts the open streams of one server: per queue token, and
// in all against the server's ceiling. Every open stream holds a descriptor,
// so without them one client could open streams until the process can
// accept no connection at all. The counts are per process, which is where
// the descriptors run out. Safe for concurrent use.
type streamLimits struct {
	ceiling int // 0: none
	refused *prometheus.CounterVec
	open    prometheus.Gauge

	mu     sync.Mutex
	n      int
	tokens map[string]int
}

func newStreamLimits(reg *prometheus.Registry, ceiling int) *streamLimits {
	l := &streamLimits{
		ceiling: ceiling,
		tokens:  map[string]int{},
		refused: registerOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_streams_refused_total",
			Help: "Streams refused: token (429, the token holds its most) or ceiling (503, the server holds its most).",
		}, []string{"reason"})),
		open: registerOnce(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rushline_streams_open", Help: "Open streams of every kind (queue and stats), counted against the ceiling.",
		})),
	}
	l.refused.WithLabelValues(refusedToken)
	l.refused.WithLabelValues(refusedCeiling)
	registerOnce(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rushline_streams_ceiling", Help: "Most streams this server holds open at once (0: no ceiling).",
	})).Set(float64(ceiling))
	return l
}

// enter claims a place for one stream of key ("" for a stream of no token)
// or returns the error to answer. Every successful enter needs one leave.
func (l *streamLimits) enter(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if key != "" && l.tokens[key] >= MaxStreamsPerToken {
		l.refused.WithLabelValues(refusedToken).Inc()
		return queue.Errorf(queue.CodeRateLimited, "this queue token already holds %d open streams; close one first", MaxStreamsPerToken)
	}
	if l.ceiling > 0 && l.n >= l.ceiling {
		l.refused.WithLabelValues(refusedCeiling).Inc()
		return queue.Errorf(queue.CodeUnavailable, "this server holds all the streams it can; try again shortly")
	}
	l.n++
	if key != "" {
		l.tokens[key]++
	}
	l.open.Inc()
	return nil
}

// leave gives back the place enter(key) claimed.
func (l *streamLimits) leave(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if key != "" {
		if l.tokens[key]--; l.tokens[key] <= 0 {
			delete(l.tokens, key)
		}
	}
	l.open.Dec()
}

// claimStream claims a place for a stream of key or answers the refusal.
// It returns the release to call when the stream ends, nil when the
// request is answered.
func (s *Server) claimStream(c *gin.Context, key string) func() {
	err := s.streams.enter(key)
	if err == nil {
		return func() { s.streams.leave(key) }
	}
	if queue.ErrorCode(err) == queue.CodeRateLimited {
		c.Header("Retry-After", streamRetryAfter)
	}
	s.fail(c, err)
	return nil
}
