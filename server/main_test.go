package main

import (
	"bytes"
	"strings"
	"testing"
)

// MustServerCmd runs `rushline-server args…` and returns its error. Every
// case fails before the server would start.
func MustServerCmd(tb testing.TB, args ...string) error {
	tb.Helper()
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	return cmd.Execute()
}

func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"port", []string{"--port", "8080"}, "unknown flag: --port (did you mean --addr? e.g. --addr :8080)"},
		{"port with one dash", []string{"-port", "8080"}, "(did you mean --addr? e.g. --addr :8080)"},
		{"host", []string{"--host", "0.0.0.0"}, "(did you mean --addr? e.g. --addr 0.0.0.0:8080)"},
		{"misspelt flag", []string{"--redis-ulr", "redis://x"}, "unknown flag: --redis-ulr (did you mean --redis-url?)"},
		{"misspelt subcommand", []string{"recovr"}, `unknown command "recovr" for "rushline-server" (did you mean recover?)`},
		{"stray argument", []string{"serve"}, `unknown command "serve" for "rushline-server"`},
		{"subcommand flag", []string{"recover", "--evnt", "x"}, "unknown flag: --evnt (did you mean --event?)"},
		{"nothing close", []string{"--colour"}, "unknown flag: --colour (see rushline-server --help)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MustServerCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
