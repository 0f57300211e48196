// Package examples holds the example scenarios, embedded in the binary: a fresh server
// offers them (scenario-server serve imports them into an empty store), and their results on
// the real data in testdata/ are checked against PostgreSQL (oracle_test.go).
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed *.json
var files embed.FS

// Example is one example scenario.
type Example struct {
	// Name is the file's name without ".json", e.g. "flights-per-origin-hourly".
	Name string
	// Graph is the scenario graph, the file's bytes as they are.
	Graph []byte
}

// All returns the examples, ordered by name.
func All() ([]Example, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("listing the examples: %w", err)
	}
	var out []Example
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		graph, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading example %s: %w", e.Name(), err)
		}
		out = append(out, Example{Name: name, Graph: graph})
	}
	return out, nil
}
