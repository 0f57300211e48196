package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
)

// schemaGraph: an HTTP source whose schema says amount is a number and required, a filter
// #input.amount > 3 and a sink; ENFORCE is the source's enforceSchema.
const schemaGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "schema", "value": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}},
    {"name": "enforceSchema", "value": ENFORCE}]}},
  {"id": "big", "type": "Filter", "expression": {"language": "expr", "expression": "#input.amount > 3"}},
  {"id": "out", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}
], "edges": [
  {"from": "in", "to": "big", "edgeType": null},
  {"from": "big", "to": "out", "edgeType": {"type": "FilterTrue"}}
]}`

// A test run of a source that enforces its schema: of {"amount": 5}, {"amount": "5"} and {},
// the first goes through (5 > 3) and the other two are errors at the source, field schema,
// saying where and why; they never reach the filter. Without enforceSchema the same records
// pass the source and fail at the filter, as before.
func testEnforceSchema(t *testing.T, c *client) {
	records := quote(`{"amount": 5}` + "\n" + `{"amount": "5"}` + "\n" + `{}`)
	type errView struct {
		Node, Field string
		Line        int64
	}
	run := func(enforce string) (api.TestResult, []errView) {
		var res api.TestResult
		graph := strings.Replace(schemaGraph, "ENFORCE", enforce, 1)
		c.post("/api/test", rawBody("graph", graph, "records", records)).ok(t, http.StatusOK, &res)
		var errs []errView
		for _, e := range res.Errors {
			errs = append(errs, errView{e.NodeID, e.Field, e.Line})
		}
		return res, errs
	}

	res, errs := run("true")
	if want := []errView{{"in", "schema", 2}, {"in", "schema", 3}}; fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Fatalf("enforced: errors %+v (%v), want %+v", errs, res.Errors, want)
	}
	if m := res.Errors[0].Message; !strings.Contains(m, "/amount") || !strings.Contains(m, "want number") {
		t.Errorf("line 2: message %q names neither /amount nor the number it wants", m)
	}
	if m := res.Errors[1].Message; !strings.Contains(m, "missing property") || !strings.Contains(m, "amount") {
		t.Errorf("line 3: message %q does not name the missing amount", m)
	}
	if got, want := res.Nodes["in"].Counts, (api.TestCounts{In: 3, Out: 1, Errors: 2}); got != want {
		t.Errorf("enforced: source counts %+v, want %+v", got, want)
	}
	if got, want := res.Nodes["big"].Counts.In, int64(1); got != want {
		t.Errorf("enforced: filter in %d, want %d", got, want)
	}
	var outs []string
	for _, o := range res.SinkOutputs["out"].Outputs {
		outs = append(outs, fmt.Sprintf("%d %s", o.Line, o.Value))
	}
	if want := []string{`1 {"amount":5}`}; fmt.Sprint(outs) != fmt.Sprint(want) {
		t.Errorf("enforced: sink outputs %q, want %q", outs, want)
	}

	// Not enforced: the source lets all three through, and the filter fails on lines 2 and 3.
	res, errs = run("false")
	if want := []errView{{"big", "expression", 2}, {"big", "expression", 3}}; fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Errorf("not enforced: errors %+v (%v), want %+v", errs, res.Errors, want)
	}
	if got, want := res.Nodes["in"].Counts, (api.TestCounts{In: 3, Out: 3}); got != want {
		t.Errorf("not enforced: source counts %+v, want %+v", got, want)
	}
	// Line 3 lacks amount: the filter's error names it.
	if len(res.Errors) == 2 && !strings.HasSuffix(res.Errors[1].Message, "null > an integer (#input.amount is null or missing)") {
		t.Errorf("not enforced: line 3's message %q does not name #input.amount", res.Errors[1].Message)
	}
}

// Deployed, the same source (an HTTP source without timestamp: its events are pushed as
// values) sends the two events that do not fit to the dead letters, with their source,
// node, field schema and record, and only {"amount": 5} reaches the collect sink.
func testEnforceSchemaDeployed(t *testing.T, c *client) {
	const name = "enforced schema"
	graph := strings.Replace(strings.Replace(schemaGraph, "ENFORCE", "true", 1), `"typ": "stdout"`, `"typ": "collect"`, 1)
	c.post("/api/scenarios", rawBody("name", quote(name), "graph", graph)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/"+url.PathEscape(name)+"/deploy", rawBody()).ok(t, http.StatusOK, nil)
	lines := [][]byte{[]byte(`{"amount": 5}`), []byte(`{"amount": "5"}`), []byte(`{}`)}
	postEvents(c, name, "in", "", lines).ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, name, committed(3))
	if got, want := counters(lc.Nodes["in"]), (api.NodeCounts{In: 3, Out: 1, Errors: 2}); got != want {
		t.Errorf("source counts %+v, want %+v", got, want)
	}
	type letter struct{ Source, Node, Field, Record string }
	var got []letter
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		var page api.DeadLetterPage
		c.get("/api/scenarios/"+url.PathEscape(name)+"/dead-letters").ok(t, http.StatusOK, &page)
		got = got[:0]
		for _, e := range page.DeadLetters {
			d := e.DeadLetter
			got = append(got, letter{d.Source, d.NodeID, d.Field, normJSON(t, d.Record)})
			if d.Field == "schema" && !strings.Contains(d.Message, "amount") {
				t.Errorf("dead letter message %q does not name amount", d.Message)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := []letter{{"in", "in", "schema", `{"amount":"5"}`}, {"in", "in", "schema", `{}`}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dead letters %+v, want %+v", got, want)
	}
	var outs []string
	for _, r := range readResults(t, c, name, "out", 100) {
		outs = append(outs, normJSON(t, r.Value))
	}
	if want := []string{`{"amount":5}`}; fmt.Sprint(outs) != fmt.Sprint(want) {
		t.Errorf("collected %q, want %q", outs, want)
	}
}
