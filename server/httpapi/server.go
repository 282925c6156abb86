// Package httpapi is rushline's HTTP adapter: the API.md contract on gin,
// over the queue engine. It holds no queue state, so any number of replicas
// may serve the same Redis.
package httpapi

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rushline/rushline/docs"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/metrics"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/ratelimit"
	"github.com/rushline/rushline/server/steps"
)

// Deps are what the HTTP layer serves.
type Deps struct {
	Engine  *queue.Engine
	Catalog *queue.Catalog
	Signer  *auth.Signer
	Keys    auth.Keys
	Metrics *metrics.Metrics
	// Push delivers places and admissions to SSE streams.
	Push   *push.Hub
	Logger *slog.Logger
	// Ready names what /readyz checks ("redis", "database"), each with a
	// function that fails when it does not answer.
	Ready map[string]func(ctx context.Context) error
	// AuditBacklog, when set, counts the stream entries the audit writer has
	// not yet written to SQL; /readyz names a backlog (but stays ready on it
	// alone: joins go on while SQL catches up).
	AuditBacklog func() int64
	// Web, when set, is served at / (index.html for unknown non-API paths).
	Web fs.FS
	// TrustProxy takes the client address from X-Forwarded-For.
	TrustProxy bool
	// BindDevice is the device binding mode: BindOff (or ""), BindCookie or
	// BindIP. With binding on, one device holds at most one live attempt per
	// event across all its users (ACTUAL joins; simulator bots are exempt).
	BindDevice string
	// Priority manages FAST TRACK grants; nil answers their routes with 503.
	Priority *queue.Priority
	// Limiter, when set, limits calls per client IP (the --rate-limit rules).
	Limiter *ratelimit.Limiter
	// Practice runs practice races; nil answers their routes with 503.
	Practice *practice.Service
	// StreamCeiling is the most streams (queue and stats) open at once; a
	// stream beyond it answers 503. 0 sets none; the app derives it from the
	// descriptor limit (DefaultStreamCeiling).
	StreamCeiling int
	// Drops runs practice drops; nil answers their routes with 503.
	Drops *drop.Service
	// Steps runs the order steps of events that have them; nil answers
	// their routes with 503.
	Steps *steps.Service
	// AdmissionLog, when set, lists the admissions the live stream no longer
	// holds (the audit trail in SQL).
	AdmissionLog AdmissionLog
	// StreamProbe is how often an open stream checks whether its client has
	// gone; 0 means DefaultStreamProbe. Tests shorten it.
	StreamProbe time.Duration
}

// AdmissionLog lists an event's admissions older than the live stream keeps.
type AdmissionLog interface {
	// RecentAdmissions returns up to limit admitted records numbered below
	// before (any when 0), newest first.
	RecentAdmissions(ctx context.Context, eventID string, before int64, limit int) ([]queue.Record, error)
}

