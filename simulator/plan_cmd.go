package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/simulator/plan"
)

// planFlags are the plan command's inputs besides plan.Options.
type planFlags struct {
	serverMemMB int
	out         string
	validate    bool
	vc          plan.ValidateConfig
}

func planCmd() *cobra.Command {
	o := plan.DefaultOptions()
	f := planFlags{serverMemMB: int(o.ServerMemory / (1 << 20))}
	cmd := &cobra.Command{
		Use:   "plan [SCENARIO.yaml] --limit ORDERS/S",
		Short: "Plan admission settings and servers for an expected crowd (docs/plan.md)",
		Long: "Runs the crowd of a scenario file (or of --total/--shape/--over) through a model of the\n" +
			"waiting room, sweeps admission settings and recommends one. With --validate it also runs the\n" +
			"recommended setting live on a scaled-down crowd and compares.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runPlan(cmd, args, o, &f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Shape.Total, "total", o.Shape.Total, "crowd size, without a scenario file")
	fl.StringVar(&o.Shape.Kind, "shape", o.Shape.Kind, "crowd shape without a scenario: spike, ramp or constant")
	fl.DurationVar(&o.Shape.Over, "over", o.Shape.Over, "the crowd arrives over this long (without a scenario)")
	fl.Float64Var(&o.Shape.PollShare, "poll-share", o.Shape.PollShare, "share of users who poll instead of streaming (without a scenario)")
	fl.DurationVar(&o.Shape.PollInterval, "poll-interval", o.Shape.PollInterval, "polling users' interval (without a scenario)")
	fl.Int64Var(&o.Shape.Seed, "seed", o.Shape.Seed, "seed of the sampled think times and patience (without a scenario)")
	fl.DurationVar(&o.Think, "think", o.Think, "median time from admission to order (lognormal; overrides the scenario's bots when set)")
	fl.DurationVar(&o.ThinkP90, "think-p90", o.ThinkP90, "90th percentile of the time from admission to order")
	fl.Float64Var(&o.Abandon, "abandon", o.Abandon, "abandon rate: share of the people in line who leave per minute, 0–1 (exponential patience; overrides the scenario's bots when set)")
	fl.Float64Var(&o.Limit, "limit", o.Limit, "orders per second the shop can take (required)")
	fl.Float64Var(&o.Conversion, "conversion", o.Conversion, "share of admitted users who buy, 0–1; the rest hold their slot for the window")
	fl.DurationVar(&o.Window, "window", o.Window, "active window (default: the scenario's active_ttl_s, else "+plan.DefaultWindow.String()+")")
	fl.IntVar(&o.Seats, "seats", o.Seats, "seats for sale, 0 unlimited (default: the scenario's, else 0)")
	fl.StringSliceVar(&o.Grid.Policies, "policies", nil, "policies to sweep (default capacity,batch,adaptive)")
	fl.DurationSliceVar(&o.Grid.Intervals, "intervals", nil, "admission intervals to sweep (default 250ms,500ms,1s)")
	fl.IntSliceVar(&o.Grid.Batches, "batches", nil, "batches to sweep (default: 0.5–1.5 × limit ÷ conversion per second)")
	fl.IntSliceVar(&o.Grid.Capacities, "capacities", nil, "capacities to sweep (default: 0.5, 0.75, 1, 1.5 × that rate × mean slot time)")
	fl.StringVar(&o.Bench, "bench", "", "bench result file with per-server rates (default: newest "+o.BenchDir+"/*.json, else built-in)")
	fl.Float64Var(&o.Headroom, "headroom", o.Headroom, "share of a server's measured rates to plan with")
	fl.IntVar(&f.serverMemMB, "server-memory-mb", f.serverMemMB, "memory per server for SSE streams, MiB")
	fl.StringVar(&f.out, "out", "", "folder for the Markdown and HTML reports (plan-NAME.md, .html)")
	fl.BoolVar(&f.validate, "validate", false, "also run the recommended setting live on a scaled crowd and compare")
	fl.StringVar(&f.vc.Target, "target", env("RUSHLINE_TARGET", "http://127.0.0.1:8080"), "server base URL for --validate ($RUSHLINE_TARGET)")
	fl.StringVar(&f.vc.SimulatorKey, "simulator-key", env("RUSHLINE_SIMULATOR_KEY", ""), "simulator key ($RUSHLINE_SIMULATOR_KEY)")
	fl.StringVar(&f.vc.AdminKey, "admin-key", env("RUSHLINE_ADMIN_KEY", ""), "admin key, to create the event ($RUSHLINE_ADMIN_KEY)")
	fl.Float64Var(&f.vc.Scale, "validate-scale", plan.DefaultValidateScale, "share of the crowd --validate runs")
	fl.IntVar(&f.vc.MaxBots, "validate-max", plan.DefaultValidateMax, "most bots --validate runs")
	fl.Float64Var(&f.vc.Speedup, "validate-speedup", 1, "run --validate this many times faster (durations, think times, window and interval divided by it)")
	cmd.AddCommand(planShardsCmd())
	return cmd
}

func planShardsCmd() *cobra.Command {
	var s plan.LoadShape
	c := plan.DefaultLoadCapacity
	cmd := &cobra.Command{
		Use:   "shards --users N [--over 60s | --peak ARRIVALS/S]",
		Short: "How many rushline-sim shards (processes, Job pods) a crowd of N virtual users needs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := plan.PlanShards(s, c)
			if err != nil {
				return err
			}
			return p.WriteText(cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&s.Users, "users", 0, "virtual users to drive")
	fl.Float64Var(&s.PollShare, "poll-share", 0, "share of them polling instead of streaming, 0–1")
	fl.DurationVar(&s.Over, "over", time.Minute, "how long they take to arrive")
	fl.Float64Var(&s.Peak, "peak", 0, "arrivals per second at the busiest moment (default users ÷ over)")
	fl.IntVar(&c.StreamBots, "stream-bots", c.StreamBots, "streaming bots one process holds (simulator/README.md)")
	fl.IntVar(&c.PollBots, "poll-bots", c.PollBots, "polling bots one process holds")
	fl.Float64Var(&c.Arrivals, "arrivals", c.Arrivals, "arrivals per second one process starts on schedule")
	return cmd
}

// runPlan completes o from the arguments and flags, plans, optionally
// validates, and writes the reports.
func runPlan(cmd *cobra.Command, args []string, o plan.Options, f *planFlags) error {
	fl := cmd.Flags()
	if len(args) == 1 {
		if fl.Changed("total") || fl.Changed("shape") || fl.Changed("over") {
			return errors.New("give either a scenario file or --total/--shape/--over, not both")
		}
		o.Scenario = args[0]
	}
	o.SetThink = fl.Changed("think") || fl.Changed("think-p90")
	o.SetAbandon = fl.Changed("abandon")
	o.ServerMemory = float64(f.serverMemMB) * (1 << 20)
	vc := f.vc
	if isTerminal(os.Stderr) {
		o.Progress, vc.Progress = os.Stderr, os.Stderr
	}
	sc, in, err := o.Resolve()
	if err != nil {
		return err
	}
	p, err := plan.Make(in)
	if err != nil {
		return err
	}
	if err := p.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	var verdict error
	if f.validate {
		fmt.Fprintln(cmd.OutOrStdout())
		if p.Validation, err = plan.Validate(cmd.Context(), sc, p.Best().Setting, in.Event, vc); err != nil {
			return err
		}
		if err := p.Validation.WriteText(cmd.OutOrStdout()); err != nil {
			return err
		}
		if !p.Validation.OK() {
			verdict = plan.ErrDisagrees
		}
	}
	if f.out != "" {
		stem := "plan-" + p.Name
		if err := writeFiles(cmd.ErrOrStderr(), f.out, outFile{stem + ".md", p.WriteMarkdown}, outFile{stem + ".html", p.WriteHTML}); err != nil {
			return err
		}
	}
	return verdict
}
