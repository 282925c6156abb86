// Command rushline-sim runs scenario-driven bots against a rushline server and
// reports what happened. See scenarios/README.md for the scenario format.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/internal/didyoumean"
	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/report"
	"github.com/rushline/rushline/simulator/results"
)

// exitThresholds is the exit status of a run whose thresholds failed (as k6).
const exitThresholds = 99

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := rootCmd().ExecuteContext(ctx)
	var failed thresholdsFailed
	switch {
	case errors.As(err, &failed):
		fmt.Fprintln(os.Stderr, "rushline-sim:", err)
		os.Exit(exitThresholds)
	case err != nil:
		fmt.Fprintln(os.Stderr, "rushline-sim:", err)
		os.Exit(1)
	}
}

// rootCmd is rushline-sim's command line.
func rootCmd() *cobra.Command {
	root := &cobra.Command{Use: "rushline-sim", Short: "Race scenario-driven bots through a rushline waiting room",
		SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(runCmd(), validateCmd(), scenariosCmd(), reportCmd(), planCmd(), verifyDrawCmd())
	didyoumean.Suggest(root, nil)
	return root
}

type thresholdsFailed struct{ n int }

func (t thresholdsFailed) Error() string { return fmt.Sprintf("%d threshold(s) failed", t.n) }

func runCmd() *cobra.Command {
	var (
		cfg      engine.Config
		shard    string
		shards   int
		startAt  string
		store    string
		runID    string
		out      string
		progress time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|NAME --target URL",
		Short: "Run a scenario file or a shipped scenario and write its reports (text on stdout, JSON and HTML files)",
		Long:  "Run a scenario file or a shipped scenario and write its reports (text on stdout, JSON and HTML files).\nWithout an argument the scenario is $RUSHLINE_SCENARIO.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := os.Getenv("RUSHLINE_SCENARIO")
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" {
				return errors.New("run: name a scenario file or a shipped scenario (or set $RUSHLINE_SCENARIO)")
			}
			sc, err := loadScenario(name)
			if err != nil {
				return err
			}
			if cfg.Shard, cfg.Shards, err = results.ParseShard(shard, shards, os.Getenv); err != nil {
				return fmt.Errorf("--shard: %w", err)
			}
			if startAt != "" {
				if cfg.StartAt, err = time.Parse(time.RFC3339Nano, startAt); err != nil {
					return fmt.Errorf("--start-at: want an RFC 3339 time such as 2026-11-25T20:00:00Z: %w", err)
				}
			}
			var sink *results.Sink
			if store != "" {
				if sink, err = results.NewSink(store, runID, cfg.Shard, cfg.Shards); err != nil {
					return fmt.Errorf("--results: %w", err)
				}
			}
			// A terminal gets a line redrawn each second; a pipe or a log
			// file a line of its own every --progress.
			switch errOut := cmd.ErrOrStderr(); {
			case isTerminal(errOut):
				cfg.Progress = errOut
			case progress > 0:
				cfg.Progress, cfg.ProgressEvery = errOut, progress
			}
			raw, runErr := engine.Run(cmd.Context(), sc, cfg)
			if raw.EventID == "" {
				return sink.Failed(cmd.Context(), runErr)
			}
			rep, err := report.Build(raw, sc.Thresholds)
			if err != nil {
				return sink.Failed(cmd.Context(), err)
			}
			if err := writeReports(cmd, rep, out, sc.Name, raw.Shard); err != nil {
				return err
			}
			if runErr != nil && !errors.Is(runErr, context.Canceled) {
				return sink.Failed(cmd.Context(), runErr)
			}
			if err := sink.Done(cmd.Context(), rep); err != nil {
				return err
			}
			if sink != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "stored", sink)
			}
			return verdict(rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Target, "target", env("RUSHLINE_TARGET", "http://127.0.0.1:8080"), "server base URL ($RUSHLINE_TARGET)")
	f.StringVar(&cfg.SimulatorKey, "simulator-key", env("RUSHLINE_SIMULATOR_KEY", ""), "simulator key ($RUSHLINE_SIMULATOR_KEY)")
	f.StringVar(&cfg.AdminKey, "admin-key", env("RUSHLINE_ADMIN_KEY", ""), "admin key, to create the event ($RUSHLINE_ADMIN_KEY)")
	f.StringVar(&cfg.EventID, "event", env("RUSHLINE_EVENT", ""), "event id to create or use (overrides the scenario; needed to shard a run that creates its event) ($RUSHLINE_EVENT)")
	f.StringVar(&shard, "shard", env("RUSHLINE_SHARD", ""), "run shard `I/N` of the arrivals (e.g. 1/2), or auto: I from $JOB_COMPLETION_INDEX (0-based, as a Kubernetes Indexed Job sets it), N from --shards ($RUSHLINE_SHARD)")
	f.IntVar(&shards, "shards", envInt("RUSHLINE_SHARDS"), "shard count for --shard auto ($RUSHLINE_SHARDS)")
	f.StringVar(&startAt, "start-at", env("RUSHLINE_START_AT", ""), "start the scenario clock at this RFC 3339 instant, counting down until then; give every shard the same one ($RUSHLINE_START_AT)")
	f.StringVar(&store, "results", env("RUSHLINE_RESULTS", ""), "also store this shard's result under `LOCATION`/RUN for rushline-sim report --merge: a folder or s3://bucket[/prefix] ($RUSHLINE_RESULTS)")
	f.StringVar(&runID, "run-id", env("RUSHLINE_RUN_ID", ""), "the run's name under --results; every shard of a run gives the same one ($RUSHLINE_RUN_ID)")
	f.DurationVar(&cfg.Grace, "grace", engine.DefaultGrace, "how long to wait for bots still in flight after the last phase")
	f.DurationVar(&cfg.LagTolerance, "lag-tolerance", report.DefaultLagTolerance, "arrivals later than this at p99 flag the run \"load generator saturated\"")
	f.IntVar(&cfg.MaxStreams, "max-streams", 0, "most SSE streams this process holds at once (0: what its descriptor limit allows); bots beyond wait their turn")
	f.BoolVar(&cfg.KeepBots, "raw-bots", false, "keep every bot's journey in the JSON report, beside the aggregates")
	f.BoolVar(&cfg.KeepRequests, "raw-requests", false, "keep every request in the JSON report, beside the aggregates (large: ~200 B a request)")
	f.StringVar(&out, "out", env("RUSHLINE_OUT", "."), "folder for the JSON and HTML reports ($RUSHLINE_OUT)")
	f.DurationVar(&progress, "progress", 5*time.Second, "when stderr is not a terminal, print a progress line this often (0: none); a terminal gets a live line")
	return cmd
}

