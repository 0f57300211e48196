package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/store"
)

func TestAPIOnSQLite(t *testing.T) {
	t.Parallel()
	runAPISuite(t, sqliteStore)
}

func TestAPIOnPostgres(t *testing.T) {
	t.Parallel()
	runAPISuite(t, postgresStore)
}

// runAPISuite is the API test suite, run on each store. Each test gets a fresh store and
// talks to the API over HTTP only.
func runAPISuite(t *testing.T, newStore newStoreFunc) {
	tests := []struct {
		name string
		run  func(t *testing.T, c *client)
	}{
		{"Journey", testJourney},
		{"CreateListGet", testCreateListGet},
		{"ListPages", testListPages},
		{"Archive", testArchive},
		{"ConcurrentSaves", testConcurrentSaves},
		{"Compare", testCompare},
		{"ExportImport", testExportImport},
		{"Validation", testValidation},
		{"ValidationReportBounded", testValidationReportBounded},
		{"DecodeProblemsBounded", testDecodeProblemsBounded},
		{"NodeValidationAndSuggestions", testNodeValidationAndSuggestions},
		{"Components", testComponents},
		{"Operations", testOperations},
		{"BadRequests", testBadRequests},
		{"TestRuns", testTestRuns},
		{"TestLimits", testTestLimits},
		{"NodeTest", testNodeTest},
		{"LateEvents", testLateEvents},
		{"EnforceSchema", testEnforceSchema},
		{"ValidationPrecision", testValidationPrecision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newClient(t, newStore(t)))
		})
	}
	t.Run("BodyLimit", func(t *testing.T) {
		t.Parallel()
		testBodyLimit(t, newStore(t))
	})
	t.Run("StoreDown", func(t *testing.T) {
		t.Parallel()
		testStoreDown(t, newStore(t))
	})
}

// testStoreDown: when the database fails, /readyz answers 503 and the API 500, as problems
// that do not show the database's error (the log has it).
func testStoreDown(t *testing.T, st store.Store) {
	c := newClient(t, st)
	c.get("/readyz").ok(t, http.StatusOK, nil)
	st.Close()
	c.get("/healthz").ok(t, http.StatusOK, nil)
	c.get("/readyz").problem(t, http.StatusServiceUnavailable, api.CodeNotReady)
	p := c.get("/api/scenarios").problem(t, http.StatusInternalServerError, api.CodeInternal)
	if strings.Contains(strings.ToLower(p.Detail), "closed") || len(p.Errors) > 0 {
		t.Errorf("the problem shows the database's error: %+v", p)
	}
	c.post("/api/scenarios", rawBody("name", quote("x"), "graph", tinyGraph)).problem(t, http.StatusInternalServerError, api.CodeInternal)
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("compacting %s: %v", s, err)
	}
	return b.String()
}

