package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// hoppingGraph is an http source, a hopping aggregate of windowLength every slide at
// precision, and a collect sink.
func hoppingGraph(windowLength, slide, precision string) string {
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http"}},
  {"id": "hop", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "` + windowLength + `"},
    {"name": "slide", "value": "` + slide + `"},
    {"name": "precision", "value": "` + precision + `"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#agg.n"}}]}}
], "edges": [{"from": "in", "to": "hop", "edgeType": null}, {"from": "hop", "to": "out", "edgeType": null}]}`
}

// TestSaveRefusesLimits: creating, saving a version and importing refuse a graph with errors
// of the limit class (422 scenario-exceeds-limits, each problem with node, field and code) and
// store nothing; a graph with an ordinary error (a type error) is still saved as a draft.
func TestSaveRefusesLimits(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t))
	// The case: 1d sliding every 1ms is 86,400,000 slices and windows (nodes' limits
	// 10,000 and 1,440).
	explosion := hoppingGraph("1d", "1ms", "1ms")
	p := c.post("/api/scenarios", rawBody("name", quote("hop"), "graph", explosion)).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	want := []scenario.Problem{
		{NodeID: "hop", Field: "windowLength", Code: nodes.CodeTooManySlices},
		{NodeID: "hop", Field: "slide", Code: nodes.CodeTooManyWindows},
	}
	if len(p.Problems) != len(want) {
		t.Fatalf("problems %+v, want %+v", p.Problems, want)
	}
	for i, w := range want {
		if g := p.Problems[i]; g.NodeID != w.NodeID || g.Field != w.Field || g.Code != w.Code {
			t.Errorf("problem %d: %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(p.Detail, "86,400,000 slices; at most 10,000") {
		t.Errorf("detail %q does not give the numbers", p.Detail)
	}
	c.get("/api/scenarios/hop").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)

	// A node id whose URLs cannot be reached.
	dots := replace(t, tinyGraph, `"id": "in"`, `"id": ".."`)
	p = c.post("/api/scenarios", rawBody("name", quote("dots"), "graph", dots)).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	if len(p.Problems) != 1 || p.Problems[0].NodeID != ".." || p.Problems[0].Field != "id" || p.Problems[0].Code != scenario.CodeInvalidNodeID {
		t.Errorf("problems %+v", p.Problems)
	}

	// More nodes than scenario.MaxNodes: a chain of MaxNodes+1 dead ends is enough (the
	// structure's other errors are not limits and are not listed).
	var many strings.Builder
	many.WriteString(`{"nodes": [`)
	for i := range scenario.MaxNodes + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"id": "n%d", "type": "Sink", "ref": {"typ": "dead-end"}}`, i)
	}
	many.WriteString(`], "edges": []}`)
	p = c.post("/api/scenarios", rawBody("name", quote("many"), "graph", many.String())).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	if len(p.Problems) != 1 || p.Problems[0].Code != scenario.CodeTooManyNodes {
		t.Errorf("problems %+v", p.Problems)
	}

	// An expression nested past the compile limit (128 levels), at its node and field.
	deep := replace(t, hoppingGraph("1m", "10s", "10s"), `"#agg.n"`, `"`+strings.Repeat("(", 1000)+"1"+strings.Repeat(")", 1000)+`"`)
	p = c.post("/api/scenarios", rawBody("name", quote("deep"), "graph", deep)).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	if len(p.Problems) != 1 || p.Problems[0].NodeID != "out" || p.Problems[0].Field != "value" || p.Problems[0].Code != expression.CodeTooDeep {
		t.Errorf("problems %+v", p.Problems)
	}

	// A type error is a draft: saved.
	typeError := hoppingGraph("1m", "10s", "10s")
	typeError = replace(t, typeError, `"#agg.n"`, `"#agg.n + \"x\" - 1"`)
	var v api.Version
	c.post("/api/scenarios", rawBody("name", quote("draft"), "graph", typeError)).ok(t, http.StatusCreated, &v)
	var val api.ValidationResult
	c.post("/api/validation", rawBody("graph", typeError)).ok(t, http.StatusOK, &val)
	if len(val.Errors) == 0 {
		t.Fatalf("the draft has no error to save: %s", mustJSON(val))
	}

	// Saving a version and importing refuse the same way; the draft keeps version 1.
	c.post("/api/scenarios/draft/versions", rawBody("baseVersion", "1", "graph", explosion)).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	c.post("/api/scenarios/draft/import", explosion).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	c.post("/api/scenarios/new/import", dots).
		problem(t, http.StatusUnprocessableEntity, api.CodeScenarioExceedsLimits)
	var sv api.ScenarioWithVersion
	c.get("/api/scenarios/draft").ok(t, http.StatusOK, &sv)
	if sv.Scenario.LatestVersion != 1 {
		t.Errorf("a refused save was stored: latest version %d", sv.Scenario.LatestVersion)
	}
	c.get("/api/scenarios/new").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	// Within the limits, the same shape saves: 1d sliding every 1m is 1,440 windows.
	c.post("/api/scenarios/draft/versions", rawBody("baseVersion", "1", "graph", hoppingGraph("1d", "1m", "1m"))).
		ok(t, http.StatusCreated, nil)
}

// TestUnusualNodeIDReachable: node ids with spaces, non-ASCII letters, '%', '?' and '#'
// validate, and their URLs (escaped with url.PathEscape) reach them through real HTTP: events
// go into the source, and the sink's results come back under its id.
func TestUnusualNodeIDReachable(t *testing.T) {
	t.Parallel()
	c := newDeployClient(t, sqliteStore(t))
	const source, sink = "pay café 50%", "out ☕ #1?"
	graph := `{"nodes": [
  {"id": ` + quote(source) + `, "type": "Source", "ref": {"typ": "http"}},
  {"id": ` + quote(sink) + `, "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#input.n"}}]}}
], "edges": [{"from": ` + quote(source) + `, "to": ` + quote(sink) + `, "edgeType": null}]}`
	c.post("/api/scenarios", rawBody("name", quote("odd ids"), "graph", graph)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/odd%20ids/deploy", nil).ok(t, http.StatusOK, nil)

	var res api.IngestResult
	postEvents(c, "odd ids", source, "", [][]byte{[]byte(`{"n": 7}`)}).ok(t, http.StatusAccepted, &res)
	if res.Source != source || res.Count != 1 {
		t.Errorf("ingested %+v", res)
	}
	path := "/api/scenarios/odd%20ids/sinks/" + url.PathEscape(sink) + "/results"
	deadline := time.Now().Add(20 * time.Second)
	for {
		var page api.SinkResultPage
		c.get(path).ok(t, http.StatusOK, &page)
		if len(page.Results) > 0 {
			if page.Sink != sink || page.Results[0].Sink != sink || string(page.Results[0].Value) != "7" {
				t.Errorf("results %s", mustJSON(page))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result at %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
