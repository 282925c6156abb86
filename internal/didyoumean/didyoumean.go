// Package didyoumean finds the name a user meant: the closest of the known
// names by edit distance, for misspelt scenario fields, flags, subcommands
// and scenario names.
package didyoumean

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// MaxDistance is the most edits a misspelling may be from the name it is
// taken for.
const MaxDistance = 2

// Closest returns the candidate fewest edits from name, at most MaxDistance
// away (ties go to the alphabetically first), or "" when none is that close.
func Closest(name string, candidates ...string) string {
	best, bestD := "", MaxDistance+1
	for _, c := range candidates {
		if d := Distance(name, c); d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// Distance counts the edits (insert, delete, replace, swap of two
// neighbours) that turn a into b.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Alias points a flag name people try at the flag that does its job, with
// an example of its use (e.g. --port at --addr, "--addr :8080").
type Alias struct {
	Flag, Example string
}

// FlagErrors is a cobra FlagErrorFunc: an unknown flag's error gains the
// command's closest flag, "unknown flag: --tagret (did you mean --target?)".
// A name in aliases is answered with its alias and example instead. A long
// name given with one dash (-target), which pflag reads as shorthands, is
// matched as the long name.
func FlagErrors(aliases map[string]Alias) func(*cobra.Command, error) error {
	return func(cmd *cobra.Command, err error) error {
		var ne *pflag.NotExistError
		if !errors.As(err, &ne) {
			return err
		}
		name := ne.GetSpecifiedName()
		if s := ne.GetSpecifiedShortnames(); len(s) > 1 {
			name = s
		}
		if a, ok := aliases[name]; ok && cmd.Flags().Lookup(a.Flag) != nil {
			return fmt.Errorf("%w (did you mean --%s? e.g. %s)", err, a.Flag, a.Example)
		}
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if best := Closest(name, names...); best != "" {
			return fmt.Errorf("%w (did you mean --%s?)", err, best)
		}
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	}
}

// NoArgs is cobra.NoArgs for a command with subcommands: a stray argument
// is taken for a misspelt subcommand, and the closest is suggested.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return errors.New(msg)
}

// Suggest sets cmd up to answer misspelt subcommands and flags with
// suggestions: cobra's own for subcommands, FlagErrors(aliases) for flags.
func Suggest(cmd *cobra.Command, aliases map[string]Alias) {
	cmd.SuggestionsMinimumDistance = MaxDistance
	cmd.SetFlagErrorFunc(FlagErrors(aliases))
}
