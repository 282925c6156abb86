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
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rushline/rushline/docs"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/metrics"
	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
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
}

// Server routes the API. Safe for concurrent use.
type Server struct {
	Deps
	metrics *metrics.Metrics
	log     *slog.Logger
	router  *gin.Engine
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
	s := &Server{Deps: d, metrics: d.Metrics, log: d.Logger, router: gin.New()}
	r := s.router
	r.HandleMethodNotAllowed = true
	if d.TrustProxy {
		_ = r.SetTrustedProxies([]string{"0.0.0.0/0", "::/0"})
	} else {
		_ = r.SetTrustedProxies(nil)
	}
	r.ContextWithFallback = true
	r.Use(s.recover, s.logAndMeasure, s.body)

	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(d.Metrics.Registry, promhttp.HandlerOpts{})))
	r.GET("/api/v1/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", docs.OpenAPI) })

	v1 := r.Group("/api/v1")
	v1.POST("/sessions", s.createSession)
	v1.GET("/events", s.listEvents)
	v1.GET("/events/:event", s.getEvent)
	v1.POST("/events/:event/queue", s.join)
	v1.GET("/events/:event/queue/:token", s.status)
	v1.DELETE("/events/:event/queue/:token", s.leave)
	v1.GET("/events/:event/queue/:token/stream", s.stream)
	v1.POST("/events/:event/verify", s.verify)
	v1.GET("/events/:event/seats", s.seats)
	v1.POST("/events/:event/orders", s.order)

	admin := v1.Group("/admin", s.requireAdmin)
	admin.POST("/events", s.createEvent)
	admin.PATCH("/events/:event", s.patchEvent)
	admin.POST("/events/:event/pause", s.setPaused(true))
	admin.POST("/events/:event/resume", s.setPaused(false))
	admin.POST("/events/:event/load", s.reportLoad)

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

// logAndMeasure logs one line per request and records its latency.
func (s *Server) logAndMeasure(c *gin.Context) {
	start := time.Now()
	c.Next()
	took := time.Since(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	code := c.Writer.Status()
	s.metrics.HTTP.WithLabelValues(route, strconv.Itoa(code)).Observe(took.Seconds())
	level := slog.LevelInfo
	if code >= 500 {
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method), slog.String("route", route), slog.String("path", c.Request.URL.Path),
		slog.Int("status", code), slog.Duration("latency", took), slog.String("client", c.ClientIP()),
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
