package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

func TestNULRefusedOnSQLite(t *testing.T) {
	t.Parallel()
	testNULRefused(t, newDeployClient(t, sqliteStore(t)))
}
func TestNULRefusedOnPostgres(t *testing.T) {
	t.Parallel()
	testNULRefused(t, newDeployClient(t, postgresStore(t)))
}

// testNULRefused: a comment or query with U+0000 is refused with 400 before anything acts on
// it (PostgreSQL's text cannot keep it: a cancel with one stopped the deployment and then
// failed to record it); a literal backslash-u0000 in a comment is text like any other, and
// events may hold the character.
func testNULRefused(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("fraud"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/fraud/deploy", nil).ok(t, http.StatusOK, nil)
	c.post("/api/scenarios/fraud/cancel", `{"comment": "a\u0000b"}`).problem(t, http.StatusBadRequest, api.CodeNULCharacter)
	var st api.ScenarioDeployment
	c.get("/api/scenarios/fraud/deployment").ok(t, http.StatusOK, &st)
	if st.Status != "RUNNING" {
		t.Fatalf("after a refused cancel: %s; want RUNNING", mustJSON(st))
	}
	var live api.LiveCounts
	c.get("/api/scenarios/fraud/counts").ok(t, http.StatusOK, &live)
	if !live.Running {
		t.Fatal("the refused cancel stopped the deployment")
	}
	c.post("/api/scenarios/fraud/versions", `{"baseVersion": 1, "comment": "x\u0000", "graph": `+countGraph("20s")+`}`).
		problem(t, http.StatusBadRequest, api.CodeNULCharacter)
	c.get("/api/audit?identity=%00").problem(t, http.StatusBadRequest, api.CodeNULCharacter)
	// A body that is not UTF-8 is refused: decoded, a node id "bad\xff" became "bad\ufffd".
	p := c.post("/api/scenarios", rawBody("name", quote("bytes"), "graph", strings.Replace(countGraph("10s"), `"id": "in"`, "\"id\": \"bad\xff\"", 1))).
		problem(t, http.StatusBadRequest, api.CodeBadRequest)
	if p.Detail != "the request body is not valid UTF-8" {
		t.Errorf("detail %q", p.Detail)
	}
	c.get("/api/scenarios/bytes").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	// An escaped backslash before u0000 is not the character.
	var d api.Deployment
	c.post("/api/scenarios/fraud/cancel", `{"comment": "path C:\\u0000"}`).ok(t, http.StatusOK, &d)
	if d.Status != "CANCELED" {
		t.Fatalf("cancel: %s", mustJSON(d))
	}
	// Events may hold it.
	c.post("/api/scenarios/fraud/deploy", nil).ok(t, http.StatusOK, nil)
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/sources/in/events", Body: `[{"ts": 1000, "note": "a\u0000b"}]`}).
		ok(t, http.StatusAccepted, nil)
}
