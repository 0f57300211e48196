package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

// The query string of an API operation holds only the parameters it takes, each once: a
// misspelt one is 400 naming it and what the operation takes (new-user round 136: "afer=2"
// listed every result, "serch=zzz" every scenario); routes that are not operations (the
// OpenAPI document) and paths outside /api are not checked.
func TestQueryParameters(t *testing.T) {
	t.Parallel()
	c := newClient(t, sqliteStore(t))
	c.post("/api/scenarios", rawBody("name", quote("card"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	p := c.get("/api/scenarios?serch=zzz").problem(t, http.StatusBadRequest, api.CodeBadRequest)
	if !strings.Contains(p.Detail, `unknown query parameter "serch"`) || !strings.Contains(p.Detail, "GET /api/scenarios takes the query parameters") ||
		!strings.Contains(p.Detail, "search") {
		t.Errorf("serch: %q", p.Detail)
	}
	c.get("/api/scenarios?search=card").ok(t, http.StatusOK, nil)
	p = c.get("/api/scenarios/card?verbose=1").problem(t, http.StatusBadRequest, api.CodeBadRequest)
	if !strings.Contains(p.Detail, "GET /api/scenarios/{name} takes no query parameters") {
		t.Errorf("verbose: %q", p.Detail)
	}
	if r := c.send(request{Method: http.MethodHead, Path: "/api/scenarios/card?verbose=1"}); r.Status != http.StatusBadRequest {
		t.Errorf("HEAD with an unknown parameter: %d", r.Status)
	}
	p = c.get("/api/scenarios?search=a&search=b").problem(t, http.StatusBadRequest, api.CodeBadRequest)
	if !strings.Contains(p.Detail, `"search" is given 2 times`) {
		t.Errorf("twice: %q", p.Detail)
	}
	if r := c.get("/api/scenarios/card/sinks/out/results?afer=2"); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `unknown query parameter \"afer\"`) {
		t.Errorf("afer: %d %s", r.Status, r.Body)
	}
	c.get("/api/openapi.json?x=1").ok(t, http.StatusOK, nil)
	c.get("/healthz?x=1").ok(t, http.StatusOK, nil)
}
