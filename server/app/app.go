// Package app assembles a rushline server from its configuration: Redis (given,
// a private child redis-server, or in-process miniredis), SQL (SQLite by
// default, PostgreSQL by URL), keys, the engine, the admission ticker, the
// audit writer and the HTTP API.
package app

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rushline/rushline/server/admission"
	"github.com/rushline/rushline/server/audit"
	"github.com/rushline/rushline/server/auth"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/httpapi"
	"github.com/rushline/rushline/server/metrics"
	"github.com/rushline/rushline/server/practice"
	"github.com/rushline/rushline/server/push"
	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/ratelimit"
	"github.com/rushline/rushline/server/recovery"
	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/simulator/scenario"
)

// Config is everything a server is started with.
type Config struct {
	// Addr to listen on; ":0" picks a free port.
	Addr        string
	RedisURL    string
	DatabaseURL string
	// DataDir holds keys, the SQLite file and the private Redis's AOF.
	DataDir string
	// Keys given by flag or environment; missing ones are made and kept in DataDir.
	Keys       auth.Keys
	TrustProxy bool
	// RateLimit limits calls per client IP (--rate-limit); empty is off.
	RateLimit ratelimit.Rules
	// BindDevice binds ACTUAL joins to a device (--bind-device): "off" or ""
	// (no check), "cookie" (the session's device cookie) or "ip".
	BindDevice string
	Logger     *slog.Logger
	// Web is served at / when set.
	Web fs.FS
	// Replica names this server among those sharing the Redis; random if empty.
	Replica string
	// Embedded picks the zero-config Redis when RedisURL is empty: "" tries a
	// private redis-server, then miniredis; "redis-server" or "miniredis" insists.
	Embedded string
	// SoloLimits bound the solo practice races; zero fields keep the defaults.
	SoloLimits drop.SoloLimits
	// MaxStreams is the most streams open at once (--max-streams); 0 derives
	// it from the descriptor limit (httpapi.DefaultStreamCeiling).
	MaxStreams int
	// Drops are the schedules of practice drops (--drops); none when empty.
	Drops []drop.Schedule
	// DropScenarios replaces the embedded scenarios drops and solo races
	// use, when set.
	DropScenarios []*scenario.Scenario
}

// Server is a running rushline server.
type Server struct {
	// Addr is where it listens.
	Addr string
	// KeysPath is the file holding generated keys ("" when all were given).
	KeysPath string
	Keys     auth.Keys
	Engine   *queue.Engine
	done     chan error
}

// Wait blocks until the server has shut down and returns why it stopped.
func (s *Server) Wait() error { return <-s.done }

// tokenKey derives the queue-token signing key from the JWT secret.
func tokenKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("rushline queue tokens v1"))
	return m.Sum(nil)
}

// limiter counts rules in rdb, shared with every replica; nil when off.
func limiter(rdb redis.UniversalClient, rules ratelimit.Rules, log *slog.Logger) *ratelimit.Limiter {
	if len(rules) == 0 {
		return nil
	}
	log.Info("rate limits per client IP", "rules", rules.String())
	return ratelimit.New(rdb, rules)
}

// nudging reports admission to its observer, and has this replica's push
// feed read an event's stream at once after a tick that promoted: the people
// it admitted hear of it within a round trip, not a busy stream's pace.
type nudging struct {
	admission.Observer
	hub interface{ Nudge(eventID string) }
}

func (n nudging) Ticked(eventID string, res queue.TickResult, took time.Duration) {
	n.Observer.Ticked(eventID, res, took)
	if res.Promoted > 0 {
		n.hub.Nudge(eventID)
	}
}

// streamCeiling is the most streams the server holds open: configured
// when set, else what the descriptor limit, raised to its hard maximum, leaves.
func streamCeiling(configured int, log *slog.Logger) int {
	n, err := raiseFileLimit()
	switch {
	case configured > 0:
		log.Info("streams", "descriptors", n, "ceiling", configured)
		return configured
	case err != nil && n == 0:
		log.Warn("no descriptor limit known; streams have no ceiling", "err", err)
		return 0
	case err != nil:
		log.Warn("could not raise the descriptor limit", "descriptors", n, "err", err)
	}
	ceiling := httpapi.DefaultStreamCeiling(n)
	log.Info("streams", "descriptors", n, "ceiling", ceiling)
	return ceiling
}