// testJourney is the designer's journey, over HTTP only: create a scenario, save three
// versions, read the history, compare versions, lose a race to a stale save, validate an
// invalid graph, test one node, export and import, archive; then test the flights example
// with all 20,000 flights.
func testJourney(t *testing.T, c *client) {
	const name = "large payments"
	path := "/api/scenarios/" + url.PathEscape(name)
	v1 := paymentsGraph(t)
	v2 := replace(t, v1, "#input.amount > 1000", "#input.amount > 500")
	v3 := replace(t, v2, `"layoutData": {"x": 0, "y": 120}`, `"layoutData": {"x": 80, "y": 160}`) // moved only

	// Create: version 1.
	var got api.Version
	r := c.postAs("anna", "/api/scenarios", rawBody("name", quote(name), "graph", v1, "comment", quote("first draft")))
	r.ok(t, http.StatusCreated, &got)
	if got.Scenario != name || got.Version != 1 || got.Author != "anna" || got.Comment != "first draft" || got.CreatedAt.IsZero() {
		t.Fatalf("created %+v", got)
	}
	if loc := r.Header.Get("Location"); loc != path+"/versions/1" {
		t.Errorf("Location %q", loc)
	}

	// Versions 2 and 3, each on top of the one before.
	c.postAs("ben", path+"/versions", rawBody("baseVersion", "1", "graph", v2, "comment", quote("lower the limit"))).ok(t, http.StatusCreated, &got)
	if got.Version != 2 || got.Author != "ben" {
		t.Fatalf("saved %+v", got)
	}
	c.postAs("anna", path+"/versions", rawBody("baseVersion", "2", "graph", v3, "comment", quote("tidy the layout"))).ok(t, http.StatusCreated, &got)
	if got.Version != 3 {
		t.Fatalf("saved %+v", got)
	}

	// The latest, and a given version, with their graphs.
	var latest api.ScenarioWithVersion
	c.get(path).ok(t, http.StatusOK, &latest)
	if latest.Scenario.LatestVersion != 3 || latest.Scenario.CreatedBy != "anna" || latest.Scenario.ModifiedBy != "anna" ||
		latest.Latest.Version != 3 || string(latest.Latest.Graph) != compact(t, v3) {
		t.Errorf("latest: %+v", latest)
	}
	c.get(path+"/versions/2").ok(t, http.StatusOK, &got)
	if got.Version != 2 || string(got.Graph) != compact(t, v2) {
		t.Errorf("version 2: %+v", got)
	}

	// History, newest first, without graphs.
	var history api.VersionList
	c.get(path+"/versions").ok(t, http.StatusOK, &history)
	var summary []string
	for _, v := range history.Versions {
		summary = append(summary, fmt.Sprintf("%d %s %s %d", v.Version, v.Author, v.Comment, len(v.Graph)))
	}
	if want := []string{"3 anna tidy the layout 0", "2 ben lower the limit 0", "1 anna first draft 0"}; !slices.Equal(summary, want) {
		t.Errorf("history %q, want %q", summary, want)
	}
	if history.Next != 0 {
		t.Errorf("a whole history has next %d", history.Next)
	}
	// In pages (round 14: 8,393 imported versions were one 85 MB answer, 8 readers 1.66 GB):
	// limit 2 gives 3 and 2 and the next page's before, 2; that page gives 1 and no next.
	var page api.VersionList
	c.get(path+"/versions?limit=2").ok(t, http.StatusOK, &page)
	if len(page.Versions) != 2 || page.Versions[0].Version != 3 || page.Versions[1].Version != 2 || page.Next != 2 {
		t.Errorf("first page of 2: %+v", page)
	}
	page = api.VersionList{}
	c.get(path+"/versions?limit=2&before=2").ok(t, http.StatusOK, &page)
	if len(page.Versions) != 1 || page.Versions[0].Version != 1 || page.Next != 0 {
		t.Errorf("second page of 2: %+v", page)
	}
	c.get(path+"/versions?limit=1001").problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)

	// Compare: 1→2 changed the filter's expression; 2→3 moved a node, which is no difference.
	var cmp api.Comparison
	c.get(path+"/compare?from=1&to=2").ok(t, http.StatusOK, &cmp)
	if cmp.Identical || len(cmp.Differences) != 1 {
		t.Fatalf("compare 1→2: %+v", cmp)
	}
	if d := cmp.Differences[0]; d.Kind != api.DiffNodeChanged || d.NodeID != "large" || !slices.Equal(d.Fields, []string{"expression"}) ||
		!strings.Contains(string(d.Before), "> 1000") || !strings.Contains(string(d.After), "> 500") {
		t.Errorf("compare 1→2: %+v", d)
	}
	c.get(path+"/compare?from=2&to=3").ok(t, http.StatusOK, &cmp)
	if !cmp.Identical || len(cmp.Differences) != 0 {
		t.Errorf("compare 2→3 (layout only): %+v", cmp)
	}

	// A stale save, on top of version 2 while 3 is the latest: 409 with both versions.
	stale := replace(t, v2, "#input.amount > 500", "#input.amount > 750")
	p := c.postAs("carl", path+"/versions", rawBody("baseVersion", "2", "graph", stale)).problem(t, http.StatusConflict, api.CodeVersionConflict)
	if p.Conflict == nil || p.Conflict.BaseVersion != 2 || p.Conflict.Latest.Version != 3 || p.Conflict.Latest.Author != "anna" ||
		string(p.Conflict.Latest.Graph) != compact(t, v3) || p.Conflict.Attempted.Version != 3 ||
		p.Conflict.Attempted.Author != "carl" || string(p.Conflict.Attempted.Graph) != compact(t, stale) {
		t.Errorf("conflict: %s", mustJSON(p.Conflict))
	}

	// Validate an invalid, unsaved graph: the error is on the filter's expression.
	invalid := replace(t, v3, "#input.amount > 500", "#input.amout > 500")
	var val api.ValidationResult
	c.post("/api/validation", rawBody("graph", invalid)).ok(t, http.StatusOK, &val)
	if val.Valid || len(val.Errors) == 0 {
		t.Fatalf("invalid graph validated: %+v", val)
	}
	for _, e := range val.Errors {
		if e.NodeID != "large" || e.Field != "expression" || e.Code == "" || e.Line != 1 || e.Column == 0 {
			t.Errorf("error %+v, want on node large, field expression, at a position", e)
		}
	}
	if _, ok := val.Variables["large"]["input"]; !ok {
		t.Errorf("no #input in scope of the filter: %v", val.Variables["large"])
	}

	// Test one node: the filter of version 3 (amounts over 500) on a payment of 700, then 300.
	for _, tc := range []struct{ amount, edge, to string }{{"700", "FilterTrue", "last hour"}, {"300", "FilterFalse", "small"}} {
		var nt api.NodeTestResult
		vars := `{"input": {"card": "A", "amount": ` + tc.amount + `, "time": "2024-05-01T10:00:00Z"}}`
		c.post("/api/node-test", rawBody("graph", string(latest.Latest.Graph), "nodeId", quote("large"), "variables", vars)).ok(t, http.StatusOK, &nt)
		if len(nt.Outputs) != 1 || nt.Outputs[0].EdgeType != tc.edge || nt.Outputs[0].To != tc.to ||
			string(nt.Expressions["expression"].Value) != fmt.Sprint(tc.edge == "FilterTrue") || nt.Error != "" {
			t.Errorf("filter on %s: %s, want %s to %s", tc.amount, mustJSON(nt), tc.edge, tc.to)
		}
	}

	// Export version 2 exactly as saved; import it as a new scenario and as version 4.
	r = c.get(path + "/export?version=2")
	r.ok(t, http.StatusOK, nil)
	if string(r.Body) != strings.TrimSpace(v2) {
		t.Errorf("export differs from what was saved:\n%s", r.Body)
	}
	if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename="large payments-v2.json"` {
		t.Errorf("Content-Disposition %q", cd)
	}
	var imp api.ImportResult
	c.postAs("dora", "/api/scenarios/"+url.PathEscape("large payments copy")+"/import", r.Body).ok(t, http.StatusCreated, &imp)
	if !imp.Created || imp.Version.Version != 1 || imp.Version.Author != "dora" || imp.Version.Comment != "imported" || !imp.Validation.Valid {
		t.Errorf("import as a new scenario: %+v", imp)
	}
	c.postAs("dora", path+"/import?comment=back+to+500", r.Body).ok(t, http.StatusCreated, &imp)
	if imp.Created || imp.Version.Version != 4 || imp.Version.Comment != "back to 500" {
		t.Errorf("import as a new version: %+v", imp)
	}
	c.get(path+"/compare?from=2&to=4").ok(t, http.StatusOK, &cmp)
	if !cmp.Identical {
		t.Errorf("imported version 4 differs from the exported version 2: %+v", cmp)
	}

	// Archive: hidden from the list, no new versions, back after unarchiving.
	var sc api.Scenario
	c.post(path+"/archive", nil).ok(t, http.StatusOK, &sc)
	if !sc.Archived {
		t.Errorf("archive: %+v", sc)
	}
	c.post(path+"/versions", rawBody("baseVersion", "4", "graph", v1)).problem(t, http.StatusConflict, api.CodeScenarioArchived)
	var list api.ScenarioList
	c.get("/api/scenarios").ok(t, http.StatusOK, &list)
	if names := scenarioNames(list); !slices.Equal(names, []string{"large payments copy"}) {
		t.Errorf("list after archiving: %q", names)
	}
	c.post(path+"/unarchive", nil).ok(t, http.StatusOK, &sc)
	c.post(path+"/versions", rawBody("baseVersion", "4", "graph", v1)).ok(t, http.StatusCreated, &got)
	if got.Version != 5 {
		t.Errorf("save after unarchiving: %+v", got)
	}

	testFlightsExample(t, c)
}

// The scenario list comes a page at a time: 100 by default, limit otherwise, with next the
// after of the next page; every scenario once, in byte order, across the pages.
func testListPages(t *testing.T, c *client) {
	var want []string
	for i := range 105 {
		// "S000" ... "S104" sort before "s-..." in byte order; every seventh is lower case.
		name := fmt.Sprintf("S%03d", i)
		if i%7 == 0 {
			name = fmt.Sprintf("s-%03d", i)
		}
		want = append(want, name)
		c.post("/api/scenarios", rawBody("name", quote(name), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	}
	slices.Sort(want)
	var list api.ScenarioList
	c.get("/api/scenarios").ok(t, http.StatusOK, &list)
	if got := scenarioNames(list); len(got) != 100 || !slices.Equal(got, want[:100]) || list.Next != want[99] {
		t.Fatalf("default page: %d scenarios, first %q, next %q; want 100 from %q, next %q", len(got), got[:1], list.Next, want[0], want[99])
	}
	next := list.Next
	list = api.ScenarioList{}
	c.get("/api/scenarios?after="+url.QueryEscape(next)).ok(t, http.StatusOK, &list)
	if got := scenarioNames(list); !slices.Equal(got, want[100:]) || list.Next != "" {
		t.Fatalf("second default page: %q, next %q; want %q", got, list.Next, want[100:])
	}
	// Pages of 10: 11 pages, the last of 5 without next.
	var all []string
	after, pages := "", 0
	for {
		list = api.ScenarioList{}
		c.get("/api/scenarios?limit=10&after="+url.QueryEscape(after)).ok(t, http.StatusOK, &list)
		pages++
		all = append(all, scenarioNames(list)...)
		if list.Next == "" {
			break
		}
		if list.Next != list.Scenarios[len(list.Scenarios)-1].Name || pages > 11 {
			t.Fatalf("page %d: next %q after %q", pages, list.Next, scenarioNames(list))
		}
		after = list.Next
	}
	if pages != 11 || !slices.Equal(all, want) {
		t.Errorf("pages of 10: %d pages, %d scenarios; want 11 pages of the 105 in order", pages, len(all))
	}
	// A search pages through its matches only: the 15 lower-case names, 8 and 7.
	list = api.ScenarioList{}
	c.get("/api/scenarios?search=s-&limit=8").ok(t, http.StatusOK, &list)
	if got := scenarioNames(list); len(got) != 8 || got[0] != "s-000" || list.Next != "s-049" {
		t.Errorf("search s-, first page of 8: %q, next %q", got, list.Next)
	}
	list = api.ScenarioList{}
	c.get("/api/scenarios?search=s-&limit=8&after=s-049").ok(t, http.StatusOK, &list)
	if got := scenarioNames(list); len(got) != 7 || got[0] != "s-056" || got[6] != "s-098" || list.Next != "" {
		t.Errorf("search s-, second page: %q, next %q", got, list.Next)
	}
	// Never deployed: each item says so.
	if s := list.Scenarios[0].DeploymentStatus; s.Status != "NOT_DEPLOYED" || s.Scenario != "s-056" || s.Deployment != nil {
		t.Errorf("deployment status of a scenario never deployed: %s", mustJSON(s))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func scenarioNames(l api.ScenarioList) []string {
	var names []string
	for _, s := range l.Scenarios {
		names = append(names, s.Name)
	}
	return names
}

const tinyGraph = `{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}}], "edges": []}`

func testCreateListGet(t *testing.T, c *client) {
	for _, name := range []string{"Fraud", "fraud checks", "alerts.v2", "z_last-1"} {
		c.post("/api/scenarios", rawBody("name", quote(name), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	}
	var list api.ScenarioList
	c.get("/api/scenarios").ok(t, http.StatusOK, &list)
	if names := scenarioNames(list); !slices.Equal(names, []string{"Fraud", "alerts.v2", "fraud checks", "z_last-1"}) {
		t.Errorf("list: %q", names)
	}
	if s := list.Scenarios[0]; s.LatestVersion != 1 || s.CreatedBy != "local" || s.Archived || s.CreatedAt.IsZero() {
		t.Errorf("listed %+v", s)
	}
	c.get("/api/scenarios?search=FRAUD").ok(t, http.StatusOK, &list)
	if names := scenarioNames(list); !slices.Equal(names, []string{"Fraud", "fraud checks"}) {
		t.Errorf("search FRAUD: %q", names)
	}
	c.get("/api/scenarios?search=nothing+like+this").ok(t, http.StatusOK, &list)
	if list.Scenarios == nil || len(list.Scenarios) != 0 {
		t.Errorf("empty search: %s", mustJSON(list))
	}

	c.post("/api/scenarios", rawBody("name", quote("Fraud"), "graph", tinyGraph)).problem(t, http.StatusConflict, api.CodeScenarioExists)
	c.get("/api/scenarios/nope").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.get("/api/scenarios/nope/versions").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.get("/api/scenarios/nope/versions/1").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.get("/api/scenarios/Fraud/versions/2").problem(t, http.StatusNotFound, api.CodeVersionNotFound)
	c.post("/api/scenarios/nope/versions", rawBody("baseVersion", "1", "graph", tinyGraph)).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.post("/api/scenarios/Fraud/versions", rawBody("baseVersion", "7", "graph", tinyGraph)).problem(t, http.StatusNotFound, api.CodeVersionNotFound)
	c.post("/api/scenarios/nope/archive", nil).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)

	var v api.ScenarioWithVersion
	c.get("/api/scenarios/"+url.PathEscape("fraud checks")).ok(t, http.StatusOK, &v)
	if v.Scenario.Name != "fraud checks" || v.Latest.Version != 1 || string(v.Latest.Graph) != compact(t, tinyGraph) {
		t.Errorf("get: %+v", v)
	}
}

func testArchive(t *testing.T, c *client) {
	for _, name := range []string{"a", "b"} {
		c.post("/api/scenarios", rawBody("name", quote(name), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	}
	var s api.Scenario
	c.post("/api/scenarios/a/archive", nil).ok(t, http.StatusOK, &s)
	c.post("/api/scenarios/a/archive", nil).ok(t, http.StatusOK, &s) // again: not an error
	if !s.Archived {
		t.Errorf("archived: %+v", s)
	}
	lists := map[string][]string{"": {"b"}, "?archived=false": {"b"}, "?archived=true": {"a"}, "?archived=any": {"a", "b"}}
	for query, want := range lists {
		var list api.ScenarioList
		c.get("/api/scenarios"+query).ok(t, http.StatusOK, &list)
		if names := scenarioNames(list); !slices.Equal(names, want) {
			t.Errorf("list%s: %q, want %q", query, names, want)
		}
	}
	// Archived scenarios keep their versions, and their names.
	c.get("/api/scenarios/a/versions/1").ok(t, http.StatusOK, nil)
	c.post("/api/scenarios", rawBody("name", quote("a"), "graph", tinyGraph)).problem(t, http.StatusConflict, api.CodeScenarioExists)
	c.post("/api/scenarios/a/import", tinyGraph).problem(t, http.StatusConflict, api.CodeScenarioArchived)
	// Nor do its test cases change (a hostile round saved one: 200).
	c.send(request{Method: http.MethodPut, Path: "/api/scenarios/a/tests/t1", Body: `{"records": "{}", "expected": {}}`}).problem(t, http.StatusConflict, api.CodeScenarioArchived)
	c.send(request{Method: http.MethodDelete, Path: "/api/scenarios/a/tests/t1"}).problem(t, http.StatusConflict, api.CodeScenarioArchived)
	c.post("/api/scenarios/a/unarchive", nil).ok(t, http.StatusOK, &s)
	c.send(request{Method: http.MethodPut, Path: "/api/scenarios/a/tests/t1", Body: `{"records": "{}", "expected": {}}`}).ok(t, http.StatusOK, nil)
	// A media type in upper case is the same media type (huma answered application/JSON 415).
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("c"), "graph", tinyGraph), ContentType: "Application/JSON"}).ok(t, http.StatusCreated, nil)
	if s.Archived {
		t.Errorf("unarchived: %+v", s)
	}
	// There is no hard delete.
	c.send(request{Method: http.MethodDelete, Path: "/api/scenarios/a"}).problem(t, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
}

// Of several saves on the same base, over HTTP at once, exactly one wins; the others get the
// winner as the latest version.
func testConcurrentSaves(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("race"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	const n = 4
	results := make([]*response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i] = c.postAs(fmt.Sprintf("user%d", i), "/api/scenarios/race/versions", rawBody("baseVersion", "1", "graph", tinyGraph))
		})
	}
	wg.Wait()
	winner := ""
	for i, r := range results {
		if r.Status == http.StatusCreated {
			if winner != "" {
				t.Fatalf("two saves on version 1 won")
			}
			winner = fmt.Sprintf("user%d", i)
		}
	}
	if winner == "" {
		t.Fatal("no save won")
	}
	for _, r := range results {
		if r.Status == http.StatusCreated {
			continue
		}
		p := r.problem(t, http.StatusConflict, api.CodeVersionConflict)
		if p.Conflict.Latest.Version != 2 || p.Conflict.Latest.Author != winner {
			t.Errorf("conflict shows %+v, want version 2 by %s", p.Conflict.Latest, winner)
		}
	}
}

func testCompare(t *testing.T, c *client) {
	v1 := paymentsGraph(t)
	// Version 2: a node added, one removed (with its edge), one changed, the switch's
	// conditions reordered, nodes moved, the description changed.
	v2 := replace(t, v1, `{"id": "small", "type": "Sink", "ref": {"typ": "dead-end"}}`,
		`{"id": "tiny", "type": "Sink", "ref": {"typ": "dead-end"}}`)
	v2 = replace(t, v2, `{"from": "large", "to": "small", "edgeType": {"type": "FilterFalse"}}`,
		`{"from": "large", "to": "tiny", "edgeType": {"type": "FilterFalse"}}`)
	v2 = replace(t, v2, `{"name": "windowLength", "value": "1h"}`, `{"name": "windowLength", "value": "2h"}`)
	v2 = replace(t, v2, `"layoutData": {"x": 0, "y": 0}`, `"layoutData": {"x": 300, "y": 10}`)
	v2 = replace(t, v2, `"Large payments per card"`, `"Large payments per card, 2 hours"`)
	alertEdge := `{"from": "how many", "to": "alert", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "#hour.count >= 3"}}}`
	logEdge := `{"from": "how many", "to": "log", "edgeType": {"type": "SwitchDefault"}}`
	v2 = replace(t, v2, alertEdge+",\n    "+logEdge, logEdge+",\n    "+alertEdge)
	c.post("/api/scenarios", rawBody("name", quote("cmp"), "graph", v1)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/cmp/versions", rawBody("baseVersion", "1", "graph", v2)).ok(t, http.StatusCreated, nil)

	var cmp api.Comparison
	c.get("/api/scenarios/cmp/compare?from=1&to=2").ok(t, http.StatusOK, &cmp)
	var got []string
	for _, d := range cmp.Differences {
		got = append(got, fmt.Sprintf("%s %s %v", d.Kind, d.NodeID, d.Fields))
	}
	want := []string{
		"properties-changed  []",
		"node-changed last hour [parameters]",
		"node-added tiny []",
		"node-removed small []",
		"edge-removed large []",
		"edge-added large []",
		"edges-reordered how many []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c.get("/api/scenarios/cmp/compare?from=1&to=1").ok(t, http.StatusOK, &cmp)
	if !cmp.Identical || cmp.Differences == nil {
		t.Errorf("a version against itself: %s", mustJSON(cmp))
	}
	c.get("/api/scenarios/cmp/compare?from=1&to=3").problem(t, http.StatusNotFound, api.CodeVersionNotFound)
	c.get("/api/scenarios/cmp/compare?from=1").problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
}

func testExportImport(t *testing.T, c *client) {
	graph := "{\n  \"nodes\": [{\"id\": \"in\", \"type\": \"Source\", \"ref\": {\"typ\": \"http\"}}],\n  \"edges\": []\n}\n"
	c.post("/api/scenarios/exp/import", graph).ok(t, http.StatusCreated, nil)
	r := c.get("/api/scenarios/exp/export")
	r.ok(t, http.StatusOK, nil)
	if string(r.Body) != strings.TrimSpace(graph) {
		t.Errorf("export %q, want the imported text %q", r.Body, graph)
	}
	// The import's validation: a source alone does not end in a sink.
	var imp api.ImportResult
	c.post("/api/scenarios/exp/import?baseVersion=1", graph).ok(t, http.StatusCreated, &imp)
	if imp.Version.Version != 2 || imp.Validation.Valid || len(imp.Validation.Errors) == 0 {
		t.Errorf("import: %s", mustJSON(imp))
	}
	c.post("/api/scenarios/exp/import?baseVersion=1", graph).problem(t, http.StatusConflict, api.CodeVersionConflict)
	c.post("/api/scenarios/none/import?baseVersion=1", graph).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)

	// Imports are decoded strictly: each problem with its position in the imported text.
	p := c.post("/api/scenarios/exp/import", "{\"nodes\": [{\"id\": \"in\", \"type\": \"Source\", \"colour\": 1}],\n \"edges\": []}").
		problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario)
	if len(p.Problems) == 0 || p.Problems[0].NodeID != "in" || p.Problems[0].Line != 1 || p.Problems[0].Column == 0 {
		t.Errorf("problems %+v", p.Problems)
	}
	c.post("/api/scenarios/exp/import", `[1, 2]`).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	c.get("/api/scenarios/exp/export?version=9").problem(t, http.StatusNotFound, api.CodeVersionNotFound)
	c.get("/api/scenarios/none/export").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
}

func testValidation(t *testing.T, c *client) {
	var val api.ValidationResult
	c.post("/api/validation", rawBody("graph", paymentsGraph(t))).ok(t, http.StatusOK, &val)
	if !val.Valid || len(val.Errors) != 0 || val.Warnings == nil {
		t.Fatalf("valid graph: %s", mustJSON(val))
	}
	// Variables in scope per node, with their types.
	if got := val.Variables["summary"]["hour"].Display; got != "record{count: integer, p95: float?, total: number}" {
		t.Errorf("#hour in summary: %q", got)
	}
	if got := val.Variables["alert"]["summary"].Fields["card"].Kind; got == "" {
		t.Errorf("#summary.card in alert: %s", mustJSON(val.Variables["alert"]["summary"]))
	}

	// Errors per node and field: an unknown aggregator, a window that is no multiple of
	// its precision, an unknown variable.
	bad := replace(t, paymentsGraph(t), `"aggregator": "Sum"`, `"aggregator": "Summ"`)
	bad = replace(t, bad, `{"name": "windowLength", "value": "1h"}`, `{"name": "windowLength", "value": "1 hour"}`)
	bad = replace(t, bad, `"#hour.count"}`, `"#hours.count"}`)
	c.post("/api/validation", rawBody("graph", bad)).ok(t, http.StatusOK, &val)
	var got []string
	for _, e := range val.Errors {
		got = append(got, e.NodeID+" "+e.Field+" "+e.Code)
	}
	want := []string{
		"last hour aggregations[1].aggregator " + nodes.CodeUnknownAggregator,
		"last hour windowLength " + nodes.CodeInvalidDuration,
		"summary fields[1].expression unknown-variable",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no error %q in %q", w, got)
		}
	}

	// A graph that does not decode: its decoding problems are the errors.
	c.post("/api/validation", rawBody("graph", `{"nodes": [{"id": "x", "type": "Filtre"}], "edges": []}`)).ok(t, http.StatusOK, &val)
	if val.Valid || len(val.Errors) == 0 || val.Errors[0].Code != "unknown-node-type" || val.Errors[0].Line != 1 {
		t.Errorf("undecodable graph: %s", mustJSON(val))
	}

	// A saved version.
	c.post("/api/scenarios", rawBody("name", quote("saved"), "graph", bad)).ok(t, http.StatusCreated, nil)
	c.get("/api/scenarios/saved/validation").ok(t, http.StatusOK, &val)
	if val.Valid || len(val.Errors) < 3 {
		t.Errorf("saved: %s", mustJSON(val))
	}
	c.get("/api/scenarios/saved/validation?version=2").problem(t, http.StatusNotFound, api.CodeVersionNotFound)
}

func testNodeValidationAndSuggestions(t *testing.T, c *client) {
	bad := replace(t, paymentsGraph(t), `"#hour.count"}`, `"#hours.count"}`)
	var nv api.NodeValidationResult
	c.post("/api/validation/node", rawBody("graph", bad, "nodeId", quote("summary"))).ok(t, http.StatusOK, &nv)
	if nv.Valid || len(nv.Errors) != 1 || nv.Errors[0].Field != "fields[1].expression" || !nv.ScopeKnown {
		t.Errorf("node summary: %s", mustJSON(nv))
	}
	if _, ok := nv.Variables["hour"]; !ok {
		t.Errorf("#hour not in scope of summary: %s", mustJSON(nv.Variables))
	}
	c.post("/api/validation/node", rawBody("graph", bad, "nodeId", quote("alert"))).ok(t, http.StatusOK, &nv)
	if !nv.Valid || len(nv.Errors) != 0 {
		t.Errorf("node alert: %s", mustJSON(nv))
	}
	c.post("/api/validation/node", rawBody("graph", bad, "nodeId", quote("nowhere"))).problem(t, http.StatusUnprocessableEntity, api.CodeUnknownNode)

	var sl api.SuggestionList
	c.post("/api/suggestions", rawBody("graph", bad, "nodeId", quote("summary"), "expression", quote("#hour.to"), "caret", "8")).ok(t, http.StatusOK, &sl)
	if len(sl.Suggestions) != 1 || sl.Suggestions[0].Label != "total" || sl.Suggestions[0].Kind != "field" || sl.Suggestions[0].Start != 6 ||
		sl.Suggestions[0].Type == nil || sl.Suggestions[0].Type.Kind != "number" {
		t.Errorf("suggestions for #hour.to: %s", mustJSON(sl))
	}
	c.post("/api/suggestions", rawBody("graph", bad, "nodeId", quote("summary"), "expression", quote("#"), "caret", "1")).ok(t, http.StatusOK, &sl)
	var labels []string
	for _, s := range sl.Suggestions {
		labels = append(labels, s.Label)
	}
	if want := []string{"#hour", "#input", "#key", "#meta"}; !slices.Equal(labels, want) {
		t.Errorf("suggestions for #: %q, want %q", labels, want)
	}
	c.post("/api/suggestions", rawBody("graph", bad, "nodeId", quote("x"), "expression", quote("#"), "caret", "1")).problem(t, http.StatusUnprocessableEntity, api.CodeUnknownNode)
	c.post("/api/suggestions", rawBody("graph", bad, "nodeId", quote("summary"), "expression", quote("#"), "caret", "-1")).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
}

func testComponents(t *testing.T, c *client) {
	var comp struct {
		Groups []string `json:"groups"`
		Kinds  []struct {
			ID         string            `json:"id"`
			Group      string            `json:"group"`
			Parameters []nodes.ParamSpec `json:"parameters"`
		} `json:"kinds"`
		Aggregators []struct {
			Name string `json:"name"`
		} `json:"aggregators"`
	}
	c.get("/api/components").ok(t, http.StatusOK, &comp)
	reg := engine.Default()
	if len(comp.Kinds) != len(reg.Kinds()) || len(comp.Aggregators) != len(reg.Aggregators()) {
		t.Fatalf("%d kinds and %d aggregators, the registry has %d and %d", len(comp.Kinds), len(comp.Aggregators), len(reg.Kinds()), len(reg.Aggregators()))
	}
	for i, k := range reg.Kinds() {
		if comp.Kinds[i].ID != k.ID || len(comp.Kinds[i].Parameters) != len(k.Parameters) {
			t.Errorf("kind %d: %s with %d parameters, want %s with %d", i, comp.Kinds[i].ID, len(comp.Kinds[i].Parameters), k.ID, len(k.Parameters))
		}
	}
	if !slices.Equal(comp.Groups, []string{nodes.GroupSources, nodes.GroupBase, nodes.GroupAggregates, nodes.GroupSinks}) {
		t.Errorf("groups %q", comp.Groups)
	}
}

func testOperations(t *testing.T, c *client) {
	var h api.Health
	c.get("/healthz").ok(t, http.StatusOK, &h)
	c.get("/readyz").ok(t, http.StatusOK, &h)
	if h.Status != "ok" {
		t.Errorf("readyz: %+v", h)
	}
	c.get("/api/scenarios/nope").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	r := c.get("/metrics")
	r.ok(t, http.StatusOK, nil)
	for _, want := range []string{
		`scenario_server_http_requests_total{method="GET",route="/api/scenarios/{name}",status="404"} 1`,
		`scenario_server_http_requests_total{method="GET",route="/readyz",status="200"} 1`,
		`scenario_server_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="+Inf"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	r = c.get("/api/docs")
	r.ok(t, http.StatusOK, nil)
	if !strings.Contains(string(r.Body), `fetch("openapi.json")`) || strings.Contains(string(r.Body), "https://") {
		t.Errorf("the docs page should load openapi.json and nothing from other sites")
	}
	r = c.get("/")
	r.ok(t, http.StatusOK, nil)
	if !strings.Contains(string(r.Body), `href="/api/docs"`) {
		t.Errorf("the start page does not link the docs")
	}
}
