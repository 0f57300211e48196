// Package examples holds the example scenarios, embedded in the binary: a fresh server
// offers them (scenario-server serve imports them into an empty store, each with a saved
// test case of sample records), and their results on the real data in testdata/ are checked
// against PostgreSQL (oracle_test.go), as are their test cases' expected outputs.
package examples

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

//go:embed *.json samples/*
var files embed.FS

// Example is one example scenario.
type Example struct {
	// Name is the file's name without ".json", e.g. "flights-per-origin-hourly".
	Name string
	// Graph is the scenario graph, the file's bytes as they are.
	Graph []byte
	// DataFile is the path its file source reads, relative to a deployment's source
	// directory and to the repository's root: "testdata/flights-20k.ndjson".
	DataFile string
	// Sample is its saved test case.
	Sample Sample
}

// SampleName is the name of every example's saved test case.
const SampleName = "sample"

// Sample is an example's saved test case: the first 300 lines of its data file
// (samples/<data file's name>) and the values its sink "out" writes on them
// (samples/<example>.expected.json, {"out": [values in order]}). The expected values were
// written by `scenario-server run --scenario <example>.json --input samples/<data file>`
// and are checked against PostgreSQL in oracle_test.go, as the full runs are.
type Sample struct {
	// Records are the sample's JSON lines.
	Records string
	// Expected is the JSON object of the sink outputs the records give.
	Expected []byte
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
		data, err := dataFile(graph)
		if err != nil {
			return nil, fmt.Errorf("example %s: %w", name, err)
		}
		records, err := files.ReadFile("samples/" + path.Base(data))
		if err != nil {
			return nil, fmt.Errorf("example %s's sample records: %w", name, err)
		}
		expected, err := files.ReadFile("samples/" + name + ".expected.json")
		if err != nil {
			return nil, fmt.Errorf("example %s's expected outputs: %w", name, err)
		}
		out = append(out, Example{Name: name, Graph: graph, DataFile: data,
			Sample: Sample{Records: string(records), Expected: expected}})
	}
	return out, nil
}

// dataFile is the path of the graph's one file source.
func dataFile(graph []byte) (string, error) {
	var g struct {
		Nodes []struct {
			Type string
			Ref  struct {
				Typ        string
				Parameters []struct {
					Name  string
					Value json.RawMessage
				}
			}
		}
	}
	if err := json.Unmarshal(graph, &g); err != nil {
		return "", err
	}
	for _, n := range g.Nodes {
		if n.Type != "Source" || n.Ref.Typ != "file" {
			continue
		}
		for _, p := range n.Ref.Parameters {
			var s string
			if p.Name == "path" && json.Unmarshal(p.Value, &s) == nil && s != "" {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("no file source with a path")
}
