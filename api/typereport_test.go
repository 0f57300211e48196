package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
)

// typeBombGraph is a graph of an HTTP source whose schema nests objects depth deep, each of
// one field with a name of nameBytes bytes, then vars Variable nodes and a collect sink: a
// request of depth*nameBytes bytes whose #input reads as depth*nameBytes bytes at its top,
// a little less at each level below.
func typeBombGraph(depth, nameBytes, vars int) map[string]any {
	var schema any = map[string]any{"type": "string"}
	for d := range depth {
		schema = map[string]any{"type": "object", "properties": map[string]any{fmt.Sprintf("n%d", d) + strings.Repeat("é", nameBytes/2): schema}}
	}
	nodeList := []any{map[string]any{"id": "src", "type": "Source", "ref": map[string]any{"typ": "http",
		"parameters": []any{map[string]any{"name": "schema", "value": schema}}}}}
	var edges []any
	prev := "src"
	for i := range vars {
		id := fmt.Sprintf("v%d", i)
		nodeList = append(nodeList, map[string]any{"id": id, "type": "Variable", "varName": id,
			"value": map[string]any{"language": "expr", "expression": "1"}})
		edges = append(edges, map[string]any{"from": prev, "to": id})
		prev = id
	}
	nodeList = append(nodeList, map[string]any{"id": "out", "type": "Sink", "ref": map[string]any{"typ": "collect",
		"parameters": []any{map[string]any{"name": "value", "expression": map[string]any{"language": "expr", "expression": "1"}}}}})
	edges = append(edges, map[string]any{"from": prev, "to": "out"})
	return map[string]any{"graph": map[string]any{"nodes": nodeList, "edges": edges}}
}

// TestScopeReportBytesBounded (round 14): a source schema nested 63 deep with field names of
// 10 KB, a 640 KB request, was answered with 41.6 MB of variable types (each nested type's
// text repeats the names below it), with 10 Variable nodes after it 250 MB, and with 40 the
// server passed 4 GB. The text of a type is cut at expression.MaxDisplayBytes (about 700 KB
// of report for this #input, its names once each) and the report at
// nodes.MaxScopeReportBytes, passed at the 12th node: the answer stays under twice that
// bound plus a few times the request, with a warning that the report was cut.
func TestScopeReportBytesBounded(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t))
	body, err := json.Marshal(typeBombGraph(63, 10_000, 12))
	if err != nil {
		t.Fatal(err)
	}
	r := c.send(request{Method: "POST", Path: "/api/validation", Body: body})
	if r.Status != 200 {
		t.Fatalf("status %d: %.300s", r.Status, r.Body)
	}
	if limit := 2*nodes.MaxScopeReportBytes + 4*len(body); len(r.Body) > limit {
		t.Errorf("a %d-byte request was answered with %d bytes, more than %d", len(body), len(r.Body), limit)
	}
	var res struct {
		Variables map[string]map[string]struct {
			Display string `json:"display"`
		} `json:"variables"`
		Warnings []struct{ Code string } `json:"warnings"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Code != nodes.CodeScopeReportTruncated {
		t.Errorf("warnings %v, want one %s", res.Warnings, nodes.CodeScopeReportTruncated)
	}
	in, ok := res.Variables["v0"]["input"]
	if !ok {
		t.Fatalf("the first Variable node's scope is not reported: %d scopes", len(res.Variables))
	}
	// The name is of "é"s: the cut keeps whole characters.
	if !strings.HasSuffix(in.Display, "…") || len(in.Display) > expression.MaxDisplayBytes+len("…") || !utf8.ValidString(in.Display) {
		t.Errorf("#input reads as %d bytes ending %q, want at most %d, cut with …", len(in.Display), in.Display[max(0, len(in.Display)-10):], expression.MaxDisplayBytes)
	}
	answered := len(r.Body)
	// A small graph's types read whole.
	r = c.send(request{Method: "POST", Path: "/api/validation", Body: typeBombGraph(2, 4, 1)})
	var small struct {
		Variables map[string]map[string]struct {
			Display string `json:"display"`
		} `json:"variables"`
	}
	if err := json.Unmarshal(r.Body, &small); err != nil {
		t.Fatal(err)
	}
	// (fields not required are nullable: record{n1éé: record{n0éé: string?}?})
	if got := small.Variables["v0"]["input"].Display; strings.HasSuffix(got, "…") || !strings.Contains(got, "record{n1éé: record{n0éé: string") {
		t.Errorf("#input of a small schema reads %q, want it whole", got)
	}
	t.Logf("a %d-byte request: %d bytes of answer, %d scopes reported", len(body), answered, len(res.Variables))
}
