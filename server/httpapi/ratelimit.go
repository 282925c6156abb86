package httpapi

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/ratelimit"
)

// routeKey is a route as gin matched it.
type routeKey struct{ method, path string }

// limitedRoutes maps the API routes a --rate-limit rule can name.
var limitedRoutes = map[routeKey]ratelimit.Route{
	{http.MethodPost, "/api/v1/sessions"}:                         ratelimit.Sessions,
	{http.MethodPost, "/api/v1/events/:event/queue"}:              ratelimit.Join,
	{http.MethodGet, "/api/v1/events/:event/queue/:token"}:        ratelimit.Status,
	{http.MethodGet, "/api/v1/events/:event/queue/:token/stream"}: ratelimit.Stream,
	{http.MethodDelete, "/api/v1/events/:event/queue/:token"}:     ratelimit.Leave,
	{http.MethodGet, "/api/v1/events/:event/seats"}:               ratelimit.Seats,
	{http.MethodPost, "/api/v1/events/:event/orders"}:             ratelimit.Orders,
	{http.MethodPost, "/api/v1/practice"}:                         ratelimit.Practice,
}

// limiterLogEvery spaces the log lines of a failing limiter.
const limiterLogEvery = 10 * time.Second

// rateLimit returns the middleware that answers 429 RATE_LIMITED once a
// client address (clientAddr) has used up its budget on a route, or nil
// when no limits are configured. It runs before the body is read, so 429
// wins over every other error. Calls with a valid simulator or admin key are never limited. When
// the limiter's Redis fails, the call goes through (fail open): the handler
// then answers 503 itself if Redis is really gone.
func (s *Server) rateLimit() gin.HandlerFunc {
	l := s.Limiter
	if l == nil || len(l.Rules()) == 0 {
		return nil
	}
	limited := registerOnce(s.metrics.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rushline_rate_limited_total", Help: "Calls answered 429 RATE_LIMITED, by rate-limit route.",
	}, []string{"route"}))
	failures := registerOnce(s.metrics.Registry, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rushline_rate_limit_errors_total", Help: "Rate-limit checks that failed (Redis unreachable or slow) and let the call through.",
	}))
	for rt := range l.Rules() {
		limited.WithLabelValues(string(rt))
	}
	var lastLog atomic.Int64
	return func(c *gin.Context) {
		route, ok := limitedRoutes[routeKey{c.Request.Method, c.FullPath()}]
		if !ok || !l.Limits(route) || s.exempt(c) {
			return
		}
		res, err := l.Allow(c.Request.Context(), route, s.clientAddr(c))
		if err != nil {
			failures.Inc()
			if now := time.Now().UnixNano(); now-lastLog.Load() >= int64(limiterLogEvery) {
				lastLog.Store(now)
				s.log.Warn("rate limiter unavailable; letting calls through", "route", route, "err", err)
			}
			return
		}
		if !res.Allowed {
			limited.WithLabelValues(string(route)).Inc()
			secs := max(int64((res.RetryAfter+time.Second-1)/time.Second), 1)
			c.Header("Retry-After", strconv.FormatInt(secs, 10))
			s.fail(c, queue.Errorf(queue.CodeRateLimited, "too many %s calls from this address; retry in %d s", route, secs))
		}
	}
}

// clientAddr is the client's address, for anything that must not be
// forged: the peer's, or behind --trust-proxy the last X-Forwarded-For
// address, the one our proxy added. Addresses left of it come from the
// client and could name anyone, so unlike gin's ClientIP (which trusts
// every hop here) they are ignored.
func (s *Server) clientAddr(c *gin.Context) string {
	if s.TrustProxy {
		if vs := c.Request.Header.Values("X-Forwarded-For"); len(vs) > 0 {
			last := vs[len(vs)-1]
			last = strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:])
			if ip := net.ParseIP(last); ip != nil {
				return ip.String()
			}
		}
	}
	return c.RemoteIP()
}

// exempt reports whether the call carries a valid simulator or admin key:
// bots measure the queue, not the limiter. A wrong key is no exemption.
func (s *Server) exempt(c *gin.Context) bool {
	if k := c.GetHeader(headerSimulator); k != "" && auth.Equal(k, s.Keys.SimulatorKey()) {
		return true
	}
	k := c.GetHeader(headerAdmin)
	return k != "" && auth.Equal(k, s.Keys.AdminKey())
}

// registerOnce registers c on reg, or returns the equal collector already
// there (two servers built on one Metrics).
func registerOnce[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(C); ok {
				return old
			}
		}
		panic(err)
	}
	return c
}
