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
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/internal/didyoumean"
	"github.com/rushline/rushline/simulator/engine"
	"github.com/rushline/rushline/simulator/report"
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
		out      string
		progress time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml|NAME --target URL",
		Short: "Run a scenario file or a shipped scenario and write its reports (text on stdout, JSON and HTML files)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := loadScenario(args[0])
			if err != nil {
				return err
			}
			if cfg.Shard, cfg.Shards, err = report.ParseShard(shard); err != nil {
				return fmt.Errorf("--shard: %w", err)
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
				return runErr
			}
			rep, err := report.Build(raw, sc.Thresholds)
			if err != nil {
				return err
			}
			if err := writeReports(cmd, rep, out, sc.Name, shard); err != nil {
				return err
			}
			if runErr != nil && !errors.Is(runErr, context.Canceled) {
				return runErr
			}
			return verdict(rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Target, "target", env("RUSHLINE_TARGET", "http://127.0.0.1:8080"), "server base URL ($RUSHLINE_TARGET)")
	f.StringVar(&cfg.SimulatorKey, "simulator-key", env("RUSHLINE_SIMULATOR_KEY", ""), "simulator key ($RUSHLINE_SIMULATOR_KEY)")
	f.StringVar(&cfg.AdminKey, "admin-key", env("RUSHLINE_ADMIN_KEY", ""), "admin key, to create the event ($RUSHLINE_ADMIN_KEY)")
	f.StringVar(&cfg.EventID, "event", "", "event id to create or use (overrides the scenario; needed to shard a run that creates its event)")
	f.StringVar(&shard, "shard", "", "run shard `I/N` of the arrivals (e.g. 1/2); merge the shards' JSON with rushline-sim report")
	f.DurationVar(&cfg.Grace, "grace", engine.DefaultGrace, "how long to wait for bots still in flight after the last phase")
	f.StringVar(&out, "out", ".", "folder for the JSON and HTML reports")
	f.DurationVar(&progress, "progress", 5*time.Second, "when stderr is not a terminal, print a progress line this often (0: none); a terminal gets a live line")
	return cmd
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
	var out, name string
	cmd := &cobra.Command{
		Use:   "report RUN.json [RUN.json …]",
		Short: "Re-render one saved run, or merge several (e.g. shards) into one report",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reps := make([]*report.Report, 0, len(args))
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
			return verdict(rep)
		},
	}
	cmd.Flags().StringVar(&out, "out", ".", "folder for the merged JSON and HTML reports")
	cmd.Flags().StringVar(&name, "name", "report", "file name stem of the merged reports")
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
