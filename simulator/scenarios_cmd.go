package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rushline/rushline/internal/didyoumean"
	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/simulator/scenario"
)

func scenariosCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the shipped scenarios; run and validate take their names as well as file paths",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := scenarios.All()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tBOTS\tSEATS\tDESCRIPTION")
			for _, sc := range all {
				seats := "-"
				if c := sc.Event.Create; c != nil {
					seats = fmt.Sprint(c.Seats)
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", sc.Name, sc.PlannedBots(), seats, sc.Description)
			}
			return w.Flush()
		},
	}
}

// loadScenario reads the scenario file at arg or, when there is no such
// file, the shipped scenario named arg. Neither: the error names the closest
// shipped scenario.
func loadScenario(arg string) (*scenario.Scenario, error) {
	sc, err := scenario.Load(arg)
	if !errors.Is(err, fs.ErrNotExist) {
		return sc, err
	}
	if sc, err := scenarios.Load(arg); err == nil {
		return sc, nil
	}
	msg := fmt.Sprintf("%s: no such file, nor a shipped scenario", arg)
	if best := didyoumean.Closest(strings.TrimSuffix(filepath.Base(arg), ".yaml"), scenarios.Names()...); best != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", best)
	}
	return nil, errors.New(msg + "; rushline-sim scenarios lists them")
}