// Start brings a server up and serves until ctx ends; Wait returns after
// everything has stopped.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// The live heap is small and the garbage per request steady: collecting
	// at 200% instead of Go's 100% cut server CPU per join ~10% in bench
	// runs (bench/profiles/join-after2.txt). An explicit GOGC still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if cfg.Replica == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		cfg.Replica = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if !httpapi.ValidBindDevice(cfg.BindDevice) {
		return nil, fmt.Errorf("--bind-device must be off, cookie or ip, got %q", cfg.BindDevice)
	}
	// The port first: a second server on a busy port must fail before it
	// writes keys, a database or a Redis AOF into a fresh data folder.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	cleanups := []func(){func() { _ = ln.Close() }}
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		cleanup()
		return nil, fmt.Errorf("data dir: %w", err)
	}
	keys, keysPath, err := auth.LoadOrCreate(cfg.DataDir, cfg.Keys)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("keys: %w", err)
	}
	signer, err := auth.NewSigner([]byte(keys.JWTSecret), []byte(keys.Service))
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("keys: %w", err)
	}

	rdb, redisDesc, stopRedis, err := connectRedis(ctx, cfg, log)
	if err != nil {
		cleanup()
		return nil, err
	}
	cleanups = append(cleanups, stopRedis)
	// The queue works without SQL (audit records wait in the Redis streams),
	// so a database that does not answer yet is connected in the background.
	db, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir, store.WithRetry(time.Second, log))
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("database: %w", err)
	}
	cleanups = append(cleanups, func() { _ = db.Close() })

	m := metrics.New()
	rdb.AddHook(m.RedisHook())
	// An event SQL holds whose Redis state is gone answers 503 while the
	// keeper rebuilds it, never 404 and never an empty line.
	var keeper *recovery.Keeper
	eng := queue.New(rdb, tokenKey(keys.JWTSecret),
		queue.WithLost(func(ctx context.Context, id string) bool { return keeper.Lost(ctx, id) }))
	cleanups = append(cleanups, eng.Close) // before Redis goes: lets its pipelines finish
	catalog := queue.NewCatalog(db, eng)
	keeper = recovery.NewKeeper(db, eng, catalog, cfg.Replica, recovery.WithObserver(m), recovery.WithLogger(log))
	m.WatchQueues(eng)
	if _, err := keeper.Load(ctx); err != nil {
		log.Warn("could not read the stored events; events Redis lacks answer 503 until the database answers", "err", err)
	}

	tails := tailClient(rdb)
	cleanups = append(cleanups, func() { _ = tails.Close() })
	// The hub only reads: no batcher to start (and never close).
	hub := push.New(queue.New(tails, tokenKey(keys.JWTSecret), queue.WithBatching(queue.Batching{})),
		push.WithObserver(m), push.WithLogger(log))
	cleanups = append(cleanups, hub.Close)

	dopts := []drop.Option{drop.WithSchedules(cfg.Drops...), drop.WithLogger(log), drop.WithForgetter(m),
		drop.WithSoloLimits(cfg.SoloLimits)}
	if len(cfg.DropScenarios) > 0 {
		dopts = append(dopts, drop.WithScenarios(cfg.DropScenarios...))
	}
	drops, err := drop.New(eng, catalog, db, cfg.Replica, dopts...)
	if err != nil {
		_ = ln.Close()
		cleanup()
		return nil, err
	}
	orders, err := orderSteps(eng, rdb, drops, cfg.DropScenarios, db)
	if err != nil {
		_ = ln.Close()
		cleanup()
		return nil, err
	}
	auditor := audit.New(eng, db, cfg.Replica, log, audit.WithObserver(m))
	api := httpapi.New(httpapi.Deps{
		Steps: orders, Engine: eng, Catalog: catalog, Signer: signer, Keys: keys, Metrics: m, Push: hub, Logger: log, Web: cfg.Web,
		TrustProxy: cfg.TrustProxy, Practice: practice.New(drops, eng), Drops: drops, Limiter: limiter(rdb, cfg.RateLimit, log),
		BindDevice: cfg.BindDevice, Priority: queue.NewPriority(db, eng), StreamCeiling: streamCeiling(cfg.MaxStreams, log),
		AdmissionLog: db,
		Ready: map[string]func(context.Context) error{
			"redis":    func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
			"database": db.Ping,
		},
		AuditBacklog: auditor.Behind,
	})
	// Streams are hijacked and set their own deadlines, so these bound only
	// ordinary requests and idle keep-alive connections.
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	// Open streams end at shutdown, so it need not wait them out.
	srv.RegisterOnShutdown(hub.Close)

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		admission.New(eng, cfg.Replica, admission.WithObserver(nudging{m, hub}), admission.WithLogger(log)).Run(workCtx)
	})
	wg.Go(func() { auditor.Run(workCtx) })
	wg.Go(func() { keeper.Run(workCtx) })
	wg.Go(func() { drops.Run(workCtx) })

	s := &Server{Addr: ln.Addr().String(), KeysPath: keysPath, Keys: keys, Engine: eng, done: make(chan error, 1)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("rushline is up", "url", "http://"+s.Addr, "redis", redisDesc, "database", db.Dialect(), "replica", cfg.Replica)
	if keysPath != "" {
		log.Info("keys (admin, simulator, service) are kept in " + keysPath)
	}
	go func() {
		var err error
		select {
		case <-ctx.Done():
		case err = <-serveErr:
		}
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(shutCtx)
		cancel()
		stopWork()
		wg.Wait()
		cleanup()
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}
