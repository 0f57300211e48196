package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/store"
)

// testBadRequests: every malformed request answers a 4xx problem+json with its code, never
// a 500.
func testBadRequests(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("exists"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	long := strings.Repeat("n", store.MaxNameLength+1)
	tests := []struct {
		name   string
		req    request
		status int
		code   string
	}{
		{"malformed JSON", request{Method: "POST", Path: "/api/scenarios", Body: `{"name": "x", "graph": `}, 400, api.CodeInvalidJSON},
		{"trailing garbage", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"x"`, "graph", tinyGraph) + "}"}, 400, api.CodeInvalidJSON},
		{"empty body", request{Method: "POST", Path: "/api/scenarios", Body: "", ContentType: "application/json"}, 400, api.CodeBadRequest},
		{"body not an object", request{Method: "POST", Path: "/api/scenarios", Body: `[]`}, 422, api.CodeValidationFailed},
		{"unknown field", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"x"`, "graph", tinyGraph, "colour", `"red"`)}, 422, api.CodeValidationFailed},
		{"missing graph", request{Method: "POST", Path: "/api/scenarios", Body: `{"name": "x"}`}, 422, api.CodeValidationFailed},
		{"graph not an object", request{Method: "POST", Path: "/api/scenarios", Body: `{"name": "x", "graph": "nodes"}`}, 422, api.CodeValidationFailed},
		{"graph not a scenario", request{Method: "POST", Path: "/api/scenarios", Body: `{"name": "x", "graph": {"nodes": 5, "edges": []}}`}, 422, api.CodeInvalidScenario},
		{"name of wrong type", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", "5", "graph", tinyGraph)}, 422, api.CodeValidationFailed},
		{"empty name", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `""`, "graph", tinyGraph)}, 400, api.CodeInvalidName},
		{"name with a slash", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"a/b"`, "graph", tinyGraph)}, 400, api.CodeInvalidName},
		{"name with a leading space", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `" a"`, "graph", tinyGraph)}, 400, api.CodeInvalidName},
		{"name too long", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", quote(long), "graph", tinyGraph)}, 400, api.CodeInvalidName},
		{"name not ASCII", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"zażółć"`, "graph", tinyGraph)}, 400, api.CodeInvalidName},
		{"escaped slash in path", request{Method: "GET", Path: "/api/scenarios/a%2Fb"}, 400, api.CodeInvalidName},
		{"dot-dot in path", request{Method: "GET", Path: "/api/scenarios/%2E%2E/versions"}, 400, api.CodeInvalidName},
		{"long name in path", request{Method: "GET", Path: "/api/scenarios/" + long}, 400, api.CodeInvalidName},
		{"control character in path", request{Method: "POST", Path: "/api/scenarios/a%00b/archive"}, 400, api.CodeInvalidName},
		{"unknown scenario", request{Method: "GET", Path: "/api/scenarios/unknown"}, 404, api.CodeScenarioNotFound},
		{"unknown version", request{Method: "GET", Path: "/api/scenarios/exists/versions/99"}, 404, api.CodeVersionNotFound},
		{"version not a number", request{Method: "GET", Path: "/api/scenarios/exists/versions/latest"}, 422, api.CodeValidationFailed},
		{"version zero", request{Method: "GET", Path: "/api/scenarios/exists/versions/0"}, 422, api.CodeValidationFailed},
		{"version too big", request{Method: "GET", Path: "/api/scenarios/exists/versions/99999999999999999999"}, 422, api.CodeValidationFailed},
		{"base version not a number", request{Method: "POST", Path: "/api/scenarios/exists/versions", Body: rawBody("baseVersion", `"1"`, "graph", tinyGraph)}, 422, api.CodeValidationFailed},
		{"negative base version", request{Method: "POST", Path: "/api/scenarios/exists/versions", Body: rawBody("baseVersion", "-1", "graph", tinyGraph)}, 422, api.CodeValidationFailed},
		{"compare without to", request{Method: "GET", Path: "/api/scenarios/exists/compare?from=1"}, 422, api.CodeValidationFailed},
		{"archived filter", request{Method: "GET", Path: "/api/scenarios?archived=maybe"}, 422, api.CodeValidationFailed},
		{"query not percent-encoding", request{Method: "GET", Path: "/api/scenarios?after=%"}, 400, api.CodeBadRequest},
		{"query parameter given twice", request{Method: "GET", Path: "/api/scenarios?limit=5&limit=1000"}, 400, api.CodeBadRequest},
		{"subject of DELETE /api/sessions given twice", request{Method: "DELETE", Path: "/api/sessions?subject=a&subject=b"}, 400, api.CodeBadRequest},
		{"body in another charset", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"x"`, "graph", tinyGraph), ContentType: "application/json; charset=utf-16"}, 415, api.CodeUnsupportedMediaType},
		{"compressed body", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"x"`, "graph", tinyGraph), Header: map[string]string{"Content-Encoding": "br"}}, 415, api.CodeUnsupportedMediaType},
		{"audit limit 0", request{Method: "GET", Path: "/api/audit?limit=0"}, 422, api.CodeValidationFailed},
		{"test case name ending with a space", request{Method: "PUT", Path: "/api/scenarios/exists/tests/a%20", Body: `{"records": "{}", "expected": {}}`}, 422, api.CodeValidationFailed},
		{"list limit 0", request{Method: "GET", Path: "/api/scenarios?limit=0"}, 422, api.CodeValidationFailed},
		{"list limit over 1,000", request{Method: "GET", Path: "/api/scenarios?limit=1001"}, 422, api.CodeValidationFailed},
		{"list cursor too long", request{Method: "GET", Path: "/api/scenarios?after=" + strings.Repeat("a", 101)}, 422, api.CodeValidationFailed},
		{"statuses limit over 1,000", request{Method: "GET", Path: "/api/deployments?limit=1001"}, 422, api.CodeValidationFailed},
		{"statuses cursor too long", request{Method: "GET", Path: "/api/deployments?after=" + strings.Repeat("a", 101)}, 422, api.CodeValidationFailed},
		{"text body", request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", `"x"`, "graph", tinyGraph), ContentType: "text/plain"}, 415, api.CodeUnsupportedMediaType},
		{"form body", request{Method: "POST", Path: "/api/validation", Body: "graph=1", ContentType: "application/x-www-form-urlencoded"}, 415, api.CodeUnsupportedMediaType},
		{"no content type", request{Method: "POST", Path: "/api/scenarios/exists/import", Body: tinyGraph, ContentType: "-"}, 415, api.CodeUnsupportedMediaType},
		{"bad content type", request{Method: "POST", Path: "/api/scenarios/exists/import", Body: tinyGraph, ContentType: "application/"}, 415, api.CodeUnsupportedMediaType},
		{"validation of nothing", request{Method: "POST", Path: "/api/validation", Body: `{}`}, 422, api.CodeValidationFailed},
		{"node validation without node", request{Method: "POST", Path: "/api/validation/node", Body: rawBody("graph", tinyGraph, "nodeId", `""`)}, 422, api.CodeValidationFailed},
		{"test without records", request{Method: "POST", Path: "/api/test", Body: rawBody("graph", tinyGraph)}, 422, api.CodeValidationFailed},
		{"test without graph", request{Method: "POST", Path: "/api/test", Body: rawBody("records", `""`)}, 422, api.CodeValidationFailed},
		{"test records not a string", request{Method: "POST", Path: "/api/test", Body: rawBody("graph", tinyGraph, "records", `[{"a": 1}]`)}, 422, api.CodeValidationFailed},
		{"test of a graph with errors", request{Method: "POST", Path: "/api/test", Body: rawBody("graph", `{"nodes": [], "edges": []}`, "records", `""`)}, 422, api.CodeScenarioHasErrors},
		{"test cap zero", request{Method: "POST", Path: "/api/test?maxRecordsPerNode=0", Body: rawBody("graph", tinyGraph, "records", `""`)}, 422, api.CodeValidationFailed},
		{"test cap too large", request{Method: "POST", Path: "/api/test?maxRecordsPerNode=1001", Body: rawBody("graph", tinyGraph, "records", `""`)}, 422, api.CodeValidationFailed},
		{"test cap not a number", request{Method: "POST", Path: "/api/scenarios/exists/test?maxRecordsPerNode=all", Body: rawBody("records", `""`)}, 422, api.CodeValidationFailed},
		{"test of an unknown scenario", request{Method: "POST", Path: "/api/scenarios/unknown/test", Body: rawBody("records", `""`)}, 404, api.CodeScenarioNotFound},
		{"test of an unknown version", request{Method: "POST", Path: "/api/scenarios/exists/test?version=9", Body: rawBody("records", `""`)}, 404, api.CodeVersionNotFound},
		{"test of a bad name", request{Method: "POST", Path: "/api/scenarios/a%00b/test", Body: rawBody("records", `""`)}, 400, api.CodeInvalidName},
		{"test with an unknown field", request{Method: "POST", Path: "/api/scenarios/exists/test", Body: rawBody("records", `""`, "graph", tinyGraph)}, 422, api.CodeValidationFailed},
		{"NDJSON to an unsaved test", request{Method: "POST", Path: "/api/test", Body: "{}\n", ContentType: "application/x-ndjson"}, 415, api.CodeUnsupportedMediaType},
		{"NDJSON to validation", request{Method: "POST", Path: "/api/validation", Body: "{}\n", ContentType: "application/x-ndjson"}, 415, api.CodeUnsupportedMediaType},
		{"text to a saved test", request{Method: "POST", Path: "/api/scenarios/exists/test", Body: "{}\n", ContentType: "text/plain"}, 415, api.CodeUnsupportedMediaType},
		{"NDJSON test of an unknown scenario", request{Method: "POST", Path: "/api/scenarios/unknown/test", Body: "{}\n", ContentType: "application/x-ndjson"}, 404, api.CodeScenarioNotFound},
		{"node test without node", request{Method: "POST", Path: "/api/node-test", Body: rawBody("graph", tinyGraph, "nodeId", `""`)}, 422, api.CodeValidationFailed},
		{"node test of an unknown node", request{Method: "POST", Path: "/api/node-test", Body: rawBody("graph", tinyGraph, "nodeId", `"x"`)}, 422, api.CodeUnknownNode},
		{"node test variables not an object", request{Method: "POST", Path: "/api/node-test", Body: rawBody("graph", tinyGraph, "nodeId", `"in"`, "variables", "[]")}, 422, api.CodeValidationFailed},
		{"node test of a graph that does not decode", request{Method: "POST", Path: "/api/node-test", Body: rawBody("graph", `{"nodes": 1}`, "nodeId", `"in"`)}, 422, api.CodeScenarioHasErrors},
		{"unknown route", request{Method: "GET", Path: "/api/nothing"}, 404, api.CodeRouteNotFound},
		{"method not allowed", request{Method: "PUT", Path: "/api/scenarios"}, 405, api.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := c.send(tt.req).problem(t, tt.status, tt.code)
			if p.Detail == "" {
				t.Errorf("no detail: %+v", p)
			}
		})
	}

	// A rejected value is repeated cut to 256 bytes and "…": a 1 MB comment (the limit is
	// 10,000 characters) is not sent back whole. "é" is 2 bytes: the cut falls between its
	// bytes at 256 and moves back to 255.
	t.Run("long rejected value", func(t *testing.T) {
		comment := "x" + strings.Repeat("é", 1<<19)
		r := c.send(request{Method: "POST", Path: "/api/scenarios/exists/deploy", Body: rawBody("comment", quote(comment))})
		p := r.problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
		if len(r.Body) > 2000 || len(p.Errors) != 1 || p.Errors[0].Value != "x"+strings.Repeat("é", 127)+"…" {
			t.Errorf("answer of %d bytes: %s", len(r.Body), r.Body[:min(len(r.Body), 600)])
		}
	})
}

