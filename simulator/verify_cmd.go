package main

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/server/store"
	"github.com/rushline/rushline/simulator/drawcheck"
)

// verifyDrawCmd checks a random_start event's draw (simulator/drawcheck).
func verifyDrawCmd() *cobra.Command {
	var target, databaseURL, dataDir string
	cmd := &cobra.Command{
		Use:   "verify-draw EVENT --target URL --database-url DSN",
		Short: "Recompute a random_start event's draw from the revealed seed and the audit trail, and say whether the line matches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			reveal, err := drawcheck.FetchReveal(ctx, &http.Client{Timeout: 30 * time.Second}, target, args[0])
			if err != nil {
				return err
			}
			st, err := store.Open(ctx, databaseURL, dataDir)
			if err != nil {
				return err
			}
			defer st.Close()
			trail, err := drawcheck.ReadTrail(ctx, st, args[0])
			if err != nil {
				return err
			}
			res, err := drawcheck.Check(reveal, trail)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res)
			if !res.Matches {
				return errors.New("the draw does not match")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", env("RUSHLINE_TARGET", "http://127.0.0.1:8080"), "server base URL ($RUSHLINE_TARGET)")
	f.StringVar(&databaseURL, "database-url", env("DATABASE_URL", ""), "the server's audit database, postgres://… ($DATABASE_URL); empty uses SQLite under --data")
	f.StringVar(&dataDir, "data", "data", "the server's data folder (its SQLite database when no --database-url)")
	return cmd
}
