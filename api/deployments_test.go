package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/value"
)

func TestDeploymentsOnSQLite(t *testing.T) {
	t.Parallel()
	runDeploymentSuite(t, sqliteStore)
}

func TestDeploymentsOnPostgres(t *testing.T) {
	t.Parallel()
	runDeploymentSuite(t, postgresStore)
}

// runDeploymentSuite is the deployments' suite, run on each store: each test gets a fresh
// store, a runtime on it, and talks to the API over HTTP only.
func runDeploymentSuite(t *testing.T, newStore newStoreFunc) {
	tests := []struct {
		name string
		run  func(t *testing.T, c *client)
	}{
		{"AccessLogSessionsEqualReplay", testAccessLogSessions},
		{"InvalidVersionKeepsRunning", testDeployInvalidVersion},
		{"StatusesAndHistory", testDeploymentStatuses},
		{"Ingestion", testIngestion},
		{"IdleSourceClosesWindow", testIdleWindowThroughAPI},
		{"Streams", testStreams},
		{"LateEvents", testLateEventsDeployed},
		{"EnforceSchema", testEnforceSchemaDeployed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newDeployClient(t, newStore(t)))
		})
	}
	t.Run("Backpressure", func(t *testing.T) {
		t.Parallel()
		testBackpressure(t, newDeployClient(t, newStore(t), func(c *deploy.Config) { c.MaxBacklog = 1 }))
	})
	t.Run("DeployAndIngestGuards", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		testDeployAndIngestGuards(t, newDeployClient(t, newStore(t), func(c *deploy.Config) { c.FileSinkDir = dir }), dir)
	})
	t.Run("MaxDeployments", func(t *testing.T) {
		t.Parallel()
		testMaxDeployments(t, newDeployClient(t, newStore(t), func(c *deploy.Config) { c.MaxDeployments = 2 }))
	})
	t.Run("NoRuntime", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, newStore(t))
		c.post("/api/scenarios", rawBody("name", quote("x"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
		c.post("/api/scenarios/x/deploy", nil).problem(t, http.StatusServiceUnavailable, api.CodeUnavailable)
		var counts api.LiveCounts
		c.get("/api/scenarios/x/counts").ok(t, http.StatusOK, &counts)
		if counts.Running {
			t.Errorf("counts without a runtime: %+v", counts)
		}
	})
}

// newDeployClient starts a runtime on st (checkpoints every 50 ms) and the API with it.
func newDeployClient(t *testing.T, st store.Store, configure ...func(*deploy.Config)) *client {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := deploy.Config{Store: st, Logger: testLogger(t), CheckpointInterval: 50 * time.Millisecond,
		FileSinkDir: t.TempDir(), Metrics: reg, Stdout: io.Discard}
	for _, f := range configure {
		f(&cfg)
	}
	rt, err := deploy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, st, func(c *api.Config) { c.Runtime, c.Metrics = rt, reg })
	t.Cleanup(func() { // before the server and the store close
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil {
			t.Errorf("runtime shutdown: %v", err)
		}
	})
	return c
}

// accessLogGraph is examples/accesslog-sessions.json made live: its file source becomes an
// http source (timestamp expression kept); its sink is a collect sink already.
func accessLogGraph(t *testing.T) string {
	t.Helper()
	g := readRepoFile(t, "examples/accesslog-sessions.json")
	g = replace(t, g, `"typ": "file",
        "parameters": [
          {
            "name": "path",
            "value": "testdata/access-log-10k.ndjson"
          },`, `"typ": "http",
        "parameters": [`)
	return g
}

// sentinel is an event months after the file's last (and in the past, within maxFutureSkew) of its
// own client: its watermark closes every session of the
// file, and only its own stays open.
const sentinel = `{"ts":"2016-01-01T00:00:00Z","client":"zz-sentinel","method":"GET","path":"/","status":200,"bytes":1}`

