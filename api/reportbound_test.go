package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// testValidationReportBounded: a validation answer stays small however many problems a graph
// within every limit makes, each naming many long names (a hostile round: 3,000 expressions
// each naming an unknown field of a record of 100 field names of 1,000 bytes made an answer
// of 301,487,258 bytes, and unread answers ran the server out of memory; 1,444 cycles
// through 500 ids of 128 bytes, 92 MB). Here: 100 such field names and 1,500 expressions
// (3,000 problems, a warning each too, would be about 150 MB whole), and a ring of 60
// Splits with 128-byte ids closed by 60 back edges.
func testValidationReportBounded(t *testing.T, c *client) {
	var props []string
	for i := range 100 {
		props = append(props, fmt.Sprintf(`"%s%03d": {"type": "number"}`, strings.Repeat("f", 997), i))
	}
	var fields []string
	for i := range 1_500 {
		fields = append(fields, fmt.Sprintf(`{"name": "x%d", "expression": {"language": "expr", "expression": "#input.zz"}}`, i))
	}
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "schema", "value": {"type": "object", "properties": {` + strings.Join(props, ",") + `}}}]}},
  {"id": "rec", "type": "VariableBuilder", "varName": "r", "fields": [` + strings.Join(fields, ",") + `]},
  {"id": "out", "type": "Sink", "ref": {"typ": "dead-end"}}
], "edges": [{"from": "in", "to": "rec", "edgeType": null}, {"from": "rec", "to": "out", "edgeType": null}]}`
	resp := c.post("/api/validation", rawBody("graph", graph))
	var res api.ValidationResult
	resp.ok(t, http.StatusOK, &res)
	if res.Valid || len(res.Errors) == 0 || len(res.Errors)+len(res.Warnings) > scenario.MaxProblems+1 || len(resp.Body) > 2<<20 {
		t.Fatalf("valid %v, %d errors and %d warnings in %d bytes; want invalid, at most %d problems and the warning, within 2 MiB",
			res.Valid, len(res.Errors), len(res.Warnings), len(resp.Body), scenario.MaxProblems)
	}
	first := res.Errors[0]
	if first.NodeID != "rec" || first.Code != expression.CodeUnknownField || len(first.Message) > 1024 || !strings.Contains(first.Message, "more)") {
		t.Errorf("first error %s (%d bytes); want unknown-record-field at rec, its fields listed in part (\"... and N more\") within 1 KiB", first.Error(), len(first.Message))
	}
	last := res.Warnings[len(res.Warnings)-1]
	if last.Code != scenario.CodeProblemsTruncated || !strings.Contains(last.Message, "more errors") {
		t.Errorf("last warning %s; want %s saying how many were left out", last.Error(), scenario.CodeProblemsTruncated)
	}

	// A ring of Splits, each with an edge back to the first: each cycle's path is listed
	// within about 512 bytes.
	var nodes, edges []string
	id := func(i int) string { return fmt.Sprintf("%s%03d", strings.Repeat("s", 125), i) }
	nodes = append(nodes, `{"id": "in", "type": "Source", "ref": {"typ": "http"}}`, `{"id": "out", "type": "Sink", "ref": {"typ": "dead-end"}}`)
	edges = append(edges, `{"from": "in", "to": "`+id(0)+`", "edgeType": null}`)
	for i := range 60 {
		nodes = append(nodes, `{"id": "`+id(i)+`", "type": "Split"}`)
		if i > 0 {
			edges = append(edges, `{"from": "`+id(i-1)+`", "to": "`+id(i)+`", "edgeType": null}`)
			edges = append(edges, `{"from": "`+id(i)+`", "to": "`+id(0)+`", "edgeType": null}`)
		}
	}
	edges = append(edges, `{"from": "`+id(59)+`", "to": "out", "edgeType": null}`)
	resp = c.post("/api/validation", rawBody("graph", `{"nodes": [`+strings.Join(nodes, ",")+`], "edges": [`+strings.Join(edges, ",")+`]}`))
	res = api.ValidationResult{}
	resp.ok(t, http.StatusOK, &res)
	cycles := 0
	for _, p := range res.Errors {
		if p.Code == scenario.CodeCycle {
			cycles++
			if len(p.Message) > 1024 {
				t.Fatalf("a cycle's message of %d bytes: %s", len(p.Message), p.Message)
			}
		}
	}
	if cycles != 59 {
		t.Errorf("%d cycles reported, want the 59 back edges' (errors: %d)", cycles, len(res.Errors))
	}
}

// A graph that does not decode answers its problems bounded as validation does: an unknown
// field of a 1 MB name (its name in field and message) and 2,000 unknown fields of 2,000
// bytes (a hostile re-test: a 9 MB name answered 36 MB; 1,000 of 9,000 bytes, 18 MB).
func testDecodeProblemsBounded(t *testing.T, c *client) {
	long := strings.Repeat("n", 1<<20)
	resp := c.post("/api/scenarios", `{"name": "d1", "graph": {"nodes": [], "edges": [], "`+long+`": 1}}`)
	p := resp.problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario)
	if len(resp.Body) > 16<<10 || len(p.Problems) != 1 {
		t.Errorf("one unknown field of 1 MiB: %d problems in %d bytes; want one within 16 KiB", len(p.Problems), len(resp.Body))
	}
	var fields []string
	for i := range 2_000 {
		fields = append(fields, fmt.Sprintf(`"%s%04d": 1`, strings.Repeat("f", 1996), i))
	}
	resp = c.post("/api/scenarios", `{"name": "d2", "graph": {"nodes": [], "edges": [], `+strings.Join(fields, ",")+`}}`)
	p = resp.problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario)
	if len(resp.Body) > 2<<20 {
		t.Errorf("2,000 unknown fields of 2,000 bytes: %d problems in %d bytes; want within 2 MiB", len(p.Problems), len(resp.Body))
	}
}