// envInt is the whole number in environment variable name, 0 when unset or not one.
func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// envDuration is the duration in environment variable name, 0 when unset or not one.
func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

func validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate SCENARIO.yaml|NAME",
		Short: "Check a scenario file (or a shipped scenario); errors name the line and the field",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok — %d phase(s) over %s, %d bot behaviour(s), %d threshold(s)\n",
				args[0], len(sc.Phases), sc.TotalDuration(), len(sc.Bots), len(sc.Thresholds))
			for _, p := range sc.Phases {
				n := "closed model"
				if e := p.ExpectedArrivals(); e >= 0 {
					n = fmt.Sprintf("≈%.0f arrivals", e)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "  %-12s %-8s %8s  %s\n", p.Name, p.Arrival, time.Duration(p.Duration), n)
			}
			return nil
		},
	}
}

func reportCmd() *cobra.Command {
	var (
		out, name, merge string
		partial          bool
		wait             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "report RUN.json [RUN.json …] | report --merge LOCATION/RUN",
		Short: "Re-render one saved run, or merge several (e.g. shards) into one report",
		Args: func(cmd *cobra.Command, args []string) error {
			if merge == "" {
				return cobra.MinimumNArgs(1)(cmd, args)
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var reps []*report.Report
			if merge != "" {
				var problem string
				var err error
				reps, problem, err = results.Collect(cmd.Context(), merge, wait, partial)
				if err != nil {
					return err
				}
				if problem != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "rushline-sim: merging without", problem)
				}
			}
			for _, p := range args {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				r, err := report.Read(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				reps = append(reps, r)
			}
			rep, err := report.Merge(reps...)
			if err != nil {
				return err
			}
			if err := writeReports(cmd, rep, out, name, "merged"); err != nil {
				return err
			}
			if merge != "" {
				if err := results.StoreMerged(cmd.Context(), merge, rep); err != nil {
					return err
				}
			}
			return verdict(rep)
		},
	}
	cmd.Flags().StringVar(&out, "out", env("RUSHLINE_OUT", "."), "folder for the merged JSON and HTML reports ($RUSHLINE_OUT)")
	cmd.Flags().StringVar(&name, "name", "report", "file name stem of the merged reports")
	cmd.Flags().StringVar(&merge, "merge", env("RUSHLINE_MERGE", ""), "merge every shard stored under `LOCATION/RUN` (a folder or s3://bucket[/prefix], then the run's name), and store the merged report there too; missing or failed shards are an error ($RUSHLINE_MERGE)")
	cmd.Flags().DurationVar(&wait, "wait", envDuration("RUSHLINE_MERGE_WAIT"), "with --merge, wait up to this long for shards still missing, e.g. when started beside the shards' Job ($RUSHLINE_MERGE_WAIT)")
	cmd.Flags().BoolVar(&partial, "partial", false, "with --merge, merge the shards there are and name the missing or failed ones instead of failing")
	return cmd
}

// writeReports prints the text summary on cmd's output and writes the JSON
// and HTML files.
func writeReports(cmd *cobra.Command, rep *report.Report, dir, stem, suffix string) error {
	if err := rep.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	base := stem + "-" + time.Now().Format("20060102-150405")
	if suffix != "" {
		base += "-" + strings.ReplaceAll(suffix, "/", "of")
	}
	return writeFiles(cmd.ErrOrStderr(), dir, outFile{base + ".json", rep.WriteJSON}, outFile{base + ".html", rep.WriteHTML})
}

// outFile is a file writeFiles writes: its name and what writes its content.
type outFile struct {
	name  string
	write func(io.Writer) error
}

// writeFiles creates dir and writes each file into it, naming each on log.
func writeFiles(log io.Writer, dir string, files ...outFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, of := range files {
		path := filepath.Join(dir, of.name)
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = of.write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintln(log, "wrote", path)
	}
	return nil
}

func verdict(rep *report.Report) error {
	if rep.Passed() {
		return nil
	}
	n := 0
	for _, t := range rep.Thresholds {
		if !t.Pass {
			n++
		}
	}
	return thresholdsFailed{n}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
