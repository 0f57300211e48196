package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

func TestTestCasesOnSQLite(t *testing.T) {
	t.Parallel()
	testTestCases(t, newDeployClient(t, sqliteStore(t)))
}
func TestTestCasesOnPostgres(t *testing.T) {
	t.Parallel()
	testTestCases(t, newDeployClient(t, postgresStore(t)))
}

// testTestCases saves a test case with outputs worked out by hand, runs it on a version that
// passes and one that fails, and deploys: a failing version is refused with 422 tests-failed,
// and deployed with overrideTests only with a comment, which the deployment keeps.
func testTestCases(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("fraud"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	// Tumbling 10 s windows, counts per key: a at 0 s and 5 s, b at 12 s. The end of the
	// records closes both windows: [0, 10 s) has a: 2, [10 s, 20 s) has b: 1.
	records := "{\"ts\": 0, \"key\": \"a\"}\n{\"ts\": 5000, \"key\": \"a\"}\n{\"ts\": 12000, \"key\": \"b\"}\n"
	tc := map[string]any{"records": records, "expected": map[string]any{"out": []any{
		map[string]any{"key": "a", "start": 0, "n": 2},
		map[string]any{"n": 1.0, "start": 10000, "key": "b"}, // key order and 1.0 do not matter
	}}}
	c.send(request{Method: http.MethodPut, Path: "/api/scenarios/fraud/tests/two%20windows", Body: tc}).ok(t, http.StatusOK, nil)
	c.send(request{Method: http.MethodPut, Path: "/api/scenarios/fraud/tests/%2Fbad", Body: tc}).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	c.send(request{Method: http.MethodPut, Path: "/api/scenarios/nope/tests/x", Body: tc}).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	// A sink the latest version does not have is refused when saved, not found out at deploy.
	p := c.send(request{Method: http.MethodPut, Path: "/api/scenarios/fraud/tests/x", Body: map[string]any{"records": records, "expected": map[string]any{"nosuch": []any{}}}}).
		problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	if !strings.Contains(p.Detail, `has no sink "nosuch"`) {
		t.Errorf("detail %q", p.Detail)
	}

	var run api.TestCasesRun
	c.post("/api/scenarios/fraud/tests/run", nil).ok(t, http.StatusOK, &run)
	if !run.Passed || run.Version != 1 || len(run.Tests) != 1 || !run.Tests[0].Passed || run.Tests[0].Name != "two windows" {
		t.Fatalf("run on version 1: %s; want the one test passed", mustJSON(run))
	}

	// Version 2 counts in 20 s windows: one window [0, 20 s) with a: 2 and b: 1.
	c.post("/api/scenarios/fraud/versions", rawBody("baseVersion", "1", "graph", countGraph("20s"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/fraud/tests/run", nil).ok(t, http.StatusOK, &run)
	if run.Passed || run.Version != 2 || run.Tests[0].Passed || len(run.Tests[0].Failures) != 1 ||
		!strings.Contains(run.Tests[0].Failures[0], `sink "out": value #`) {
		t.Fatalf("run on version 2: %s; want the test failed at sink out", mustJSON(run))
	}
	c.post("/api/scenarios/fraud/tests/run", rawBody("version", "1")).ok(t, http.StatusOK, &run)
	if !run.Passed || run.Version != 1 {
		t.Fatalf("run on version 1 again: %s", mustJSON(run))
	}

	p = c.post("/api/scenarios/fraud/deploy", nil).problem(t, http.StatusUnprocessableEntity, api.CodeTestsFailed)
	if p.Tests == nil || p.Tests.Version != 2 || p.Tests.Passed {
		t.Fatalf("tests-failed without the run: %s", mustJSON(p))
	}
	c.post("/api/scenarios/fraud/deploy", rawBody("overrideTests", "true")).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	var st api.ScenarioDeployment
	c.get("/api/scenarios/fraud/deployment").ok(t, http.StatusOK, &st)
	if st.Status != "NOT_DEPLOYED" {
		t.Fatalf("after refused deploys: %s", st.Status)
	}
	// Version 1 passes and deploys.
	var d api.Deployment
	c.post("/api/scenarios/fraud/deploy", rawBody("version", "1")).ok(t, http.StatusOK, &d)
	if d.Version != 1 || d.Status != "RUNNING" {
		t.Fatalf("deploy of version 1: %s", mustJSON(d))
	}
	c.post("/api/scenarios/fraud/deploy", rawBody("overrideTests", "true", "comment", quote("hotfix, tests updated tomorrow"))).ok(t, http.StatusOK, &d)
	if d.Version != 2 || d.Comment != "hotfix, tests updated tomorrow (saved tests overridden: 1 of 1 failed)" {
		t.Fatalf("override: %s", mustJSON(d))
	}

	var list struct {
		Tests []api.TestCase `json:"tests"`
	}
	c.get("/api/scenarios/fraud/tests").ok(t, http.StatusOK, &list)
	if len(list.Tests) != 1 || list.Tests[0].Records != records || len(list.Tests[0].Expected["out"]) != 2 {
		t.Fatalf("list: %s", mustJSON(list))
	}
	var first map[string]any
	if err := json.Unmarshal(list.Tests[0].Expected["out"][0], &first); err != nil || first["key"] != "a" {
		t.Errorf("expected[0] = %s", list.Tests[0].Expected["out"][0])
	}
	c.send(request{Method: http.MethodDelete, Path: "/api/scenarios/fraud/tests/two%20windows"}).ok(t, http.StatusNoContent, nil)
	c.send(request{Method: http.MethodDelete, Path: "/api/scenarios/fraud/tests/two%20windows"}).problem(t, http.StatusNotFound, api.CodeTestCaseNotFound)
	c.post("/api/scenarios/fraud/tests/run", nil).ok(t, http.StatusOK, &run)
	if !run.Passed || len(run.Tests) != 0 {
		t.Fatalf("with no test cases: %s; want passed", mustJSON(run))
	}

	// A scenario's test cases hold at most TestCasesMaxBytes together (records and the
	// expected values' JSON, here "{}": 2 bytes). With 1,000: a case of 600 bytes of records
	// (602) fits; another of 500 (502) would make 1,104 and is refused; the first replaced by
	// one of 900 (902, the old one not counted) fits.
	small := c.withConfig(func(cfg *api.Config) { cfg.TestCasesMaxBytes = 1000 })
	lines := func(n int) map[string]any {
		return map[string]any{"records": strings.Repeat("x", n-1) + "\n", "expected": map[string]any{}}
	}
	small.send(request{Method: http.MethodPut, Path: "/api/scenarios/fraud/tests/a", Body: lines(600)}).ok(t, http.StatusOK, nil)
	p = small.send(request{Method: http.MethodPut, Path: "/api/scenarios/fraud/tests/b", Body: lines(500)}).
		problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	if !strings.Contains(p.Detail, "would hold 1104 bytes") || !strings.Contains(p.Detail, "at most 1000") {
		t.Errorf("detail %q", p.Detail)
	}
	small.send(request{Method: http.MethodPut, Path: "/api/scenarios/fraud/tests/a", Body: lines(900)}).ok(t, http.StatusOK, nil)
}
