package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rushline/rushline/server/queue"
	"github.com/rushline/rushline/server/recovery"
	"github.com/rushline/rushline/server/store"
)

// Recover rebuilds eventID in the Redis that cfg names from the audit trail
// in cfg's database (see package recovery). With no Redis URL it works on the
// private redis-server under cfg.DataDir, and refuses while a running
// server holds that directory. It refuses to overwrite an event with live queue state
// unless force.
func Recover(ctx context.Context, cfg Config, eventID string, force bool) (recovery.Report, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.RedisURL == "" {
		cfg.Embedded = "redis-server" // miniredis keeps nothing to recover into
	}
	rdb, desc, stop, err := connectRedis(ctx, cfg, log)
	if err != nil {
		return recovery.Report{}, err
	}
	defer stop()
	db, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return recovery.Report{}, fmt.Errorf("database: %w", err)
	}
	defer db.Close()
	log.Info("recovering from the audit trail", "event", eventID, "redis", desc, "database", db.Dialect())
	eng := queue.New(rdb, nil, queue.WithBatching(queue.Batching{}))
	defer eng.Close()
	return recovery.Recover(ctx, db, eng, eventID, force)
}