// Server routes the API. Safe for concurrent use.
type Server struct {
	Deps
	metrics   *metrics.Metrics
	observers *observers
	log       *slog.Logger
	router    *gin.Engine
	// stats shares one poller per event among the public stats streams.
	stats *statsHub
	// streams counts open streams against their limits.
	streams *streamLimits
	// seatMaps shares snapshots of large seat maps among their readers.
	seatMaps *queue.SeatMaps
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the router.
func New(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = metrics.New()
	}
	if d.StreamProbe <= 0 {
		d.StreamProbe = DefaultStreamProbe
	}
	d.Keys = d.Keys.Hashed() // once: each presented key is checked against these
	s := &Server{Deps: d, metrics: d.Metrics, observers: newObservers(d.Metrics.HTTP), log: d.Logger, router: gin.New()}
	s.stats = newStatsHub(s.pollStats, statsEvery)
	s.streams = newStreamLimits(d.Metrics.Registry, d.StreamCeiling)
	s.seatMaps = queue.NewSeatMaps(d.Engine, queue.DefaultSeatMapAge)
	r := s.router
	r.HandleMethodNotAllowed = true
	if d.TrustProxy {
		_ = r.SetTrustedProxies([]string{"0.0.0.0/0", "::/0"})
	} else {
		_ = r.SetTrustedProxies(nil)
	}
	r.ContextWithFallback = true
	r.Use(s.recover, nosniff, s.logAndMeasure)
	if limit := s.rateLimit(); limit != nil {
		r.Use(limit) // before the body: 429 wins over every other error
	}
	r.Use(s.body)

	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(d.Metrics.Registry, promhttp.HandlerOpts{})))
	r.GET("/api/v1/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", docs.OpenAPI) })

	v1 := r.Group("/api/v1")
	v1.POST("/sessions", s.createSession)
	v1.GET("/events", s.listEvents)
	v1.GET("/events/:event", s.getEvent)
	v1.POST("/events/:event/queue", s.dropJoin, s.join)
	v1.GET("/events/:event/queue/:token", s.status)
	v1.DELETE("/events/:event/queue/:token", s.leave)
	v1.GET("/events/:event/queue/:token/stream", s.stream)
	v1.POST("/events/:event/verify", s.verify)
	v1.GET("/events/:event/seats", s.seats)
	v1.POST("/events/:event/orders", s.order)
	v1.GET("/events/:event/stats/stream", s.statsStream)
	v1.GET("/events/:event/draw", s.draw)
	v1.GET("/events/:event/challenge", s.challenge)
	v1.GET("/time", s.serverTime)
	st := v1.Group("/events/:event/steps", s.stepsReady)
	st.GET("", s.stepState)
	st.GET("/captcha", s.stepCaptcha)
	st.GET("/seats", s.stepSeats)
	st.GET("/times", s.stepTimes)
	st.POST("/:step", s.doStep)
	dl := v1.Group("/drills/captcha", s.stepsReady)
	dl.POST("", s.newDrill)
	dl.GET("/:drill", s.drillImage)
	dl.POST("/:drill", s.answerDrill)
	v1.POST("/drills/press", s.stepsReady, s.press)
	pr := v1.Group("/practice", s.practiceReady)
	pr.GET("/scenarios", s.practiceScenarios)
	pr.POST("", s.startPractice)
	pr.GET("/history", s.practiceHistory)
	pr.GET("/leaderboard", s.practiceLeaderboard)
	pr.GET("/:event/live", s.practiceLive)
	pr.GET("/:event/result", s.practiceResult)
	dr := v1.Group("", s.dropsReady)
	dr.GET("/drops", s.listDrops)
	dr.GET("/drops/:drop", s.getDrop)
	dr.GET("/drops/:drop/results", s.dropResults)
	dr.GET("/drops/:drop/results/me", s.myDropResult)
	dr.GET("/leaderboard", s.leaderboard)

	admin := v1.Group("/admin", s.requireAdmin, s.params)
	admin.POST("/events", s.createEvent)
	admin.PATCH("/events/:event", s.patchEvent)
	admin.POST("/events/:event/pause", s.setPaused(true))
	admin.POST("/events/:event/resume", s.setPaused(false))
	admin.POST("/events/:event/load", s.reportLoad)
	admin.POST("/events/:event/priority", s.grantPriority)
	admin.GET("/events/:event/priority", s.listPriority)
	admin.DELETE("/events/:event/priority/users/:user", s.revokePriorityUser)
	admin.DELETE("/events/:event/priority/codes/:code", s.revokePriorityCode)
	admin.GET("/events/:event/admissions", s.admissions)
	admin.POST("/drops", s.dropsReady, s.createDrop)

	// Profiles for operators, behind the admin key.
	prof := r.Group("/debug/pprof", s.requireAdmin)
	prof.GET("/", gin.WrapF(pprof.Index))
	prof.GET("/cmdline", gin.WrapF(pprof.Cmdline))
	prof.GET("/profile", gin.WrapF(pprof.Profile))
	prof.GET("/symbol", gin.WrapF(pprof.Symbol))
	prof.GET("/trace", gin.WrapF(pprof.Trace))
	prof.GET("/:name", func(c *gin.Context) { pprof.Handler(c.Param("name")).ServeHTTP(c.Writer, c.Request) })

	r.NoMethod(s.noMethod)
	r.NoRoute(s.noRoute)
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

