// Command rushline-bench measures rushline on this machine; see bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/bench"
	"github.com/rushline/rushline/server/push"
)

func main() {
	root := &cobra.Command{Use: "rushline-bench", Short: "Measure rushline on this machine", SilenceUsage: true}
	cfg := bench.PushConfig{PushTick: push.DefaultTick, Progress: os.Stderr}
	var out string
	pushCmd := &cobra.Command{
		Use:   "push",
		Short: "Hold many SSE streams against one server and promote them all",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := bench.Push(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			b, _ := json.MarshalIndent(res, "", "  ")
			fmt.Println(string(b))
			if out != "" {
				return os.WriteFile(out, append(b, '\n'), 0o644)
			}
			return nil
		},
	}
	f := pushCmd.Flags()
	f.StringVar(&cfg.ServerBin, "server", "bin/rushline-server", "rushline-server binary")
	f.IntVar(&cfg.Streams, "streams", 10_000, "SSE streams to hold")
	f.IntVar(&cfg.Batch, "batch", 200, "admit_batch (with --interval-ms: 2,000 promotions/s by default)")
	f.IntVar(&cfg.IntervalMS, "interval-ms", 100, "admit_interval_ms")
	f.DurationVar(&cfg.Quiet, "quiet", 5*time.Second, "how long to count Redis commands with every stream open and nothing moving")
	f.StringVar(&cfg.ProfileDir, "profile", "", "save the server's heap, allocs and goroutine profiles, taken with every stream open, into this folder")
	f.StringVar(&out, "out", "", "also write the JSON result to this file")
	root.AddCommand(pushCmd)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "rushline-bench:", err)
		os.Exit(1)
	}
}
