// Command rushline-server serves the rushline waiting room: the HTTP API, the
// web pages and /metrics. See DESIGN.md, "Command lines".
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/internal/didyoumean"
	"github.com/rushline/rushline/server/app"
	"github.com/rushline/rushline/server/drop"
	"github.com/rushline/rushline/server/ratelimit"
	"github.com/rushline/rushline/web"
)

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func main() {
	if err := rootCmd().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "rushline-server:", err)
		os.Exit(1)
	}
}

// addrAliases are the flags people try for --addr.
var addrAliases = map[string]didyoumean.Alias{
	"port":   {Flag: "addr", Example: "--addr :8080"},
	"listen": {Flag: "addr", Example: "--addr :8080"},
	"host":   {Flag: "addr", Example: "--addr 0.0.0.0:8080"},
	"bind":   {Flag: "addr", Example: "--addr 0.0.0.0:8080"},
}

// rootCmd is rushline-server's command line.
func rootCmd() *cobra.Command {
	var (
		cfg       app.Config
		logFormat string
		rateLimit string
		drops     string
	)
	root := &cobra.Command{
		Use:           "rushline-server",
		Short:         "Serve the rushline waiting room",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          didyoumean.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logFormat)
			if err != nil {
				return err
			}
			if cfg.RateLimit, err = ratelimit.Parse(rateLimit); err != nil {
				return fmt.Errorf("--rate-limit: %w", err)
			}
			if v, ok := os.LookupEnv("RUSHLINE_MAX_STREAMS"); ok && !cmd.Flags().Changed("max-streams") {
				if cfg.MaxStreams, err = strconv.Atoi(v); err != nil {
					return fmt.Errorf("RUSHLINE_MAX_STREAMS: %w", err)
				}
			}
			if cfg.MaxStreams < 0 {
				return fmt.Errorf("--max-streams must be 0 (derived) or more, got %d", cfg.MaxStreams)
			}
			if cfg.Drops, err = drop.ParseSchedules(drops); err != nil {
				return fmt.Errorf("--drops: %w", err)
			}
			cfg.Logger, cfg.Web = log, web.FS()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := app.Start(ctx, cfg)
			if err != nil {
				return err
			}
			return srv.Wait()
		},
	}
	f := root.Flags()
	f.StringVar(&cfg.Addr, "addr", env("RUSHLINE_ADDR", "127.0.0.1:8080"), "listen address ($RUSHLINE_ADDR)")
	f.StringVar(&cfg.RedisURL, "redis-url", env("REDIS_URL", ""), "redis://host:port/db, or host:port,host:port,… for a Redis Cluster ($REDIS_URL); empty starts a private redis-server, or miniredis")
	f.StringVar(&cfg.DatabaseURL, "database-url", env("DATABASE_URL", ""), "postgres://… ($DATABASE_URL); empty uses SQLite under --data")
	f.StringVar(&cfg.DataDir, "data", env("RUSHLINE_DATA", "./data"), "data folder: keys, SQLite, the private Redis's AOF ($RUSHLINE_DATA)")
	f.StringVar(&cfg.Keys.Admin, "admin-key", env("RUSHLINE_ADMIN_KEY", ""), "admin key ($RUSHLINE_ADMIN_KEY); made and kept under --data when empty")
	f.StringVar(&cfg.Keys.Simulator, "simulator-key", env("RUSHLINE_SIMULATOR_KEY", ""), "simulator key ($RUSHLINE_SIMULATOR_KEY)")
	f.StringVar(&cfg.Keys.Service, "service-key", env("RUSHLINE_SERVICE_KEY", ""), "order-service key, also signs passes ($RUSHLINE_SERVICE_KEY)")
	f.StringVar(&cfg.Keys.JWTSecret, "jwt-secret", env("RUSHLINE_JWT_SECRET", ""), "session and queue-token signing secret ($RUSHLINE_JWT_SECRET)")
	f.BoolVar(&cfg.TrustProxy, "trust-proxy", env("RUSHLINE_TRUST_PROXY", "") == "true", "take client addresses from X-Forwarded-For ($RUSHLINE_TRUST_PROXY=true)")
	f.StringVar(&rateLimit, "rate-limit", env("RUSHLINE_RATE_LIMIT", "off"), `per-client-IP limits shared through Redis ($RUSHLINE_RATE_LIMIT): "off", a bare RATE/PERIOD[:BURST] for every route, or ROUTE=LIMIT items, e.g. "join=5/s:10,status=2/s:5,seats=2/s"; routes: sessions, join, status, stream, leave, seats, orders, practice`)
	f.StringVar(&drops, "drops", env("RUSHLINE_DROPS", drop.DefaultSchedules), `practice drop schedules ($RUSHLINE_DROPS): "off", or schedules separated by ";", each "every=5m" or "at=20:00" (UTC) with optional scenario=, level=easy|normal|hard, crowd=, seats=, name=`)
	f.StringVar(&cfg.BindDevice, "bind-device", env("RUSHLINE_BIND_DEVICE", "off"), "one live place per event per device for ACTUAL users ($RUSHLINE_BIND_DEVICE): off, cookie (the session's device cookie) or ip (the client address)")
	f.IntVar(&cfg.MaxStreams, "max-streams", 0, "most streams (queue and stats) open at once, beyond which a stream answers 503 ($RUSHLINE_MAX_STREAMS); 0 keeps a quarter of the descriptor limit for everything else and allows the rest")
	f.StringVar(&cfg.Embedded, "embedded", env("RUSHLINE_EMBEDDED", ""), "zero-config Redis when --redis-url is empty: redis-server or miniredis (default: redis-server if on PATH, else miniredis)")
	f.StringVar(&logFormat, "log-format", env("RUSHLINE_LOG_FORMAT", "text"), "text or json ($RUSHLINE_LOG_FORMAT)")
	_ = logLevel.UnmarshalText([]byte(env("RUSHLINE_LOG_LEVEL", "info")))
	f.TextVar(logLevel, "log-level", logLevel, "debug, info, warn or error; debug adds a line per successful request ($RUSHLINE_LOG_LEVEL)")
	root.AddCommand(recoverCmd())
	didyoumean.Suggest(root, addrAliases)
	return root
}

// logLevel is the least level logged (--log-level).
var logLevel = new(slog.LevelVar)

func newLogger(format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: logLevel}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", format)
}