// noMethod answers a known path called with another method; gin has set
// the Allow header already.
func (s *Server) noMethod(c *gin.Context) {
	s.fail(c, queue.Errorf(queue.CodeMethodNotAllowed, "this method is not allowed here; allowed: %s",
		c.Writer.Header().Get("Allow")))
}

// noRoute serves the web pages for any other GET outside /api/ (index.html
// for paths that name no file) and answers everything else as an API 404.
func (s *Server) noRoute(c *gin.Context) {
	p := c.Request.URL.Path
	if s.Web == nil || strings.HasPrefix(p, "/api/") || c.Request.Method != http.MethodGet {
		s.fail(c, queue.Errorf(queue.CodeNotFound, "no such route"))
		return
	}
	name := strings.TrimPrefix(p, "/")
	if f, err := fs.Stat(s.Web, name); name == "" || err != nil || f.IsDir() {
		name = "index.html"
	}
	h := c.Writer.Header()
	h["Content-Security-Policy"] = contentSecurityPolicy
	h["X-Frame-Options"] = frameDeny
	h["Referrer-Policy"] = noReferrer
	http.ServeFileFS(c.Writer, c.Request, s.Web, name)
}

// Security headers, each a ready header value so setting one allocates nothing.
var (
	// contentSecurityPolicy lets the pages load only their own scripts,
	// styles, images and API calls: no inline code (the pages have none, see
	// web.TestPagesHaveNoInlineCode), no other origin, no plugins, no framing.
	contentSecurityPolicy = []string{"default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"}
	frameDeny             = []string{"DENY"}
	noReferrer            = []string{"no-referrer"}
	nosniffValue          = []string{"nosniff"}
)

// nosniff stops browsers from reading an answer as another type than it
// says (a JSON error as HTML, say).
func nosniff(c *gin.Context) {
	c.Writer.Header()["X-Content-Type-Options"] = nosniffValue
	c.Next()
}

// recover turns a panic into a 500 in the API shape, with no stack in the body.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "path", c.Request.URL.Path, "panic", v)
			s.fail(c, queue.Errorf(queue.CodeInternal, "internal error"))
		}
	}()
	c.Next()
}

// logAndMeasure records every request's latency and logs one line per
// request at logLevel, so the hot join and status paths do not format and
// write a line per call unless debug logging is on.
func (s *Server) logAndMeasure(c *gin.Context) {
	start := time.Now()
	c.Next()
	took := time.Since(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	code := c.Writer.Status()
	s.observers.get(route, code).Observe(took.Seconds())
	level := logLevel(c, code)
	if !s.log.Enabled(c.Request.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method), slog.String("route", route), slog.String("path", c.Request.URL.Path),
		slog.Int("status", code), slog.Duration("latency", took), slog.String("client", s.clientAddr(c)),
	}
	if qc, ok := c.Get(errCodeKey); ok {
		attrs = append(attrs, slog.Any("code", qc))
	}
	if len(c.Errors) > 0 {
		attrs = append(attrs, slog.String("err", c.Errors.String()))
	}
	s.log.LogAttrs(c.Request.Context(), level, "http", attrs...)
}

// logLevel ranks a finished request. Outcomes a race produces by the
// thousand (a seat or the last seat gone, a window ended, an event closed:
// every 409; a rate limit; a token polled after it left) are answers, not
// faults: Debug, like successes, and counted in rushline_errors_total{code}.
// So is a failure the client never saw because it hung up. Other client
// errors are Info, server faults Error.
func logLevel(c *gin.Context, status int) slog.Level {
	qc, _ := c.Get(errCodeKey)
	switch {
	case status < 400, status == http.StatusConflict, status == http.StatusTooManyRequests, qc == queue.CodeTokenNotFound:
		return slog.LevelDebug
	case errors.Is(c.Request.Context().Err(), context.Canceled):
		return slog.LevelDebug // the client went away
	case status >= 500:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (s *Server) body(c *gin.Context) {
	if err := readBody(c); err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
}
