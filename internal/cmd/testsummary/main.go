// Command testsummary reads `go test -json` on stdin and prints go test's
// usual quiet output followed by the ten slowest tests. It exits 1 when any
// test, package or build failed, so `go test -json | testsummary` fails as
// go test would.
package main

import (
	"fmt"
	"os"

	"github.com/rushline/rushline/internal/testreport"
)

func main() {
	failed, err := testreport.Run(os.Stdin, os.Stdout, 10)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
	}
	if failed {
		os.Exit(1)
	}
}