// replayValues replays lines through graph, as `scenario-server run` does (end of input
// included), and returns the sink values as normalized JSON.
func replayValues(t *testing.T, graph string, lines []byte) []string {
	t.Helper()
	sc, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	e, err := engine.New(sc, engine.Options{ScenarioName: "replay", Output: func(_ string, v value.Value, _ int64) {
		out = append(out, normJSON(t, value.AppendJSON(nil, v)))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Replay(context.Background(), e, bytes.NewReader(lines)); err != nil {
		t.Fatal(err)
	}
	return out
}

// normJSON re-encodes a JSON value, numbers kept exact, so that texts compare as values.
func normJSON(t *testing.T, b []byte) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// postEvents sends NDJSON lines as one batch under key and returns the answer.
func postEvents(c *client, name, source, key string, lines [][]byte) *response {
	c.t.Helper()
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return c.send(request{Method: http.MethodPost, Path: eventsPath(name, source),
		Body: append(bytes.Join(lines, []byte("\n")), '\n'), ContentType: "application/x-ndjson", Header: h})
}

func eventsPath(name, source string) string {
	return "/api/scenarios/" + url.PathEscape(name) + "/sources/" + url.PathEscape(source) + "/events"
}

// waitCounts polls the counts until cond holds (20 s at most).
func waitCounts(t *testing.T, c *client, name string, cond func(api.LiveCounts) bool) api.LiveCounts {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var lc api.LiveCounts
		c.get("/api/scenarios/"+url.PathEscape(name)+"/counts").ok(t, http.StatusOK, &lc)
		if cond(lc) {
			return lc
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts never met the condition: %s", mustJSON(lc))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func committed(n int64) func(api.LiveCounts) bool {
	return func(lc api.LiveCounts) bool { return len(lc.Sources) > 0 && lc.Sources[0].Committed >= n }
}

// readResults pages through a collect sink's results with the cursor.
func readResults(t *testing.T, c *client, name, sink string, limit int) []api.SinkResult {
	t.Helper()
	var all []api.SinkResult
	after := int64(0)
	for {
		var page api.SinkResultPage
		c.get(fmt.Sprintf("/api/scenarios/%s/sinks/%s/results?after=%d&limit=%d", url.PathEscape(name), sink, after, limit)).
			ok(t, http.StatusOK, &page)
		if len(page.Results) == 0 {
			if page.Next != after {
				t.Errorf("empty page with next %d, want %d", page.Next, after)
			}
			return all
		}
		all = append(all, page.Results...)
		after = page.Next
	}
}

// The access-log sessions example, deployed with an http source and a collect sink, fed the
// 9,999 events in batches of 500 and a sentinel: its results equal `scenario-server run` on
// the same events, but for the sentinel's own session, which only the end of input closes.
func testAccessLogSessions(t *testing.T, c *client) {
	const name = "access sessions"
	graph := accessLogGraph(t)
	c.post("/api/scenarios", rawBody("name", quote(name), "graph", graph)).ok(t, http.StatusCreated, nil)
	var d api.Deployment
	c.postAs("anna", "/api/scenarios/"+url.PathEscape(name)+"/deploy", rawBody("comment", quote("live"))).ok(t, http.StatusOK, &d)
	if d.Status != "RUNNING" || d.Version != 1 || d.User != "anna" || d.Comment != "live" {
		t.Fatalf("deployed %+v", d)
	}

	data, err := os.ReadFile("../testdata/access-log-10k.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(lines) != 9999 {
		t.Fatalf("%d lines in the access log", len(lines))
	}
	lines = append(lines, []byte(sentinel))
	for i := 0; i < len(lines); i += 500 {
		var res api.IngestResult
		postEvents(c, name, "log", fmt.Sprintf("batch-%d", i), lines[i:min(i+500, len(lines))]).ok(t, http.StatusAccepted, &res)
		if res.FirstOffset != int64(i) || res.Duplicate {
			t.Fatalf("batch %d: %+v", i, res)
		}
	}
	lc := waitCounts(t, c, name, committed(int64(len(lines))))
	if lc.Nodes["log"].In != int64(len(lines)) || lc.Nodes["log"].Errors != 0 || lc.Sources[0].Backlog != 0 {
		t.Errorf("counts: %s", mustJSON(lc))
	}

	var got []string
	for _, r := range readResults(t, c, name, "out", 1000) {
		got = append(got, normJSON(t, r.Value))
	}
	want := replayValues(t, readRepoFile(t, "examples/accesslog-sessions.json"), append(data, []byte(sentinel+"\n")...))
	if last := want[len(want)-1]; !strings.Contains(last, "zz-sentinel") {
		t.Fatalf("the replay's last result is not the sentinel's session: %s", last)
	}
	want = want[:len(want)-1]
	if len(got) != len(want) {
		t.Fatalf("%d sessions collected, the replay has %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("session %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if lc.Nodes["sessions"].Out != int64(len(want)) {
		t.Errorf("sessions node out %d, want %d", lc.Nodes["sessions"].Out, len(want))
	}
	t.Logf("%d events, %d sessions collected, equal to the replay's", len(lines), len(got))

	// Prometheus: the counts per scenario and node.
	r := c.get("/metrics")
	r.ok(t, http.StatusOK, nil)
	for _, want := range []string{
		fmt.Sprintf(`scenario_server_node_in_total{node="log",scenario=%q} %d`, name, len(lines)),
		fmt.Sprintf(`scenario_server_node_out_total{node="sessions",scenario=%q} %d`, name, len(got)),
		fmt.Sprintf(`scenario_server_source_backlog{scenario=%q,source="log"} 0`, name),
	} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Deploying a version that does not validate answers 422 with its problems; the version
// running before keeps processing, as its counts show.
func testDeployInvalidVersion(t *testing.T, c *client) {
	graph := countGraph("10s")
	c.post("/api/scenarios", rawBody("name", quote("counts"), "graph", graph)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/counts/deploy", nil).ok(t, http.StatusOK, nil)
	postEvents(c, "counts", "in", "", events(0, 100)).ok(t, http.StatusAccepted, nil)
	waitCounts(t, c, "counts", committed(100))

	bad := replace(t, graph, `"aggregator": "Count"`, `"aggregator": "Cnt"`)
	c.post("/api/scenarios/counts/versions", rawBody("baseVersion", "1", "graph", bad)).ok(t, http.StatusCreated, nil)
	p := c.post("/api/scenarios/counts/deploy", rawBody("version", "2")).problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario)
	if len(p.Problems) == 0 || p.Problems[0].NodeID != "win" || !strings.Contains(p.Detail, "version 2") {
		t.Errorf("problem: %s", mustJSON(p))
	}
	c.post("/api/scenarios/counts/deploy", nil).problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario) // latest = 2

	var st api.ScenarioDeployment
	c.get("/api/scenarios/counts/deployment").ok(t, http.StatusOK, &st)
	if st.Status != "RUNNING" || st.Deployment.Version != 1 {
		t.Errorf("after the refused deploys: %s", mustJSON(st))
	}
	postEvents(c, "counts", "in", "", events(100, 150)).ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, "counts", committed(250))
	if lc.Version != 1 || lc.Nodes["in"].In != 250 || lc.Nodes["win"].In != 250 {
		t.Errorf("the running version after the refused deploys: %s", mustJSON(lc))
	}
}

// countGraph counts events per key in tumbling windows of #input.ts (epoch ms) into the
// collect sink "out".
func countGraph(window string) string {
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
    {"name": "maxOutOfOrderness", "value": "0s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "` + window + `"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n}"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`
}

// events makes n events from index from, one a second, of 3 keys.
func events(from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, `{"ts": %d, "key": "k%d"}`, 1_700_000_000_000+int64(from+i)*1000, (from+i)%3)
	}
	return out
}

func testDeploymentStatuses(t *testing.T, c *client) {
	for _, name := range []string{"a", "b", "c"} {
		c.post("/api/scenarios", rawBody("name", quote(name), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	}
	var st api.ScenarioDeployment
	c.get("/api/scenarios/a/deployment").ok(t, http.StatusOK, &st)
	if st.Status != "NOT_DEPLOYED" || st.Deployment != nil {
		t.Errorf("never deployed: %s", mustJSON(st))
	}
	c.postAs("anna", "/api/scenarios/a/deploy", rawBody("comment", quote("first"))).ok(t, http.StatusOK, nil)
	c.postAs("ben", "/api/scenarios/b/deploy", nil).ok(t, http.StatusOK, nil)
	var canceled api.Deployment
	c.postAs("ben", "/api/scenarios/b/cancel", rawBody("comment", quote("maintenance"))).ok(t, http.StatusOK, &canceled)
	if canceled.Status != "CANCELED" || canceled.Reason != "canceled by ben: maintenance" {
		t.Errorf("canceled: %s", mustJSON(canceled))
	}
	c.post("/api/scenarios/b/cancel", nil).problem(t, http.StatusConflict, api.CodeNotDeployed)
	c.post("/api/scenarios/nope/cancel", nil).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.post("/api/scenarios/nope/deploy", nil).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.post("/api/scenarios/nope/deploy", rawBody("version", "2")).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.post("/api/scenarios/a/deploy", rawBody("version", "7")).problem(t, http.StatusNotFound, api.CodeVersionNotFound)
	c.post("/api/scenarios/a/deploy", rawBody("version", "0")).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)

	// Redeploy a: the first deployment is replaced.
	var second api.Deployment
	c.postAs("carl", "/api/scenarios/a/deploy", rawBody("version", "1", "comment", quote("again"))).ok(t, http.StatusOK, &second)
	var history api.DeploymentList
	c.get("/api/scenarios/a/deployments").ok(t, http.StatusOK, &history)
	var summary []string
	for _, d := range history.Deployments {
		summary = append(summary, fmt.Sprintf("v%d %s %s %s %q", d.Version, d.Status, d.User, d.Comment, d.Reason))
	}
	want := []string{`v1 RUNNING carl again ""`, `v1 CANCELED anna first "replaced by version 1 (deployed by carl)"`}
	if strings.Join(summary, "; ") != strings.Join(want, "; ") {
		t.Errorf("history:\n got %q\nwant %q", summary, want)
	}
	// In pages of one: the second deployment and the next page's before (its id); then the
	// first, and no next.
	var page api.DeploymentList
	c.get("/api/scenarios/a/deployments?limit=1").ok(t, http.StatusOK, &page)
	if len(page.Deployments) != 1 || page.Deployments[0].ID != second.ID || page.Next != second.ID || history.Next != 0 {
		t.Errorf("first page of 1: %s (whole history's next %d)", mustJSON(page), history.Next)
	}
	page = api.DeploymentList{}
	c.get(fmt.Sprintf("/api/scenarios/a/deployments?limit=1&before=%d", second.ID)).ok(t, http.StatusOK, &page)
	if len(page.Deployments) != 1 || page.Deployments[0].Comment != "first" || page.Next != 0 {
		t.Errorf("second page of 1: %s", mustJSON(page))
	}

	var all api.DeploymentStatusList
	c.get("/api/deployments").ok(t, http.StatusOK, &all)
	var statuses []string
	for _, s := range all.Scenarios {
		statuses = append(statuses, s.Scenario+" "+s.Status)
	}
	if got := strings.Join(statuses, ", "); got != "a RUNNING, b CANCELED, c NOT_DEPLOYED" {
		t.Errorf("all statuses: %s", got)
	}
	// An active deployment keeps its scenario from being archived.
	c.post("/api/scenarios/a/archive", nil).problem(t, http.StatusConflict, api.CodeDeploymentActive)
	c.post("/api/scenarios/c/archive", nil).ok(t, http.StatusOK, nil)
	c.post("/api/scenarios/c/deploy", nil).problem(t, http.StatusConflict, api.CodeScenarioArchived)

	// In pages of one: the archived c, never deployed, is left out of its page (which is
	// empty but has a next, as d follows).
	c.post("/api/scenarios", rawBody("name", quote("d"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	var pages []string
	after := ""
	for range 6 {
		var p api.DeploymentStatusList
		c.get("/api/deployments?limit=1&after="+after).ok(t, http.StatusOK, &p)
		var page []string
		for _, s := range p.Scenarios {
			page = append(page, s.Scenario+" "+s.Status)
		}
		pages = append(pages, fmt.Sprintf("[%s] next %q", strings.Join(page, ", "), p.Next))
		if after = p.Next; after == "" {
			break
		}
	}
	want = []string{`[a RUNNING] next "a"`, `[b CANCELED] next "b"`, `[] next "c"`, `[d NOT_DEPLOYED] next ""`}
	if !slices.Equal(pages, want) {
		t.Errorf("statuses in pages of 1:\n got %q\nwant %q", pages, want)
	}
	// The scenario list gives each scenario's status as the statuses do, archived or not.
	var list api.ScenarioList
	c.get("/api/scenarios?archived=any&limit=3").ok(t, http.StatusOK, &list)
	var items []string
	for _, s := range list.Scenarios {
		st := s.DeploymentStatus
		item := fmt.Sprintf("%s archived=%v %s %q", s.Name, s.Archived, st.Status, st.Reason)
		if st.Deployment != nil {
			item += fmt.Sprintf(" v%d #%d", st.Deployment.Version, st.Deployment.ID)
		}
		items = append(items, item)
	}
	want = []string{fmt.Sprintf(`a archived=false RUNNING "" v1 #%d`, second.ID), fmt.Sprintf(`b archived=false CANCELED "canceled by ben: maintenance" v1 #%d`, canceled.ID), `c archived=true NOT_DEPLOYED ""`}
	if !slices.Equal(items, want) || list.Next != "c" {
		t.Errorf("scenario list with statuses:\n got %q next %q\nwant %q next \"c\"", items, list.Next, want)
	}
}

func testIngestion(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("in"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	path := eventsPath("in", "in")
	postEvents(c, "in", "in", "", events(0, 1)).problem(t, http.StatusConflict, api.CodeNotDeployed)
	postEvents(c, "nope", "in", "", events(0, 1)).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.post("/api/scenarios/in/deploy", nil).ok(t, http.StatusOK, nil)

	// Three ways to send: one object, an array, NDJSON.
	var res api.IngestResult
	c.post(path, string(events(0, 1)[0])).ok(t, http.StatusAccepted, &res)
	if res.FirstOffset != 0 || res.Count != 1 || res.Scenario != "in" || res.Source != "in" || res.AcceptedAt.IsZero() {
		t.Errorf("one object: %+v", res)
	}
	c.post(path, "["+string(bytes.Join(events(1, 2), []byte(",")))+"]").ok(t, http.StatusAccepted, &res)
	if res.FirstOffset != 1 || res.Count != 2 {
		t.Errorf("array: %+v", res)
	}
	postEvents(c, "in", "in", "k1", events(3, 3)).ok(t, http.StatusAccepted, &res)
	if res.FirstOffset != 3 || res.Count != 3 || res.Duplicate {
		t.Errorf("ndjson: %+v", res)
	}
	// The same key again: stored once, the first answer again.
	postEvents(c, "in", "in", "k1", events(3, 3)).ok(t, http.StatusAccepted, &res)
	if res.FirstOffset != 3 || res.Count != 3 || !res.Duplicate {
		t.Errorf("re-sent: %+v", res)
	}
	postEvents(c, "in", "in", "k1", events(3, 2)).problem(t, http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReused)
	// A key is printable ASCII, as the IETF draft's (a structured-field string): bytes that
	// are not UTF-8 (PostgreSQL refused them, failing every batch committed in the same group
	// with a 500) and control characters are refused, nothing stored.
	for _, key := range []string{"caf\xe9", "caf\u00e9", "a\tb"} {
		postEvents(c, "in", "in", key, events(6, 1)).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	}
	waitCounts(t, c, "in", func(lc api.LiveCounts) bool { return lc.Nodes["in"].In == 6 && lc.Sources[0].Accepted == 6 })

	// Refused batches store nothing.
	p := c.post(path, `[{"ts": 1}, 2]`).problem(t, http.StatusBadRequest, api.CodeInvalidEvent)
	if !strings.Contains(p.Detail, "event 2") {
		t.Errorf("detail %q does not say which event", p.Detail)
	}
	c.post(path, `[{"ts": 1}, `).problem(t, http.StatusBadRequest, api.CodeInvalidJSON)
	c.post(path, `[]`).problem(t, http.StatusBadRequest, api.CodeInvalidEvent)
	c.send(request{Method: http.MethodPost, Path: path, Body: "{\"ts\": 1}\n{\"ts\": \n", ContentType: "application/x-ndjson"}).
		problem(t, http.StatusBadRequest, api.CodeInvalidEvent)
	c.send(request{Method: http.MethodPost, Path: path, Body: "\n\n", ContentType: "application/x-ndjson"}).
		problem(t, http.StatusBadRequest, api.CodeInvalidEvent)
	c.send(request{Method: http.MethodPost, Path: path, Body: "ts=1", ContentType: "text/plain"}).
		problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	postEvents(c, "in", "other", "", events(0, 1)).problem(t, http.StatusNotFound, api.CodeSourceNotFound)
	// NDJSON is for the events only.
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: "{}\n", ContentType: "application/x-ndjson"}).
		problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	postEvents(c, "in", "in", strings.Repeat("k", 201), events(0, 1)).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	postEvents(c, "a%2Fb", "in", "", events(0, 1)).problem(t, http.StatusBadRequest, api.CodeInvalidName)
	c.send(request{Method: http.MethodPost, Path: path, Body: "", ContentType: "application/json"}).problem(t, http.StatusBadRequest, api.CodeBadRequest)
	c.post("/api/scenarios/in/deploy", rawBody("colour", quote("red"))).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	c.send(request{Method: http.MethodGet, Path: "/api/scenarios/in/sinks/out/results/stream", Header: map[string]string{"Last-Event-ID": "x"}}).
		problem(t, http.StatusBadRequest, api.CodeBadRequest)
	lc := waitCounts(t, c, "in", func(lc api.LiveCounts) bool { return true })
	if lc.Sources[0].Accepted != 6 {
		t.Errorf("refused batches were accepted: %s", mustJSON(lc))
	}

	// Results: the cursor, a sink that is not there.
	c.get("/api/scenarios/in/sinks/nope/results").problem(t, http.StatusNotFound, api.CodeSinkNotFound)
	c.get("/api/scenarios/in/sinks/in/results").problem(t, http.StatusNotFound, api.CodeSinkNotFound)
	c.get("/api/scenarios/nope/sinks/out/results").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.get("/api/scenarios/in/sinks/out/results?limit=0").problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	postEvents(c, "in", "in", "", events(6, 40)).ok(t, http.StatusAccepted, nil)
	waitCounts(t, c, "in", committed(46))
	all := readResults(t, c, "in", "out", 1000)
	paged := readResults(t, c, "in", "out", 4)
	if len(all) != 12 || mustJSON(all) != mustJSON(paged) {
		t.Errorf("%d results, paged by 4: %d", len(all), len(paged))
	}
	if all[0].ID != 1 || normJSON(t, all[0].Value) != `{"key":"k0","n":4,"start":1700000000000}` {
		t.Errorf("first result: %s", mustJSON(all[0]))
	}
	// Counts of a scenario that is not deployed, or not there.
	c.post("/api/scenarios/in/cancel", nil).ok(t, http.StatusOK, nil)
	var stopped api.LiveCounts
	c.get("/api/scenarios/in/counts").ok(t, http.StatusOK, &stopped)
	if stopped.Running || len(stopped.Nodes) != 0 {
		t.Errorf("counts after cancel: %s", mustJSON(stopped))
	}
	c.get("/api/scenarios/nope/counts").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
}

// With the backlog limit at 1, concurrent batches get 429 backlog-full with Retry-After while
// the deployment catches up; every batch is accepted in the end, once.
func testBackpressure(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("bp"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/bp/deploy", nil).ok(t, http.StatusOK, nil)
	const senders, batches, size = 4, 5, 1000
	var mu sync.Mutex
	refused := 0
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for b := range batches {
				first := (s*batches + b) * size
				for {
					r := postEvents(c, "bp", "in", fmt.Sprintf("s%d-b%d", s, b), events(first, size))
					if r.Status == http.StatusAccepted {
						break
					}
					p := r.problem(t, http.StatusTooManyRequests, api.CodeBacklogFull)
					if r.Header.Get("Retry-After") != "1" || !strings.Contains(p.Detail, "waiting to be processed") {
						t.Errorf("429 without Retry-After: 1: %v %s", r.Header, r.Body)
					}
					mu.Lock()
					refused++
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	lc := waitCounts(t, c, "bp", committed(senders*batches*size))
	if lc.Nodes["in"].In != senders*batches*size {
		t.Errorf("counted %d events, want %d", lc.Nodes["in"].In, senders*batches*size)
	}
	if refused == 0 {
		t.Error("no batch was refused with a backlog limit of 1")
	}
	t.Logf("%d answers 429 for %d batches", refused, senders*batches)
}

// After the last event of a key, its tumbling window comes out about one idle timeout after
// the window's end, with no further events.
func testIdleWindowThroughAPI(t *testing.T, c *client) {
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "idleTimeout", "value": "1s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "1s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], end: #window.end, n: #agg.n}"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`
	c.post("/api/scenarios", rawBody("name", quote("idle"), "graph", graph)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/idle/deploy", nil).ok(t, http.StatusOK, nil)
	postEvents(c, "idle", "in", "", [][]byte{[]byte(`{"key": "quiet"}`)}).ok(t, http.StatusAccepted, nil)
	var results []api.SinkResult
	deadline := time.Now().Add(10 * time.Second)
	for len(results) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the quiet key's window never came out")
		}
		time.Sleep(10 * time.Millisecond)
		results = readResults(t, c, "idle", "out", 10)
	}
	seen := time.Now()
	var w struct {
		Key string
		End int64
		N   int64
	}
	if err := json.Unmarshal(results[0].Value, &w); err != nil {
		t.Fatal(err)
	}
	// No upper bound: the event watermark stays 60 s (the default out-of-orderness) behind
	// the events, and the wait above gives up after 10 s, so only idleness can have closed it.
	after := seen.Sub(time.UnixMilli(w.End))
	t.Logf("window [%d, %d) of %q seen %v after its end (idle timeout 1s)", w.End-1000, w.End, w.Key, after)
	if w.Key != "quiet" || w.N != 1 || after < time.Second {
		t.Errorf("window %s seen %v after its end, want no sooner than the idle timeout, 1s", results[0].Value, after)
	}
}

// The counts and results streams: server-sent events, with ids for the results, resumed
// after Last-Event-ID.
func testStreams(t *testing.T, c *client) {
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	c.get("/api/scenarios/nope/counts/stream").problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	c.get("/api/scenarios/s/sinks/nope/results/stream").problem(t, http.StatusNotFound, api.CodeSinkNotFound)
	c.post("/api/scenarios/s/deploy", nil).ok(t, http.StatusOK, nil)

	// Three counts streams on s share one encoding of its counts; each gets them all.
	var streams []*sseStream
	for range 3 {
		counts := openStream(t, c, "/api/scenarios/s/counts/stream", "")
		first := counts.next(t)
		if first.name != "counts" || !strings.Contains(first.data, `"running":true`) {
			t.Errorf("first counts event: %+v", first)
		}
		streams = append(streams, counts)
	}
	results := openStream(t, c, "/api/scenarios/s/sinks/out/results/stream", "")
	postEvents(c, "s", "in", "", events(0, 25)).ok(t, http.StatusAccepted, nil)
	for _, counts := range streams {
		for {
			ev := counts.next(t)
			var lc api.LiveCounts
			if err := json.Unmarshal([]byte(ev.data), &lc); err != nil {
				t.Fatal(err)
			}
			if lc.Nodes["in"].In == 25 {
				break
			}
		}
	}
	if n := api.CountsEncodings(c.handler); n != 1 {
		t.Errorf("three counts streams on one scenario keep %d encodings, want 1", n)
	}
	for _, counts := range streams {
		counts.close()
	}
	// The last stream closed drops the encoding.
	for deadline := time.Now().Add(10 * time.Second); api.CountsEncodings(c.handler) != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the counts streams closed: %d encodings kept", api.CountsEncodings(c.handler))
		}
		time.Sleep(5 * time.Millisecond)
	}
	var ids []string
	for range 6 { // 25 events, 10 s windows, 3 keys: 6 windows closed
		ev := results.next(t)
		var r api.SinkResult
		if err := json.Unmarshal([]byte(ev.data), &r); err != nil || ev.name != "result" || ev.id != fmt.Sprint(r.ID) {
			t.Fatalf("result event %+v: %v", ev, err)
		}
		ids = append(ids, ev.id)
	}
	resumed := openStream(t, c, "/api/scenarios/s/sinks/out/results/stream?after=1", ids[3])
	if ev := resumed.next(t); ev.id != ids[4] {
		t.Errorf("resumed after %s with %s, want %s", ids[3], ev.id, ids[4])
	}
}

type sseEvent struct{ id, name, data string }

type sseStream struct {
	events chan sseEvent
	close  func() // ends the stream (its request's context)
}

// openStream reads a server-sent event stream until t ends.
func openStream(t *testing.T, c *client, path, lastEventID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{events: make(chan sseEvent, 100), close: cancel}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return s
}

func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10 s")
		return sseEvent{}
	}
}

// fileCountGraph is countGraph with a file sink writing to path.
func fileCountGraph(t *testing.T, path string) string {
	return replace(t, countGraph("10s"), `{"typ": "collect", "parameters": [`,
		`{"typ": "file", "parameters": [{"name": "path", "value": "`+path+`"},`)
}

// The deployment runtime's guards through the API: a file shared with another scenario's
// running deployment (422 sink-path-in-use), a directory as a file sink's path (422), events
// the engine cannot decode (400 invalid-event naming the event), compressed bodies (415), and
// a failing checkpoint shown in the counts and the deployment status.
func testDeployAndIngestGuards(t *testing.T, c *client, dir string) {
	c.post("/api/scenarios", rawBody("name", quote("a"), "graph", fileCountGraph(t, "shared.txt"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios", rawBody("name", quote("b"), "graph", fileCountGraph(t, "shared.txt"))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios", rawBody("name", quote("dot"), "graph", fileCountGraph(t, "."))).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/a/deploy", nil).ok(t, http.StatusOK, nil)
	p := c.post("/api/scenarios/b/deploy", nil).problem(t, http.StatusUnprocessableEntity, api.CodeSinkPathInUse)
	if !strings.Contains(p.Detail, "shared.txt") || !strings.Contains(p.Detail, `"a"`) {
		t.Errorf("sink-path-in-use detail: %q", p.Detail)
	}
	c.post("/api/scenarios/a/deploy", nil).ok(t, http.StatusOK, nil) // the same scenario again
	p = c.post("/api/scenarios/dot/deploy", nil).problem(t, http.StatusUnprocessableEntity, api.CodeInvalidScenario)
	if len(p.Problems) != 1 || p.Problems[0].Code != "invalid-path" {
		t.Errorf("a directory as the path: %s", mustJSON(p))
	}

	path := eventsPath("a", "in")
	p = c.post(path, `[{"ts": 1}, {"amount": 1e400}]`).problem(t, http.StatusBadRequest, api.CodeInvalidEvent)
	if !strings.Contains(p.Detail, "event 2") {
		t.Errorf("out-of-range number: %q", p.Detail)
	}
	deep := strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000)
	p = c.post(path, `[`+deep+`]`).problem(t, http.StatusBadRequest, api.CodeInvalidEvent)
	if !strings.Contains(p.Detail, "event 1") {
		t.Errorf("deep nesting: %q", p.Detail)
	}
	for _, enc := range []string{"gzip", "deflate, identity"} {
		c.send(request{Method: http.MethodPost, Path: path, Body: string(events(0, 1)[0]), ContentType: "application/json",
			Header: map[string]string{"Content-Encoding": enc}}).problem(t, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
	}
	c.send(request{Method: http.MethodPost, Path: path, Body: string(events(0, 1)[0]), ContentType: "application/json",
		Header: map[string]string{"Content-Encoding": "identity"}}).ok(t, http.StatusAccepted, nil)
	waitCounts(t, c, "a", committed(1))

	// The sink's file becomes a directory: the checkpoint error shows until it is fixed.
	file := filepath.Join(dir, "shared.txt")
	_ = os.Remove(file)
	if err := os.Mkdir(file, 0o750); err != nil {
		t.Fatal(err)
	}
	postEvents(c, "a", "in", "", events(1, 40)).ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, "a", func(lc api.LiveCounts) bool { return lc.CheckpointFailures > 0 })
	if !strings.Contains(lc.CheckpointError, "shared.txt") || lc.CheckpointErrorAt == nil {
		t.Errorf("counts while checkpoints fail: %s", mustJSON(lc))
	}
	var st api.ScenarioDeployment
	c.get("/api/scenarios/a/deployment").ok(t, http.StatusOK, &st)
	if st.Status != "RUNNING" || !strings.Contains(st.CheckpointError, "shared.txt") {
		t.Errorf("status while checkpoints fail: %s", mustJSON(st))
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	lc = waitCounts(t, c, "a", committed(41))
	if lc.CheckpointError != "" || lc.CheckpointFailures != 0 {
		t.Errorf("counts after a successful checkpoint: %s", mustJSON(lc))
	}
}

// With --max-deployments 2: a third scenario's deploy is refused 409 too-many-deployments and
// runs nothing; a new deploy of a running one replaces it; once one is canceled, the third
// deploys.
func testMaxDeployments(t *testing.T, c *client) {
	for _, name := range []string{"a", "b", "c"} {
		c.post("/api/scenarios", rawBody("name", quote(name), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	}
	c.post("/api/scenarios/a/deploy", nil).ok(t, http.StatusOK, nil)
	c.post("/api/scenarios/b/deploy", nil).ok(t, http.StatusOK, nil)
	p := c.post("/api/scenarios/c/deploy", nil).problem(t, http.StatusConflict, api.CodeTooManyDeployments)
	if !strings.Contains(p.Detail, "runs 2 scenarios, and its most is 2") || !strings.Contains(p.Detail, "--max-deployments") {
		t.Errorf("refused with %q", p.Detail)
	}
	var st api.ScenarioDeployment
	c.get("/api/scenarios/c/deployment").ok(t, http.StatusOK, &st)
	if st.Status != "NOT_DEPLOYED" {
		t.Errorf("c after the refused deploy: %s", mustJSON(st))
	}
	var again api.Deployment
	c.post("/api/scenarios/a/deploy", rawBody("comment", quote("again"))).ok(t, http.StatusOK, &again)
	if again.Status != "RUNNING" || again.Comment != "again" {
		t.Errorf("a deployed again: %s", mustJSON(again))
	}
	c.post("/api/scenarios/b/cancel", nil).ok(t, http.StatusOK, nil)
	c.post("/api/scenarios/c/deploy", nil).ok(t, http.StatusOK, nil)
	c.post("/api/scenarios/b/deploy", nil).problem(t, http.StatusConflict, api.CodeTooManyDeployments)
}

// What a deploy would refuse of a graph without the outside world is a validation error on
// its node and field, so that the designer shows it before a deploy (found by a new user: a
// file sink of "../../evil.ndjson" validated, and the deploy then answered 422); a test run of
// the graph still runs (it writes no file), and a server without deployments does not look.
func TestValidationShowsServerProblems(t *testing.T) {
	st := sqliteStore(t)
	c := newDeployClient(t, st)
	bad := replace(t, paymentsGraph(t), `"large-payments.jsonl"`, `"../../evil.jsonl"`)
	var val api.ValidationResult
	c.post("/api/validation", rawBody("graph", bad)).ok(t, http.StatusOK, &val)
	if val.Valid || len(val.Errors) != 1 || val.Errors[0].NodeID != "log" || val.Errors[0].Field != "path" || val.Errors[0].Code != "invalid-path" {
		t.Errorf("validation of a file sink leading out: %s", mustJSON(val))
	}
	var nv api.NodeValidationResult
	c.post("/api/validation/node", rawBody("graph", bad, "nodeId", quote("log"))).ok(t, http.StatusOK, &nv)
	if nv.Valid || len(nv.Errors) != 1 || nv.Errors[0].Code != "invalid-path" {
		t.Errorf("node validation of the sink: %s", mustJSON(nv))
	}
	c.post("/api/scenarios", rawBody("name", quote("out of bounds"), "graph", bad)).ok(t, http.StatusCreated, nil)
	c.get("/api/scenarios/out%20of%20bounds/validation").ok(t, http.StatusOK, &val)
	if val.Valid || len(val.Errors) != 1 || val.Errors[0].Code != "invalid-path" {
		t.Errorf("validation of the saved version: %s", mustJSON(val))
	}
	c.post("/api/test", rawBody("graph", bad, "records", quote(`{"card":"A","amount":2000,"time":"2024-05-01T10:00:00Z"}`))).ok(t, http.StatusOK, nil)
	c.post("/api/validation", rawBody("graph", paymentsGraph(t))).ok(t, http.StatusOK, &val)
	if !val.Valid {
		t.Errorf("validation of the graph with its own path: %s", mustJSON(val))
	}
	newClient(t, st).post("/api/validation", rawBody("graph", bad)).ok(t, http.StatusOK, &val)
	if !val.Valid {
		t.Errorf("validation without deployments: %s", mustJSON(val))
	}

	// A Kafka source on a server without brokers (found by a new user: the designer said
	// "valid" and offered to deploy it; the deploy then answered 422).
	kafka := replace(t, paymentsGraph(t), `"typ": "http", "parameters": [`, `"typ": "kafka", "parameters": [{"name": "topic", "value": "payments"},`)
	c.post("/api/validation", rawBody("graph", kafka)).ok(t, http.StatusOK, &val)
	if val.Valid || len(val.Errors) != 1 || val.Errors[0].NodeID != "payments" || val.Errors[0].Field != "ref.typ" || val.Errors[0].Code != "kafka-not-configured" {
		t.Errorf("validation of a Kafka source without brokers: %s", mustJSON(val))
	}
}
