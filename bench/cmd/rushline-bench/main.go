// Command rushline-bench measures rushline on this machine; see bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/bench"
	"github.com/rushline/rushline/bench/naive"
	"github.com/rushline/rushline/server/push"
)

func main() {
	root := &cobra.Command{Use: "rushline-bench", Short: "Measure rushline on this machine", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(pushCmd(), dropCmd(), runCmd(), abCmd(), naiveCmd(), compareCmd(), reportCmd())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "rushline-bench:", err)
		os.Exit(1)
	}
}

func pushCmd() *cobra.Command {
	cfg := bench.PushConfig{PushTick: push.DefaultTick, Progress: os.Stderr}
	var out string
	cmd := &cobra.Command{
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
	f := cmd.Flags()
	f.StringVar(&cfg.ServerBin, "server", "bin/rushline-server", "rushline-server binary")
	f.IntVar(&cfg.Streams, "streams", 10_000, "SSE streams to hold")
	f.IntVar(&cfg.Batch, "batch", 200, "admit_batch (with --interval-ms: 2,000 promotions/s by default)")
	f.IntVar(&cfg.IntervalMS, "interval-ms", 100, "admit_interval_ms")
	f.DurationVar(&cfg.Quiet, "quiet", 5*time.Second, "how long to count Redis commands with every stream open and nothing moving")
	f.StringVar(&cfg.ProfileDir, "profile", "", "save the server's heap, allocs and goroutine profiles, taken with every stream open, into this folder")
	f.StringVar(&out, "out", "", "also write the JSON result to this file")
	return cmd
}

func dropCmd() *cobra.Command {
	cfg := bench.DefaultDropConfig()
	cfg.Progress = os.Stderr
	host, _ := os.Hostname()
	var out string
	cmd := &cobra.Command{
		Use:   "drop",
		Short: "Play one practice drop: a crowd the server plays and people on SSE; CPU, promotion latency, RSS, sold out, consistency",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := bench.RunDrop(cmd.Context(), cfg, host)
			if err != nil {
				return err
			}
			return publish(res, out, res.Date.Format("2006-01-02")+"-drop")
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ServerBin, "server", cfg.ServerBin, "rushline-server binary")
	f.IntVar(&cfg.Crowd, "crowd", cfg.Crowd, "virtual users of the drop's crowd (0–1,000,000)")
	f.IntVar(&cfg.People, "people", cfg.People, "people racing the drop over HTTP and SSE")
	f.IntVar(&cfg.Seats, "seats", cfg.Seats, "seats of the drop")
	f.StringVar(&cfg.Scenario, "scenario", cfg.Scenario, "scenario of the drop (its arrival curve and event settings)")
	f.StringVar(&cfg.Level, "level", cfg.Level, "level of the crowd: easy, normal or hard")
	f.DurationVar(&cfg.Spread, "spread", cfg.Spread, "the people join evenly over this long from the opening")
	f.DurationVar(&cfg.Limit, "limit", cfg.Limit, "give up when the drop is not finished this long after its opening")
	f.StringVar(&host, "host", host, "machine name in the result")
	f.StringVar(&out, "out", "bench/results", "folder for <date>-drop.json, .md and .html")
	return cmd
}

// publish writes res as <dir>/<base>.json, .md and .html, prints the Markdown
// and names the files.
func publish(res *bench.Result, dir, base string) error {
	paths, err := res.WriteFilesNamed(dir, base)
	if err != nil {
		return err
	}
	if err := bench.Markdown(os.Stdout, res); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join(paths, ", "))
	return nil
}

func runCmd() *cobra.Command {
	cfg := bench.DefaultRunConfig()
	cfg.Progress = os.Stderr
	var out string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The full harness: redis-benchmark, the naive baseline and rushline-server at every size, admission, push, memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.NaiveCmd = []string{self, "naive"}
			res, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return publish(res, out, res.BaseName())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ServerBin, "server", cfg.ServerBin, "rushline-server binary")
	f.StringVar(&cfg.RedisBenchmarkBin, "redis-benchmark", cfg.RedisBenchmarkBin, "redis-benchmark binary")
	f.IntSliceVar(&cfg.Sizes, "sizes", cfg.Sizes, "line lengths (waiting users) each HTTP load starts from (its first round: later rounds go on with the line the last left)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of one round of each HTTP load")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds of each HTTP load, the servers taking turns")
	f.IntVar(&cfg.Connections, "connections", cfg.Connections, "closed-loop clients, for HTTP and redis-benchmark")
	f.BoolVar(&cfg.Pin, "pin-servers", cfg.Pin, "measure the floor's and rushline's joins once more at the first size with the servers on CPUs of their own (Linux, 2+ CPUs)")
	f.IntVar(&cfg.RedisBenchmarkRequests, "redis-requests", cfg.RedisBenchmarkRequests, "redis-benchmark requests per test (-n)")
	f.IntVar(&cfg.AdmissionWaiting, "admission-waiting", cfg.AdmissionWaiting, "users promoted in the admission step")
	f.IntVar(&cfg.AdmissionBatch, "admission-batch", cfg.AdmissionBatch, "admit_batch of the admission step")
	f.IntVar(&cfg.Streams, "streams", cfg.Streams, "SSE streams held in the push step")
	f.DurationVar(&cfg.PushQuiet, "push-quiet", cfg.PushQuiet, "how long the push step counts Redis commands with every stream open")
	f.IntVar(&cfg.Drop.Crowd, "drop-crowd", cfg.Drop.Crowd, "virtual users of the drop step's crowd (0 with --drop-people 0 skips the step)")
	f.IntVar(&cfg.Drop.People, "drop-people", cfg.Drop.People, "people racing the drop step over SSE")
	f.StringVar(&cfg.Host, "host", cfg.Host, "machine name in the result file name")
	f.StringVar(&out, "out", "bench/results", "folder for <date>-<host>.json and .md")
	return cmd
}

