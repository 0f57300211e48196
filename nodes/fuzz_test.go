package nodes_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scenario-server/scenario-server/scenario"
)

// FuzzDecodeScenario decodes arbitrary bytes as a scenario and validates
// it. It must never panic; every problem must have a code and a message,
// and positions must lie within the text they point into; a decoded
// scenario must survive Encode and Decode unchanged.
func FuzzDecodeScenario(f *testing.F) {
	files, _ := filepath.Glob("testdata/validate/*.txt")
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "//") {
				lines = append(lines, l)
			}
		}
		in, _, _ := strings.Cut(strings.Join(lines, "\n"), "\n"+goldenSeparator+"\n")
		f.Add([]byte(in))
	}
	for _, seed := range []string{"", "{}", "[]", "null", `{"nodes": [{"id": "a", "type": "Join", "nodeType": "union"}], "edges": [{"from": "a", "to": "a"}]}`} {
		f.Add([]byte(seed))
	}
	// Deep and long expressions and JSON: past the expression limits, and nested JSON.
	for _, expr := range []string{
		strings.Repeat("(", 50_000) + "1" + strings.Repeat(")", 50_000),
		strings.Repeat("-", 100_000) + "1",
		strings.Repeat("[", 129) + strings.Repeat("]", 129),
		strings.Repeat("abs(", 129) + "1" + strings.Repeat(")", 129),
	} {
		e, _ := json.Marshal(expr)
		f.Add([]byte(`{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}},
 {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": ` + string(e) + `}},
 {"id": "out", "type": "Sink", "ref": {"typ": "dead-end"}}],
 "edges": [{"from": "in", "to": "f", "edgeType": null}, {"from": "f", "to": "out", "edgeType": {"type": "FilterTrue"}}]}`))
	}
	f.Add([]byte(strings.Repeat("[", 100_000)))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := validateJSON(data)
		if v.Errors == nil || v.Warnings == nil || v.Variables == nil {
			t.Fatalf("nil lists in %+v", v)
		}
		s, decodeErr := scenario.Decode(data)
		for _, p := range append(v.Errors, v.Warnings...) {
			if p.Code == "" || p.Message == "" {
				t.Fatalf("problem without code or message: %+v", p)
			}
			if p.Code == "expression-internal-error" {
				t.Fatalf("expr failed inside: %+v", p)
			}
			if p.Line == 0 {
				continue
			}
			text := string(data) // decoding problems point into the JSON
			if decodeErr == nil {
				text = expressionText(s, p)
			}
			checkWithin(t, text, p)
		}
		if decodeErr != nil {
			return
		}
		enc, err := scenario.Encode(s)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		s2, err := scenario.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(s)): %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the scenario:\n%s", enc)
		}
	})
}

// expressionText finds the text of the expression a problem is about.
func expressionText(s *scenario.Scenario, p scenario.Problem) string {
	var candidates []string
	add := func(e *scenario.Expression) {
		if e != nil {
			candidates = append(candidates, e.Expression)
		}
	}
	n := s.Node(p.NodeID)
	if n == nil {
		return ""
	}
	add(n.Expression)
	add(n.Value)
	for _, f := range n.Fields {
		add(f.Expression)
	}
	params := n.Parameters
	if n.Ref != nil {
		params = append(params, n.Ref.Parameters...)
	}
	for _, bp := range n.BranchParameters {
		params = append(params, bp.Parameters...)
	}
	for _, prm := range params {
		add(prm.Expression)
		var raw any
		if json.Unmarshal(prm.Value, &raw) == nil {
			collectExpressions(raw, &candidates) // expressions inside lists
		}
	}
	for _, e := range s.Edges {
		if e.EdgeType != nil {
			add(e.EdgeType.Condition)
		}
	}
	// Any candidate the position fits is good enough: the point is that no
	// position lies outside every text.
	for _, c := range candidates {
		if fits(c, p.Line, p.Column) {
			return c
		}
	}
	return strings.Join(candidates, "\n") // fails in checkWithin, with the texts shown
}

func fits(text string, line, column int) bool {
	lines := strings.Split(text, "\n")
	return line >= 1 && line <= len(lines) && column >= 1 && column <= utf8.RuneCountInString(lines[line-1])+1
}

// collectExpressions adds the "expression" strings found anywhere in a
// decoded JSON value.
func collectExpressions(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if e, ok := x["expression"].(string); ok {
			*out = append(*out, e)
		}
		for _, item := range x {
			collectExpressions(item, out)
		}
	case []any:
		for _, item := range x {
			collectExpressions(item, out)
		}
	}
}

func checkWithin(t *testing.T, text string, p scenario.Problem) {
	t.Helper()
	if !fits(text, p.Line, p.Column) {
		t.Fatalf("problem %v points outside its text %q", p, text)
	}
}