// testBodyLimit: bodies over the limit answer 413 body-too-large whether their length is
// announced or not; a body of exactly the limit passes.
func testBodyLimit(t *testing.T, st store.Store) {
	const limit = 1024
	c := newClient(t, st, func(cfg *api.Config) { cfg.MaxBodyBytes = limit })
	body := func(name string, size int) string {
		b := rawBody("name", quote(name), "graph", tinyGraph)
		if len(b) > size {
			t.Fatalf("body of %d bytes is over %d", len(b), size)
		}
		return b[:len(b)-1] + strings.Repeat(" ", size-len(b)) + "}"
	}
	// unannounced hides the body's length, so that it is sent chunked.
	unannounced := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }

	p := c.post("/api/scenarios", body("big", limit+1)).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	if !strings.Contains(p.Detail, "1024 bytes") {
		t.Errorf("detail %q does not give the limit", p.Detail)
	}
	p = c.post("/api/scenarios", unannounced(body("big", 10*limit))).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	if !strings.Contains(p.Detail, "1024 bytes") {
		t.Errorf("detail %q does not give the limit", p.Detail)
	}
	c.post("/api/scenarios", unannounced(body("big", limit+1))).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	c.post("/api/scenarios", body("exact", limit)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios", unannounced(body("exact chunked", limit))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/exact/import", unannounced(strings.Repeat(" ", limit)+tinyGraph)).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
}