func abCmd() *cobra.Command {
	host, _ := os.Hostname()
	cfg := bench.ABConfig{Op: bench.OpJoin, Tokens: 1000, Rounds: 10, Duration: 6 * time.Second, Connections: 64,
		Warmup: bench.DefaultWarmup, Progress: os.Stderr}
	var builds []string
	var out string
	cmd := &cobra.Command{
		Use:   "ab",
		Short: "Compare rushline-server builds round by round: server and Redis CPU per join (or status read) against the HTTP floor, Redis's commands",
		Long: "Each build (--build NAME=BIN, repeated; the first is the one the others are compared with) gets a Redis of its own.\n" +
			"Every round, each build and the HTTP floor take new joins in turn, each alone: the others are stopped (SIGSTOP).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.NaiveCmd, cfg.Host = []string{self, "naive"}, host
			for _, b := range builds {
				name, bin, ok := strings.Cut(b, "=")
				if !ok || name == "" || bin == "" {
					return fmt.Errorf("--build %q: want NAME=BIN", b)
				}
				cfg.Builds = append(cfg.Builds, bench.ABBuild{Name: name, Bin: bin})
			}
			res, err := bench.AB(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := bench.ABMarkdown(os.Stdout, res); err != nil {
				return err
			}
			if out == "" {
				return nil
			}
			paths, err := bench.WriteABFiles(res, out, res.Date.Format("2006-01-02")+"-ab-"+host)
			if err == nil {
				fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join(paths, ", "))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&builds, "build", []string{"current=bin/rushline-server"}, "a build to measure, as NAME=BIN (repeat the flag for more)")
	f.StringVar(&cfg.Op, "op", cfg.Op, "what the loads send: join (new users) or status (reads of the last --tokens users to join)")
	f.IntVar(&cfg.Tokens, "tokens", cfg.Tokens, "users each build joins after the warm-up whose status the status loads read, round robin")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds; every server takes one load a round")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of one load")
	f.IntVar(&cfg.Connections, "connections", cfg.Connections, "closed-loop clients (with --rate, the clients an open loop starts with)")
	f.IntVar(&cfg.Rate, "rate", 0, "requests a second of an open loop in place of the closed loop (e.g. 5000: the latency a batching change costs callers at that rate)")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "joins each server takes, unrecorded, before the first round")
	f.IntVar(&cfg.Waiting, "waiting", 0, "users put in each build's line before the warm-up (e.g. 1000000 to join behind a line of a million)")
	f.StringVar(&cfg.ProfileDir, "profile", "", "save a CPU profile of each build over its last round into this folder (<name>/profile.pb.gz)")
	f.StringVar(&host, "host", host, "machine name in the result")
	f.StringVar(&out, "out", "", "also write <date>-ab-<host>.json and .md into this folder")
	return cmd
}

func naiveCmd() *cobra.Command {
	var addr, redisURL string
	var floor bool
	cmd := &cobra.Command{
		Use:   "naive",
		Short: "Serve the naive baseline: minimal gin, one EVALSHA per join, one ZRANK per status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if floor {
				return naive.ServeFloor(cmd.Context(), addr)
			}
			return naive.Serve(cmd.Context(), addr, redisURL)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "listen address")
	cmd.Flags().StringVar(&redisURL, "redis-url", "redis://127.0.0.1:6379", "Redis to use")
	cmd.Flags().BoolVar(&floor, "floor", false, "serve the HTTP floor instead: the same routes answered with a constant, no Redis")
	return cmd
}

// errRegression makes compare --fail exit non-zero.
var errRegression = errors.New("regressions beyond the threshold")

func reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Write a result file's Markdown and HTML report again, beside it (after the report format changed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := bench.ReadResult(args[0])
			if err != nil {
				return err
			}
			res.ComputeRatios()
			paths, err := res.WriteFilesNamed(filepath.Dir(args[0]), strings.TrimSuffix(filepath.Base(args[0]), ".json"))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join(paths, ", "))
			return nil
		},
	}
}

func compareCmd() *cobra.Command {
	var threshold float64
	var fail bool
	cmd := &cobra.Command{
		Use:   "compare OLD.json NEW.json",
		Short: "Compare two result files figure by figure, flagging regressions",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := bench.ReadResult(args[0])
			if err != nil {
				return err
			}
			new, err := bench.ReadResult(args[1])
			if err != nil {
				return err
			}
			n, err := bench.Compare(os.Stdout, old, new, threshold)
			if err != nil {
				return err
			}
			if fail && n > 0 {
				return fmt.Errorf("%d %w", n, errRegression)
			}
			return nil
		},
	}
	cmd.Flags().Float64Var(&threshold, "threshold", 10, "percent a figure may get worse before it is flagged")
	cmd.Flags().BoolVar(&fail, "fail", false, "exit non-zero when a figure regressed")
	return cmd
}
