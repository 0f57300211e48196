package nodes_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// The golden files in testdata/validate hold a scenario and the validation
// result expected for it, written by hand:
//
//	// optional comment lines saying what the case shows and why
//	{ ...the scenario JSON... }
//	----------
//	{"errors": [...], "warnings": [...], "variables": {...}}
//
// The expected problems are compared field by field and in order. The
// "variables" (node id -> variable -> type as Type.String writes it) are
// compared when the file gives them. There is deliberately no flag that
// rewrites the files: a failure prints what the program produced, to be
// checked by hand against the reasoning in the file.

const goldenSeparator = "----------"

type goldenProblem struct {
	NodeID  string `json:"nodeId,omitempty"`
	Field   string `json:"field,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
}

type goldenResult struct {
	Errors    []goldenProblem              `json:"errors"`
	Warnings  []goldenProblem              `json:"warnings"`
	Variables map[string]map[string]string `json:"variables,omitempty"`
}

func goldenView(v *Validation, withVariables bool) goldenResult {
	conv := func(ps []scenario.Problem) []goldenProblem {
		out := []goldenProblem{}
		for _, p := range ps {
			out = append(out, goldenProblem{NodeID: p.NodeID, Field: p.Field, Code: p.Code, Message: p.Message, Line: p.Line, Column: p.Column})
		}
		return out
	}
	g := goldenResult{Errors: conv(v.Errors), Warnings: conv(v.Warnings)}
	if withVariables {
		g.Variables = map[string]map[string]string{}
		for node, env := range v.Variables {
			m := map[string]string{}
			for name, t := range env {
				m[name] = t.String()
			}
			g.Variables[node] = m
		}
	}
	return g
}

func readGolden(t *testing.T, path string) (input []byte, want goldenResult, withVariables bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.HasPrefix(line, "//") {
			continue
		}
		lines = append(lines, line)
	}
	text := strings.Join(lines, "")
	in, exp, found := strings.Cut(text, "\n"+goldenSeparator+"\n")
	if !found {
		t.Fatalf("%s: no %q line", path, goldenSeparator)
	}
	dec := json.NewDecoder(strings.NewReader(exp))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("%s: expected result: %v", path, err)
	}
	if want.Errors == nil {
		want.Errors = []goldenProblem{}
	}
	if want.Warnings == nil {
		want.Warnings = []goldenProblem{}
	}
	return []byte(in), want, want.Variables != nil
}

func TestGoldenValidation(t *testing.T) {
	files, err := filepath.Glob("testdata/validate/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Errorf("only %d golden files; at least 20 expected", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			input, want, withVars := readGolden(t, path)
			got := goldenView(validateJSON(input), withVars)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: validation result differs\n got: %s\nwant: %s", path, pretty(got), pretty(want))
			}
			// A valid scenario must survive encoding: the same result
			// after Decode, Encode, Decode.
			s, err := scenario.Decode(input)
			if err != nil {
				return
			}
			encoded, err := scenario.Encode(s)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			again := goldenView(validateJSON(encoded), withVars)
			if !reflect.DeepEqual(again, want) {
				t.Errorf("%s: after an encoding round trip the result differs\n got: %s", path, pretty(again))
			}
		})
	}
}

func pretty(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return buf.String()
}
