// Package browsertest holds what the browser tests of the web pages and the
// simulator's HTML report share: finding headless Chromium and the folder
// their screenshots go to.
package browsertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Names are the Chromium-like browsers looked for on PATH, in order.
var Names = []string{"chromium", "chromium-browser", "google-chrome"}

// MustFind returns the path of a Chromium-like browser, and fails the test
// when there is none: pages must be checked in a real browser, so a missing
// one is an error of the machine, not a reason to skip.
func MustFind(tb testing.TB) string {
	tb.Helper()
	for _, name := range Names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	tb.Fatalf("no headless browser found on PATH (tried %s); install one with `apt-get install -y chromium`",
		strings.Join(Names, ", "))
	return ""
}

// MustArtifactDir is where screenshots go: $RUSHLINE_ARTIFACTS, or
// rushline-artifacts in the system's temporary directory.
func MustArtifactDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("RUSHLINE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "rushline-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("artifact directory: %v", err)
	}
	return dir
}
