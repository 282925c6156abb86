package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/server/app"
)

// recoverCmd is `rushline-server recover --event ID`: rebuild one event's
// queue in Redis from the SQL audit trail after Redis lost its data.
func recoverCmd() *cobra.Command {
	var (
		cfg       app.Config
		eventID   string
		force     bool
		logFormat string
	)
	cmd := &cobra.Command{
		Use:   "recover --event ID",
		Short: "Rebuild an event's queue in Redis from the SQL audit trail after Redis lost its data",
		Long: "Rebuilds the event definition, the waiting line in its original order (existing queue tokens keep working), " +
			"active windows, finished attempts, sold seats and counters from SQL; the seq and admission counters resume " +
			"past every number SQL had reserved. Running servers do this by themselves for an event whose Redis state is " +
			"gone; the command is for operators, e.g. to rebuild with --force an event whose Redis state SQL does not " +
			"know (a server logs that). Records the audit worker had not yet written when Redis lost them are gone. " +
			"It refuses an event Redis holds unless --force.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logFormat)
			if err != nil {
				return err
			}
			cfg.Logger = log
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := app.Recover(ctx, cfg, eventID, force)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "recovered", rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&eventID, "event", "", "id of the event to rebuild")
	f.BoolVar(&force, "force", false, "overwrite the event's live queue state in Redis")
	f.StringVar(&cfg.RedisURL, "redis-url", env("REDIS_URL", ""), "the Redis to rebuild into ($REDIS_URL); empty uses the private redis-server under --data (stop the server first)")
	f.StringVar(&cfg.DatabaseURL, "database-url", env("DATABASE_URL", ""), "postgres://… ($DATABASE_URL); empty uses SQLite under --data")
	f.StringVar(&cfg.DataDir, "data", env("RUSHLINE_DATA", "./data"), "data folder ($RUSHLINE_DATA)")
	f.StringVar(&logFormat, "log-format", env("RUSHLINE_LOG_FORMAT", "text"), "text or json ($RUSHLINE_LOG_FORMAT)")
	_ = cmd.MarkFlagRequired("event")
	return cmd
}
