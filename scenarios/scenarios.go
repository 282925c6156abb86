// Package scenarios carries the scenario files of this folder inside the
// binaries that use them: the server's practice arena finds a scenario by its
// name, which equals its file name.
package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/rushline/rushline/simulator/scenario"
)

//go:embed *.yaml
var files embed.FS

// ErrUnknown is returned by Load for a name no embedded file has.
var ErrUnknown = errors.New("scenarios: unknown scenario")

// Names lists the embedded scenarios' names, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Load parses the embedded scenario name. Each call returns a fresh copy, so
// the caller may change it. Safe for concurrent use.
func Load(name string) (*scenario.Scenario, error) {
	data, err := files.ReadFile(name + ".yaml")
	if err != nil || strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	sc, err := scenario.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %s.yaml: %w", name, err)
	}
	return sc, nil
}

// All parses every embedded scenario, sorted by name.
func All() ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	for _, name := range Names() {
		sc, err := Load(name)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}
