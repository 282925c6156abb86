package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/rushline/rushline/scenarios"
	"github.com/rushline/rushline/simulator/internal/simtest"
)

// MustSim runs `rushline-sim args…` and returns its stdout, stderr and error.
func MustSim(tb testing.TB, args ...string) (stdout, stderr string, err error) {
	tb.Helper()
	cmd := rootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestScenariosListsTheShippedOnes(t *testing.T) {
	out, _, err := MustSim(t, "scenarios")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !regexp.MustCompile(`^NAME\s+BOTS\s+SEATS\s+DESCRIPTION$`).MatchString(lines[0]) || len(lines) != len(scenarios.Names())+1 {
		t.Fatalf("want a header and one line per shipped scenario %v:\n%s", scenarios.Names(), out)
	}
	for i, name := range scenarios.Names() {
		sc, err := scenarios.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(fmt.Sprintf(`^%s\s+%d\s+%d\s+%s$`, name, sc.PlannedBots(), sc.Event.Create.Seats, regexp.QuoteMeta(sc.Description)))
		if !want.MatchString(lines[i+1]) {
			t.Errorf("line %q, want %s", lines[i+1], want)
		}
	}
}

func TestScenarioByNameOrPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		ok   string // in stdout, when it succeeds
		err  string // in the error, when it fails
	}{
		{"shipped name", []string{"validate", "practice-small"}, "practice-small: ok", ""},
		{"file path", []string{"validate", "testdata/tiny.yaml"}, "testdata/tiny.yaml: ok", ""},
		{"misspelt name", []string{"validate", "practise-small"}, "", "practise-small: no such file, nor a shipped scenario (did you mean practice-small?)"},
		{"shipped file elsewhere", []string{"validate", "scenarios/concert-rush.yaml"}, "", "(did you mean concert-rush?)"},
		{"nothing close", []string{"validate", "zzz"}, "", "zzz: no such file, nor a shipped scenario; rushline-sim scenarios lists them"},
		{"run misspelt name", []string{"run", "concert-rsh", "--target", "http://127.0.0.1:1"}, "", "(did you mean concert-rush?)"},
		{"bad file still names the line", []string{"validate", "main.go"}, "", "main.go:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := MustSim(t, tc.args...)
			switch {
			case tc.err == "" && (err != nil || !strings.Contains(out, tc.ok)):
				t.Errorf("got %q, %v; want %q", out, err, tc.ok)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"subcommand", []string{"rnu"}, "unknown command \"rnu\" for \"rushline-sim\"\n\nDid you mean this?\n\trun\n"},
		{"subcommand prefix", []string{"scen"}, "Did you mean this?\n\tscenarios\n"},
		{"run flag", []string{"run", "tiny", "--tagret", "http://x"}, "unknown flag: --tagret (did you mean --target?)"},
		{"one dash", []string{"run", "tiny", "-target", "http://x"}, "unknown shorthand flag: 't' in -target (did you mean --target?)"},
		{"report flag", []string{"report", "a.json", "--nmae", "x"}, "unknown flag: --nmae (did you mean --name?)"},
		{"plan flag", []string{"plan", "--limt", "10"}, "unknown flag: --limt (did you mean --limit?)"},
		{"nothing close", []string{"run", "tiny", "--colour"}, "unknown flag: --colour (see rushline-sim run --help)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := MustSim(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestRunHelpNamesFlagTypes(t *testing.T) {
	out, _, err := MustSim(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--shard I/N ", "--progress duration ", "--target string "} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--shard report") {
		t.Errorf("run --help names --shard's type after a back-quoted word:\n%s", out)
	}
}

// TestRunProgressIntoAPipe: with stderr not a terminal, a run prints a
// progress line of its own every --progress, and one at the end, instead
// of nothing (or a line redrawn with carriage returns).
func TestRunProgressIntoAPipe(t *testing.T) {
	target := simtest.MustServer(t)
	out, errOut, err := MustSim(t, "run", "testdata/tiny.yaml", "--target", target, "--admin-key", simtest.Keys.Admin,
		"--simulator-key", simtest.Keys.Simulator, "--progress", "100ms", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if strings.Contains(errOut, "\r") {
		t.Errorf("progress redrawn with \\r into a pipe:\n%q", errOut)
	}
	line := regexp.MustCompile(`(?m)^\s*\d+s  bots \d+  held back \d+  joined \d+  waiting \d+  active \d+  done \d+  \|  \d+ joins/s  \d+ done/s$`)
	lines := line.FindAllString(errOut, -1)
	// The phase lasts a second: at least one tick, and the line at the end.
	if len(lines) < 2 {
		t.Fatalf("%d progress lines, want at least 2:\n%s", len(lines), errOut)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "bots 20 ") || !strings.Contains(last, "done 20 ") {
		t.Errorf("last progress line %q, want all 20 bots done", last)
	}
	if !strings.Contains(out, "tiny") || !strings.Contains(errOut, "wrote ") {
		t.Errorf("no summary on stdout or no report files named on stderr:\n%s\n%s", out, errOut)
	}
}
