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

// MaxStatsStreamsPerAddress is how many public stats streams one client
// address may hold open on one server: enough for a room of screens behind
// one NAT, too few for one client to take the server's ceiling.
const MaxStatsStreamsPerAddress = 64

// streamRetryAfter is the Retry-After of a refused fifth stream: about the
// time a server takes to notice that a client closed one (DefaultStreamProbe).
const streamRetryAfter = "2"

// Why a stream was refused, as rushline_streams_refused_total labels it.
const (
	refusedToken   = "token"
	refusedAddress = "address"
	refusedCeiling = "ceiling"
)

// streamOwner is what a stream counts against besides the ceiling: a queue
// token's streams, or the stats streams of one client address.
type streamOwner struct {
	key    string // the map key: "t:" + event/token or "a:" + address
	most   int
	reason string // refusedToken or refusedAddress
	// holder and kind word the 429: "<holder> already holds <most> open <kind>".
	holder, kind string
}

// tokenStreams is the owner of the streams of token in eventID.
func tokenStreams(eventID, token string) streamOwner {
	return streamOwner{key: "t:" + eventID + "/" + token, most: MaxStreamsPerToken, reason: refusedToken,
		holder: "this queue token", kind: "streams"}
}

// addressStreams is the owner of the stats streams of one client address.
func addressStreams(addr string) streamOwner {
	return streamOwner{key: "a:" + addr, most: MaxStatsStreamsPerAddress, reason: refusedAddress,
		holder: "this address", kind: "stats streams"}
}

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
	owners map[string]int // open streams per streamOwner.key
}

func newStreamLimits(reg *prometheus.Registry, ceiling int) *streamLimits {
	l := &streamLimits{
		ceiling: ceiling,
		owners:  map[string]int{},
		refused: registerOnce(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rushline_streams_refused_total",
			Help: "Streams refused: token (429, the token holds its most), address (429, the address holds its most stats streams) or ceiling (503, the server holds its most).",
		}, []string{"reason"})),
		open: registerOnce(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rushline_streams_open", Help: "Open streams of every kind (queue and stats), counted against the ceiling.",
		})),
	}
	l.refused.WithLabelValues(refusedToken)
	l.refused.WithLabelValues(refusedAddress)
	l.refused.WithLabelValues(refusedCeiling)
	registerOnce(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rushline_streams_ceiling", Help: "Most streams this server holds open at once (0: no ceiling).",
	})).Set(float64(ceiling))
	return l
}

// enter claims a place for one stream of o or returns the error to answer.
// Every successful enter needs one leave.
func (l *streamLimits) enter(o streamOwner) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owners[o.key] >= o.most {
		l.refused.WithLabelValues(o.reason).Inc()
		return queue.Errorf(queue.CodeRateLimited, "%s already holds %d open %s; close one first", o.holder, o.most, o.kind)
	}
	if l.ceiling > 0 && l.n >= l.ceiling {
		l.refused.WithLabelValues(refusedCeiling).Inc()
		return queue.Errorf(queue.CodeUnavailable, "this server holds all the streams it can; try again shortly")
	}
	l.n++
	l.owners[o.key]++
	l.open.Inc()
	return nil
}

// leave gives back the place enter(o) claimed.
func (l *streamLimits) leave(o streamOwner) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.owners[o.key]--; l.owners[o.key] <= 0 {
		delete(l.owners, o.key)
	}
	l.open.Dec()
}

// claimStream claims a place for a stream of o or answers the refusal.
// It returns the release to call when the stream ends, nil when the
// request is answered.
func (s *Server) claimStream(c *gin.Context, o streamOwner) func() {
	err := s.streams.enter(o)
	if err == nil {
		return func() { s.streams.leave(o) }
	}
	if queue.ErrorCode(err) == queue.CodeRateLimited {
		c.Header("Retry-After", streamRetryAfter)
	}
	s.fail(c, err)
	return nil
}