// fuzzAnswerTimeout is how long FuzzRequestBodies waits for an answer before it reports the
// body as one that hangs the server.
const fuzzAnswerTimeout = 10 * time.Second

// FuzzRequestBodies sends arbitrary bytes as the bodies of the operations that decode a
// scenario graph (create, save, import), of validation, of test runs and of node tests:
// whatever the bytes, the answer is a success or a 4xx problem with a known code, in time,
// never a 5xx, a hang or a crash.
func FuzzRequestBodies(f *testing.F) {
	graph, err := readTestdata("payments.json")
	if err != nil {
		f.Fatal(err)
	}
	seeds := []string{
		rawBody("name", `"fuzzed"`, "graph", tinyGraph),
		rawBody("name", `"fuzzed"`, "graph", graph, "comment", `"x"`),
		rawBody("baseVersion", "1", "graph", tinyGraph),
		rawBody("baseVersion", "1", "graph", `{"nodes": [{"id": 1}], "edges": {}}`),
		tinyGraph,
		graph,
		`{"nodes": [{"id": "a", "type": "Filter", "expression": {"language": "expr", "expression": "#input.x >"}}], "edges": [{"from": "a", "to": "a"}]}`,
		`{"name": "\u0000", "graph": {}}`,
		`{"graph": {"nodes": [], "edges": []}, "nodeId": "a", "expression": "#in", "caret": 3}`,
		rawBody("graph", graph, "records", quote(`{"card":"A","amount":1500,"time":"2024-05-01T10:00:00Z"}`+"\n{\"card\":\n\n{\"amount\": \"x\"}")),
		rawBody("records", quote(`{"a": 1}`+"\n"+`{"sourceId": "in", "record": {"b": 2}, "timestamp": 5}`)),
		rawBody("graph", graph, "nodeId", `"last hour"`, "variables", `{"input": {"card": "A", "amount": 9223372036854775807}}`),
		rawBody("graph", graph, "nodeId", `"how many"`, "variables", `{"#hour": {"count": 3}}`, "branch", `"x"`),
		`{"name": 1e999, "graph": []}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"a":`,
		"",
		"\xff\xfe",
	}
	// Deep and long inputs (the issue "No request, expression or event can take the server
	// down"): expressions nested past the depth limit and longer than the length limit, within
	// the 64 KiB body limit below, a never-ending and a memory-exhausting expression run on a
	// record, and deeply nested JSON.
	filterGraph := func(expr string) string {
		return `{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}},
  {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": ` + quote(expr) + `}},
  {"id": "out", "type": "Sink", "ref": {"typ": "dead-end"}}],
 "edges": [{"from": "in", "to": "f", "edgeType": null}, {"from": "f", "to": "out", "edgeType": {"type": "FilterTrue"}}]}`
	}
	for _, expr := range []string{
		strings.Repeat("(", 20_000) + "1" + strings.Repeat(")", 20_000),
		strings.Repeat("-", 40_000) + "1",
		strings.Repeat("!", 40_000) + "true",
		strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000),
		strings.Repeat("abs(", 8_000) + "1" + strings.Repeat(")", 8_000),
		strings.Repeat("(", 129) + "true" + strings.Repeat(")", 129),
		"1" + strings.Repeat(" + 1", 14_000),
		`let r = 1..999; all(r, all(r, all(r, all(r, true))))`,
		`len(repeat(repeat("x", 999999), 999999)) > 0`,
	} {
		g := filterGraph(expr)
		seeds = append(seeds, rawBody("name", `"deep"`, "graph", g), rawBody("graph", g, "records", quote(`{"a": 1}`)),
			rawBody("graph", g, "nodeId", `"f"`, "variables", `{"input": {}}`))
	}
	seeds = append(seeds, strings.Repeat("[", 60_000), `{"graph": `+strings.Repeat(`{"a": `, 10_000)+`1`+strings.Repeat("}", 10_000)+`}`)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	st := sqliteStoreForFuzz(f)
	h, err := api.New(api.Config{Store: st, MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	rec := httptest.NewRecorder()
	create := httptest.NewRequest(http.MethodPost, "/api/scenarios", strings.NewReader(rawBody("name", `"target"`, "graph", tinyGraph)))
	create.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, create)
	if rec.Code != http.StatusCreated {
		f.Fatalf("creating the target scenario: %d %s", rec.Code, rec.Body)
	}
	paths := []string{
		"/api/scenarios",
		"/api/scenarios/target/versions",
		"/api/scenarios/target/import",
		"/api/scenarios/fuzzed/import",
		"/api/validation",
		"/api/validation/node",
		"/api/suggestions",
		"/api/test",
		"/api/scenarios/target/test",
		"/api/node-test",
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range paths {
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				h.ServeHTTP(rec, req)
			}()
			select {
			case <-answered:
			case <-time.After(fuzzAnswerTimeout):
				t.Fatalf("POST %s %q: no answer after %v", path, body, fuzzAnswerTimeout)
			}
			if rec.Code < 400 {
				continue
			}
			if rec.Code >= 500 {
				t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("POST %s %q: %d with Content-Type %q", path, body, rec.Code, ct)
			}
			var p api.ProblemDetails
			if err := jsonUnmarshal(rec.Body.Bytes(), &p); err != nil || !slices.Contains(api.Codes, p.Code) {
				t.Fatalf("POST %s %q: %d with problem %s (%v)", path, body, rec.Code, rec.Body, err)
			}
		}
	})
}
