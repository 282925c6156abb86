// Package httpapi is rushline's HTTP adapter: the API.md contract on gin,
// over the queue engine. It holds no queue state, so any number of replicas
// may serve the same Redis.
package httpapi

import (
	"context"
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
	// Ready reports whether Redis and the database answer.
	Ready func(ctx context.Context) error
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
	// Drops runs practice drops; nil answers their routes with 503.
	Drops *drop.Service
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
	s := &Server{Deps: d, metrics: d.Metrics, observers: newObservers(d.Metrics.HTTP), log: d.Logger, router: gin.New()}
	s.stats = newStatsHub(s.pollStats, statsEvery)
	r := s.router
	r.HandleMethodNotAllowed = true
	if d.TrustProxy {
		_ = r.SetTrustedProxies([]string{"0.0.0.0/0", "::/0"})
	} else {
		_ = r.SetTrustedProxies(nil)
	}
	r.ContextWithFallback = true
	r.Use(s.recover, s.logAndMeasure)
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
	v1.POST("/events/:event/queue", s.practiceGuard, s.dropJoin, s.join)
	v1.GET("/events/:event/queue/:token", s.status)
	v1.DELETE("/events/:event/queue/:token", s.leave)
	v1.GET("/events/:event/queue/:token/stream", s.stream)
	v1.POST("/events/:event/verify", s.verify)
	v1.GET("/events/:event/seats", s.seats)
	v1.POST("/events/:event/orders", s.order)
	v1.GET("/events/:event/stats/stream", s.statsStream)
	v1.GET("/time", s.serverTime)
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

	admin := v1.Group("/admin", s.requireAdmin)
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

	r.NoMethod(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, errorBody{Error: errorDetail{Code: queue.CodeBadRequest, Message: "method not allowed"}})
	})
	r.NoRoute(s.noRoute)
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

func (s *Server) noRoute(c *gin.Context) {
	p := c.Request.URL.Path
	if s.Web == nil || strings.HasPrefix(p, "/api/") || c.Request.Method != http.MethodGet {
		c.AbortWithStatusJSON(http.StatusNotFound, errorBody{Error: errorDetail{Code: "NOT_FOUND", Message: "no such route"}})
		return
	}
	name := strings.TrimPrefix(p, "/")
	if f, err := fs.Stat(s.Web, name); name == "" || err != nil || f.IsDir() {
		name = "index.html"
	}
	http.ServeFileFS(c.Writer, c.Request, s.Web, name)
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
// request: failures at Info (4xx) or Error (5xx), successes at Debug, so the
// hot join and status paths do not format and write a line per call unless
// debug logging is on.
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
	level := slog.LevelDebug
	switch {
	case code >= 500:
		level = slog.LevelError
	case code >= 400:
		level = slog.LevelInfo
	}
	if !s.log.Enabled(c.Request.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method), slog.String("route", route), slog.String("path", c.Request.URL.Path),
		slog.Int("status", code), slog.Duration("latency", took), slog.String("client", s.clientAddr(c)),
	}
	if len(c.Errors) > 0 {
		attrs = append(attrs, slog.String("err", c.Errors.String()))
	}
	s.log.LogAttrs(c.Request.Context(), level, "http", attrs...)
}

func (s *Server) body(c *gin.Context) {
	if err := readBody(c); err != nil {
		s.fail(c, err)
		return
	}
	c.Next()
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if s.Ready != nil {
		if err := s.Ready(ctx); err != nil {
			s.fail(c, queue.Unavailable(err))
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}
