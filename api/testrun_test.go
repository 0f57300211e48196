package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
)

// flightsExample is what testFlightsExample checks, worked out independently of the server:
// the number of results is the row count of the PostgreSQL oracle for the example
// (examples/sql/flights-per-origin-hourly.sql, run by examples/oracle_test.go).
const (
	flightsCount       = 20_000
	flightsHourResults = 17_473
)

// testFlightsExample tests the flights example (one row per origin airport and hour) with
// all 20,000 flights over HTTP, on a server started to take that many records per test
// (--test-max-records 20000; the default is 10,000), and logs how long it took.
func testFlightsExample(t *testing.T, c *client) {
	const name = "flights per origin"
	c.post("/api/scenarios/"+pathName(name)+"/import", readRepoFile(t, "examples/flights-per-origin-hourly.json")).ok(t, http.StatusCreated, nil)
	records := readRepoFile(t, "testdata/flights-20k.ndjson")
	big := c.withConfig(func(cfg *api.Config) { cfg.TestMaxRecords = flightsCount })

	start := time.Now()
	var res api.TestResult
	big.post("/api/scenarios/"+pathName(name)+"/test", rawBody("records", quote(records))).ok(t, http.StatusOK, &res)
	t.Logf("test run of the flights example on %d flights over HTTP: %v round trip, %.1f ms on the server",
		res.Records, time.Since(start).Round(time.Millisecond), res.ElapsedMs)

	if res.Records != flightsCount || res.TotalErrors != 0 || len(res.Errors) != 0 || res.ElapsedMs <= 0 {
		t.Errorf("records %d, errors %d %v, elapsed %v ms", res.Records, res.TotalErrors, res.Errors, res.ElapsedMs)
	}
	const agg = "per origin per hour"
	wantCounts := map[string]api.TestCounts{
		"flights": {In: flightsCount, Out: flightsCount},
		agg:       {In: flightsCount, Out: flightsHourResults},
		"out":     {In: flightsHourResults, Out: flightsHourResults},
	}
	for id, want := range wantCounts {
		n, ok := res.Nodes[id]
		if !ok {
			t.Errorf("no node %q in %v", id, keysOf(res.Nodes))
			continue
		}
		if n.Counts != want {
			t.Errorf("node %q counts %+v, want %+v", id, n.Counts, want)
		}
		// Each node lists the default 100 records of the many it saw.
		if want := max(want.In, want.Out); n.TotalRecords != want || !n.Truncated || len(n.Records) != api.DefaultMaxRecordsPerNode {
			t.Errorf("node %q: %d of %d records listed (truncated %v), want %d of %d", id, len(n.Records), n.TotalRecords, n.Truncated, api.DefaultMaxRecordsPerNode, want)
		}
	}
	if len(res.Nodes) != len(wantCounts) {
		t.Errorf("nodes %v", keysOf(res.Nodes))
	}
	w := res.WindowResults[agg]
	if w.Total != flightsHourResults || !w.Truncated || len(w.Results) != api.DefaultMaxRecordsPerNode {
		t.Errorf("window results: %d of %d listed (truncated %v)", len(w.Results), w.Total, w.Truncated)
	}
	s := res.SinkOutputs["out"]
	if s.Total != flightsHourResults || !s.Truncated || len(s.Outputs) != api.DefaultMaxRecordsPerNode {
		t.Errorf("sink outputs: %d of %d listed (truncated %v)", len(s.Outputs), s.Total, s.Truncated)
	}

	// By hand, from the first lines of the file: the first flight (line 1: DTW at
	// 2001/01/01 00:47, delay 66) is alone in DTW's hour [00:00, 01:00); the second (line 2,
	// 01:10) moves the watermark to 01:09 (60 s out of order), which closes that hour.
	// 2001-01-01T00:00:00Z is 978307200000 ms.
	const hour0 = 978307200000
	if len(w.Results) > 0 {
		r := w.Results[0]
		got := fmt.Sprintf("line %d, time %d, key %s, window %s, output %s", r.Line, r.EventTime, r.Key, r.Window, r.Output)
		want := fmt.Sprintf(`line 2, time %d, key ["DTW"], window {"start":%d,"end":%d}, output {"flights":1,"avgDelay":66.0,"maxDelay":66,"delayed":1}`,
			hour0+3_600_000-1, hour0, hour0+3_600_000)
		if got != want {
			t.Errorf("first window result:\n%s\nwant\n%s", got, want)
		}
	}
	if len(s.Outputs) > 0 {
		want := fmt.Sprintf(`{"origin":"DTW","windowStart":%d,"windowEnd":%d,"flights":1,"avgDelay":66.0,"maxDelay":66,"delayed":1}`, hour0, hour0+3_600_000)
		if o := s.Outputs[0]; string(o.Value) != want || o.Line != 2 {
			t.Errorf("first output at line %d: %s, want line 2: %s", o.Line, o.Value, want)
		}
	}
	// The source shows each flight with its timestamp expression's value (epoch ms).
	if r := res.Nodes["flights"].Records[0]; r.Line != 1 || r.EventTime != hour0+47*60_000 ||
		string(r.Variables["input"]) != `{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}` ||
		string(r.Expressions["timestamp"].Value) != fmt.Sprint(hour0+47*60_000) {
		t.Errorf("first record of the source: %s", mustJSON(r))
	}
	// The aggregate shows each flight's key and inputs.
	if r := res.Nodes[agg].Records[0]; string(r.Expressions["groupBy[0]"].Value) != `"DTW"` ||
		string(r.Expressions["aggregations[1].aggregateBy"].Value) != "66" || string(r.Expressions["aggregations[3].aggregateBy"].Value) != "true" {
		t.Errorf("first record of the aggregate: %s", mustJSON(r))
	}

	// The same server refuses one record more than it takes; the first server (default
	// limit) refuses the file.
	big.post("/api/scenarios/"+pathName(name)+"/test", rawBody("records", quote(records+"{}\n"))).problem(t, http.StatusRequestEntityTooLarge, api.CodeTooManyRecords)
	c.post("/api/scenarios/"+pathName(name)+"/test", rawBody("records", quote(records))).problem(t, http.StatusRequestEntityTooLarge, api.CodeTooManyRecords)
}

// unannounced hides a body's length, so that it is sent chunked.
func unannounced(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }

func pathName(name string) string { return strings.ReplaceAll(name, " ", "%20") }

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// paymentRecords are test records for the payments graph (testdata/payments.json, whose
// filter passes amounts over 1000, then counts per card over a sliding hour, alerts from 3
// payments on and logs the others). Line 2 is not JSON, line 3 lacks its time, line 4 has
// a string amount, line 6 is blank, line 9 is late.
const paymentRecords = `{"card":"A","amount":1500,"time":"2024-05-01T10:00:00Z"}
{"card": "A", "amount":
{"card":"B","amount":2000}
{"card":"A","amount":"ten","time":"2024-05-01T10:01:00Z"}
{"card":"A","amount":50,"time":"2024-05-01T10:02:00Z"}

{"card":"A","amount":3000,"time":"2024-05-01T10:03:00Z"}
{"card":"A","amount":1200,"time":"2024-05-01T10:04:00Z"}
{"card":"A","amount":5000,"time":"2024-05-01T10:00:00Z"}
`

// testTestRuns: test runs of unsaved and saved graphs show per node counts, records with
// their variables and expression values, window results, sink outputs, and the per-event
// errors with node, field and line; two-source graphs take {sourceId, record, timestamp}
// lines; x-ndjson bodies; caps; graphs with errors.
func testTestRuns(t *testing.T, c *client) {
	// 2024-05-01T10:00:00Z is 1714557600000 ms; the payments of lines 1, 7, 8 are at
	// minutes 0, 3, 4 of that hour.
	const t0 = 1714557600000
	var res api.TestResult
	c.post("/api/test?maxRecordsPerNode=2", rawBody("graph", paymentsGraph(t), "records", quote(paymentRecords))).ok(t, http.StatusOK, &res)

	// Errors, by hand: line 2 is not JSON and line 3 has no time (both fail at the source),
	// line 4's "ten" > 1000 fails in the filter.
	var errs []string
	for _, e := range res.Errors {
		errs = append(errs, fmt.Sprintf("%d %s %s", e.Line, e.NodeID, e.Field))
		if e.Message == "" {
			t.Errorf("error without message: %+v", e)
		}
	}
	if want := []string{"2 payments ", "3 payments timestamp", "4 large expression"}; !slices.Equal(errs, want) || res.TotalErrors != 3 || res.ErrorsTruncated {
		t.Errorf("errors %q (total %d), want %q; %s", errs, res.TotalErrors, want, mustJSON(res.Errors))
	}
	if m := res.Errors[0].Message; !strings.Contains(m, "JSON") {
		t.Errorf("the malformed line's error does not say JSON: %q", m)
	}
	if m := res.Errors[2].Message; !strings.Contains(m, "string") {
		t.Errorf("the wrong type's error does not name the type: %q", m)
	}

	// Counts, by hand: 8 records (the blank line 6 is none); 6 reach the filter, which
	// passes 4 (1500, 3000, 1200 and 5000) and sends 50 to the dead end. The sliding hour
	// drops the payment of line 9 (10:00, below the watermark 10:04 - 30 s) as late, and
	// enriches the others: counts 1, 2, 3; the third alerts, the first two are logged.
	wantCounts := map[string]api.TestCounts{
		"payments":  {In: 8, Out: 6, Errors: 2},
		"large":     {In: 6, Out: 5, Errors: 1},
		"last hour": {In: 4, Out: 3, Late: 1},
		"summary":   {In: 3, Out: 3},
		"how many":  {In: 3, Out: 3},
		"alert":     {In: 1, Out: 1},
		"log":       {In: 2, Out: 2},
		"small":     {In: 1},
	}
	for id, want := range wantCounts {
		if got := res.Nodes[id].Counts; got != want {
			t.Errorf("node %q counts %+v, want %+v", id, got, want)
		}
	}
	if res.Records != 8 || len(res.Nodes) != len(wantCounts) {
		t.Errorf("%d records, nodes %v", res.Records, keysOf(res.Nodes))
	}

	// Records, capped at 2 per node, with their lines, variables and expressions.
	large := res.Nodes["large"]
	if large.TotalRecords != 6 || !large.Truncated || len(large.Records) != 2 {
		t.Fatalf("filter records: %s", mustJSON(large))
	}
	r := large.Records[1] // line 4, whose expression fails
	if r.Line != 4 || r.EventTime != t0+60_000 || string(r.Variables["input"]) != `{"card":"A","amount":"ten","time":"2024-05-01T10:01:00Z"}` ||
		r.Expressions["expression"].Error == "" || r.Expressions["expression"].Value != nil {
		t.Errorf("filter record 2: %s", mustJSON(r))
	}
	if r := large.Records[0]; r.Line != 1 || string(r.Expressions["expression"].Value) != "true" {
		t.Errorf("filter record 1: %s", mustJSON(r))
	}
	if n := res.Nodes["payments"]; n.TotalRecords != 6 || len(n.Records) != 2 || n.Records[1].Line != 4 ||
		string(n.Records[0].Expressions["timestamp"].Value) != fmt.Sprint(t0) {
		t.Errorf("source records: %s", mustJSON(n))
	}
	if n := res.Nodes["summary"]; len(n.Records) != 2 || n.Records[1].Line != 7 ||
		string(n.Records[1].Variables["hour"]) != `{"count":2,"total":4500,"p95":2925.0}` ||
		string(n.Records[1].Variables["key"]) != `["A"]` || string(n.Records[1].Expressions["fields[2].expression"].Value) != "4500" {
		t.Errorf("summary records: %s", mustJSON(n))
	}
	if n := res.Nodes["how many"]; len(n.Records) != 2 || string(n.Records[0].Expressions["edges[5].edgeType.condition"].Value) != "false" {
		t.Errorf("switch records: %s", mustJSON(n))
	}
	if n := res.Nodes["small"]; n.TotalRecords != 1 || n.Truncated || len(n.Records) != 1 || n.Records[0].Line != 5 {
		t.Errorf("dead-end records: %s", mustJSON(n))
	}

	// Window results of the sliding hour: the enriched events (no #window). The p95 of 1500
	// and 3000 interpolates at rank 0.95: 1500 + 0.95 * 1500 = 2925.
	w := res.WindowResults["last hour"]
	if w.Total != 3 || !w.Truncated || len(w.Results) != 2 || w.Results[1].Line != 7 || w.Results[1].EventTime != t0+180_000 ||
		string(w.Results[1].Key) != `["A"]` || w.Results[1].Window != nil || string(w.Results[1].Output) != `{"count":2,"total":4500,"p95":2925.0}` {
		t.Errorf("window results: %s", mustJSON(w))
	}
	// Sink outputs: the third payment alerts (1500 + 3000 + 1200 = 5700); the first two are
	// logged. Dead ends have no outputs.
	if s := res.SinkOutputs["alert"]; s.Total != 1 || s.Truncated || len(s.Outputs) != 1 || s.Outputs[0].Line != 8 ||
		string(s.Outputs[0].Value) != `{"card":"A","payments":3,"total":5700}` {
		t.Errorf("alert: %s", mustJSON(s))
	}
	if s := res.SinkOutputs["log"]; s.Total != 2 || len(s.Outputs) != 2 || string(s.Outputs[1].Value) != `{"card":"A","amount":3000}` {
		t.Errorf("log: %s", mustJSON(s))
	}
	if _, ok := res.SinkOutputs["small"]; ok || len(res.SinkOutputs) != 2 {
		t.Errorf("sinks %v", keysOf(res.SinkOutputs))
	}

	// A saved version, given its records as application/x-ndjson, answers the same.
	c.post("/api/scenarios", rawBody("name", quote("payments"), "graph", paymentsGraph(t))).ok(t, http.StatusCreated, nil)
	var saved api.TestResult
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios/payments/test?version=1&maxRecordsPerNode=2", Body: paymentRecords, ContentType: "application/x-ndjson"}).ok(t, http.StatusOK, &saved)
	saved.ElapsedMs, res.ElapsedMs = 0, 0
	if mustJSON(saved) != mustJSON(res) {
		t.Errorf("saved, x-ndjson:\n%s\nunsaved, JSON:\n%s", mustJSON(saved), mustJSON(res))
	}
	// And as JSON, listing one record per node.
	var one api.TestResult
	c.post("/api/scenarios/payments/test?maxRecordsPerNode=1", rawBody("records", quote(paymentRecords))).ok(t, http.StatusOK, &one)
	if n := one.Nodes["large"]; n.Counts != wantCounts["large"] || len(n.Records) != 1 || n.TotalRecords != 6 || !n.Truncated {
		t.Errorf("with maxRecordsPerNode=1: %s", mustJSON(n))
	}
	if s := one.SinkOutputs["log"]; s.Total != 2 || len(s.Outputs) != 1 || !s.Truncated {
		t.Errorf("with maxRecordsPerNode=1, log: %s", mustJSON(s))
	}

	// Two sources: lines {sourceId, record, timestamp}. By hand, with no out-of-orderness:
	// the aggregate's watermark is the lower of the two sources'; line 6 (ATM at 62 s, its
	// timestamp given) lifts it to 61 s, closing u1's first minute (10 + 100, both
	// channels); the end of the records closes the second minute of u1 and u2.
	twoSources, err := readTestdata("two-sources.json")
	if err != nil {
		t.Fatal(err)
	}
	lines := `{"sourceId": "cards", "record": {"user": "u1", "amount": 10, "t": 1000}}
{"sourceId": "atm", "record": {"user": "u1", "amount": 100}, "timestamp": 2000}
{"sourceId": "cards", "record": {"user": "u2", "amount": 5, "t": 61000}}
{"sourceId": "nowhere", "record": {}}
{"user": "u1"}
{"sourceId": "atm", "record": {"user": "u1", "amount": 1}, "timestamp": 62000}
`
	res = api.TestResult{}
	c.post("/api/test", rawBody("graph", twoSources, "records", quote(lines))).ok(t, http.StatusOK, &res)
	var outs []string
	for _, o := range res.SinkOutputs["out"].Outputs {
		outs = append(outs, fmt.Sprintf("line %d: %s", o.Line, o.Value))
	}
	slices.Sort(outs[1:]) // the end of input closes u1's and u2's windows in no set order
	wantOuts := []string{
		`line 6: {"user":"u1","start":0,"n":2,"total":110,"channels":["atm","card"]}`,
		`line 0: {"user":"u1","start":60000,"n":1,"total":1,"channels":["atm"]}`,
		`line 0: {"user":"u2","start":60000,"n":1,"total":5,"channels":["card"]}`,
	}
	if !slices.Equal(outs, wantOuts) {
		t.Errorf("two sources, outputs:\n%s\nwant\n%s", strings.Join(outs, "\n"), strings.Join(wantOuts, "\n"))
	}
	if n := res.Nodes["atm"]; n.Counts.Out != 2 || len(n.Records) != 2 || n.Records[0].Line != 2 || n.Records[0].EventTime != 2000 ||
		string(n.Records[0].Variables["input"]) != `{"user":"u1","amount":100}` {
		t.Errorf("ATM source: %s", mustJSON(n))
	}
	if n := res.Nodes["merge"]; n.Counts != (api.TestCounts{In: 4, Out: 4}) || len(n.Records) != 4 || n.Records[3].Line != 6 {
		t.Errorf("union: %s", mustJSON(n))
	}
	errs = nil
	for _, e := range res.Errors {
		errs = append(errs, fmt.Sprintf("%d %s", e.Line, e.Message))
	}
	if len(errs) != 2 || !strings.HasPrefix(errs[0], `4 unknown source "nowhere"`) || !strings.HasPrefix(errs[1], "5 ") || !strings.Contains(errs[1], "sourceId") {
		t.Errorf("two sources, errors %q", errs)
	}

	// A graph with validation errors does not run: 422 with its validation.
	bad := replace(t, paymentsGraph(t), "#input.amount > 1000", "#input.amout > 1000")
	p := c.post("/api/test", rawBody("graph", bad, "records", quote(paymentRecords))).problem(t, http.StatusUnprocessableEntity, api.CodeScenarioHasErrors)
	if p.Validation == nil || p.Validation.Valid || len(p.Validation.Errors) == 0 || p.Validation.Errors[0].NodeID != "large" || p.Validation.Errors[0].Field != "expression" {
		t.Errorf("graph with errors: %s", mustJSON(p))
	}
	p = c.post("/api/test", rawBody("graph", `{"nodes": [{"id": "x", "type": "Filtre"}], "edges": []}`, "records", `""`)).problem(t, http.StatusUnprocessableEntity, api.CodeScenarioHasErrors)
	if p.Validation == nil || len(p.Validation.Errors) == 0 || p.Validation.Errors[0].Code != "unknown-node-type" {
		t.Errorf("graph that does not decode: %s", mustJSON(p))
	}
	c.post("/api/scenarios/payments/test?version=2", rawBody("records", `""`)).problem(t, http.StatusNotFound, api.CodeVersionNotFound)

	// No records: every node is listed with zero counts.
	var none api.TestResult
	c.post("/api/test", rawBody("graph", paymentsGraph(t), "records", quote("\n\n"))).ok(t, http.StatusOK, &none)
	if none.Records != 0 || len(none.Nodes) != 8 || none.Nodes["payments"].Counts != (api.TestCounts{}) || none.Errors == nil || none.SinkOutputs["alert"].Outputs == nil {
		t.Errorf("no records: %s", mustJSON(none))
	}
}

// testTestLimits: the record and body limits of test runs, default and configured, answer
// 413 with their codes, never a silent cut.
func testTestLimits(t *testing.T, c *client) {
	record := `{"card":"A","amount":1500,"time":"2024-05-01T10:00:00Z"}` + "\n"
	atLimit := strings.Repeat(record, api.DefaultTestMaxRecords) + "\n \n"
	var res api.TestResult
	c.post("/api/test?maxRecordsPerNode=1", rawBody("graph", paymentsGraph(t), "records", quote(atLimit))).ok(t, http.StatusOK, &res)
	if res.Records != api.DefaultTestMaxRecords || res.Nodes["payments"].Counts.In != api.DefaultTestMaxRecords {
		t.Errorf("%d records read, want %d", res.Records, api.DefaultTestMaxRecords)
	}
	over := atLimit + record
	p := c.post("/api/test", rawBody("graph", paymentsGraph(t), "records", quote(over))).problem(t, http.StatusRequestEntityTooLarge, api.CodeTooManyRecords)
	if !strings.Contains(p.Detail, "10001") || !strings.Contains(p.Detail, "10000") {
		t.Errorf("detail %q does not give the count and the limit", p.Detail)
	}
	c.post("/api/scenarios", rawBody("name", quote("payments"), "graph", paymentsGraph(t))).ok(t, http.StatusCreated, nil)
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios/payments/test", Body: over, ContentType: "application/x-ndjson"}).problem(t, http.StatusRequestEntityTooLarge, api.CodeTooManyRecords)

	// Configured: 3 records, test bodies up to 8 KiB while other bodies stay at 4 KiB.
	const testBytes, otherBytes = 8 << 10, 4 << 10
	small := c.withConfig(func(cfg *api.Config) {
		cfg.TestMaxRecords, cfg.TestMaxBytes, cfg.MaxBodyBytes = 3, testBytes, otherBytes
	})
	small.post("/api/scenarios/payments/test", rawBody("records", quote(strings.Repeat(record, 3)))).ok(t, http.StatusOK, nil)
	small.post("/api/scenarios/payments/test", rawBody("records", quote(strings.Repeat(record, 4)))).problem(t, http.StatusRequestEntityTooLarge, api.CodeTooManyRecords)
	// A body between the two limits: a test takes it, validation does not.
	pad := strings.Repeat(" ", otherBytes)
	small.post("/api/test", rawBody("graph", paymentsGraph(t)+pad, "records", quote(record))).ok(t, http.StatusOK, nil)
	small.post("/api/validation", rawBody("graph", paymentsGraph(t)+pad)).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	// Over the test limit, announced, chunked or as x-ndjson.
	huge := rawBody("records", quote(record+strings.Repeat(" ", testBytes)))
	p = small.post("/api/scenarios/payments/test", huge).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	if !strings.Contains(p.Detail, "8192 bytes") {
		t.Errorf("detail %q does not give the limit", p.Detail)
	}
	small.post("/api/scenarios/payments/test", unannounced(huge)).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	small.send(request{Method: http.MethodPost, Path: "/api/scenarios/payments/test", Body: record + strings.Repeat(" ", testBytes), ContentType: "application/x-ndjson"}).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	small.send(request{Method: http.MethodPost, Path: "/api/scenarios/payments/test", Body: unannounced(record + strings.Repeat(" ", testBytes)), ContentType: "application/x-ndjson"}).problem(t, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge)
	small.send(request{Method: http.MethodPost, Path: "/api/scenarios/payments/test", Body: unannounced(strings.Repeat(record, 3)), ContentType: "application/x-ndjson"}).ok(t, http.StatusOK, nil)

	// Lists stop at 32 MiB of listed JSON, saying so: 12 payments of 1 MiB each, listed with
	// their #input at the source, the filter, the aggregate and the three nodes below it,
	// are 72 MiB.
	mib := strings.Repeat("x", 1<<20)
	var padded strings.Builder
	for i := range 12 {
		fmt.Fprintf(&padded, `{"card":"A","amount":%d,"time":"2024-05-01T10:%02d:00Z","pad":"%s"}`+"\n", 2000+i, i, mib)
	}
	roomy := c.withConfig(func(cfg *api.Config) { cfg.TestMaxBytes = 16 << 20 })
	var cut api.TestResult
	roomy.post("/api/test", rawBody("graph", paymentsGraph(t), "records", quote(padded.String()))).ok(t, http.StatusOK, &cut)
	listed := 0
	for id, n := range cut.Nodes {
		listed += len(n.Records)
		if n.Truncated != (int64(len(n.Records)) < n.TotalRecords) {
			t.Errorf("%s: %d of %d listed, truncated %v", id, len(n.Records), n.TotalRecords, n.Truncated)
		}
	}
	for _, id := range []string{"payments", "summary"} {
		if n := cut.Nodes[id]; n.TotalRecords != 12 || !n.Truncated || len(n.Records) == 0 {
			t.Errorf("%s: %d of %d listed", id, len(n.Records), n.TotalRecords)
		}
	}
	if !cut.ListsCut || listed != 32 || cut.Nodes["last hour"].Counts.Out != 12 || cut.SinkOutputs["alert"].Total != 10 {
		t.Errorf("listsCut %v with %d records of 1 MiB listed", cut.ListsCut, listed)
	}

	// The listing stops within a record: a VariableBuilder of ten 3,000,000-byte fields lists
	// them (30,000,020 bytes of JSON, with the quotes), then the sink's context would list #r,
	// 30 MB more: it is left out, and so is the sink's value. Before, the bound was looked
	// at before each record only, and this answer was 60 MB (a hundred fields made 320 MB).
	wideRecord := wideRecordGraph(10, 3_000_000, `{"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#r"}}]}`)
	answer := c.post("/api/test", rawBody("graph", wideRecord, "records", quote(`{"t": 1}`)))
	var wideCut api.TestResult
	answer.ok(t, http.StatusOK, &wideCut)
	if len(answer.Body) > 32<<20+64<<10 {
		t.Errorf("an answer of %d bytes, more than the 32 MiB listed and 64 KiB", len(answer.Body))
	}
	recs, outs := wideCut.Nodes["rec"].Records, wideCut.Nodes["out"].Records
	if len(recs) != 1 || len(recs[0].Expressions) != 10 || len(outs) != 1 || outs[0].Variables["r"] != nil ||
		len(outs[0].Expressions) != 0 || len(wideCut.SinkOutputs["out"].Outputs) != 0 || !wideCut.ListsCut {
		t.Errorf("listed: rec %d records, out %d; want rec's ten fields, out's record without #r, no output, lists cut", len(recs), len(outs))
	}

	// A run longer than the time limit is stopped: each record fans out into 100,000
	// contexts (the most the for-each nodes may send for one record, engine.MaxForEachEvents).
	fanOut := `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}},
		{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "1..100000"}}]},
		{"id": "end", "type": "Sink", "ref": {"typ": "dead-end"}}
	], "edges": [{"from": "in", "to": "each", "edgeType": null}, {"from": "each", "to": "end", "edgeType": null}]}`
	// Each of them through a variable of 100,000 steps: 10^10 steps a record, which no machine
	// gets through in a test's time, so an answer at all shows the run was stopped (no
	// wall-clock bound to trip under -race).
	fanOutTwice := strings.Replace(fanOut, `{"from": "each", "to": "end", "edgeType": null}`,
		`{"from": "each", "to": "again", "edgeType": null}, {"from": "again", "to": "end", "edgeType": null}`, 1)
	fanOutTwice = strings.Replace(fanOutTwice, `{"id": "end",`, `{"id": "again", "type": "Variable", "varName": "heavy",
			"value": {"language": "expr", "expression": "count(1..100000, # > #item)"}},
		{"id": "end",`, 1)
	const limit = 200 * time.Millisecond
	quick := c.withConfig(func(cfg *api.Config) { cfg.TestTimeout = limit })
	p = quick.post("/api/test", rawBody("graph", fanOutTwice, "records", quote(`{"t": 1}`))).problem(t, http.StatusUnprocessableEntity, api.CodeTestTimeout)
	if !strings.Contains(p.Detail, limit.String()) {
		t.Errorf("detail %q does not give the limit", p.Detail)
	}
	// A run whose window state passes the server's limit is stopped: a sliding window of
	// 10,000 one-second slices, each record a new key in a slice of its own. The slice of
	// record i is made for at least i keys, 8 bytes a key (its count, which Count reads), so
	// records 1..n hold at least 4·n² bytes: 1 MiB by n = 512 of the 2,000 records sent. The
	// state is looked at every 16 records at the most (engine.Options.MaxStateBytes), and 32 records
	// hold far less than 1 MiB (32 slices of at most 64 keys).
	wide := `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}},
		{"id": "w", "type": "CustomNode", "nodeType": "aggregate-sliding", "outputVar": "agg", "parameters": [
			{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
			{"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
			{"name": "windowLength", "value": "10000s"}, {"name": "precision", "value": "1s"}]},
		{"id": "end", "type": "Sink", "ref": {"typ": "dead-end"}}
	], "edges": [{"from": "in", "to": "w", "edgeType": null}, {"from": "w", "to": "end", "edgeType": null}]}`
	var records strings.Builder
	for i := range 2_000 {
		fmt.Fprintf(&records, "{\"t\": %d, \"k\": \"k%d\"}\n", i*1000, i)
	}
	lowState := c.withConfig(func(cfg *api.Config) { cfg.TestMaxState = 1 << 20 })
	p = lowState.post("/api/test", rawBody("graph", wide, "records", quote(records.String()))).problem(t, http.StatusUnprocessableEntity, api.CodeTestStateTooLarge)
	var stoppedAt int
	if _, err := fmt.Sscanf(p.Detail, "the test run was stopped after %d records", &stoppedAt); err != nil || stoppedAt >= 2_000 || stoppedAt < 32 ||
		!strings.Contains(p.Detail, "passed 1048576 bytes") || !strings.Contains(p.Detail, `node "w"`) {
		t.Errorf("detail %q (stopped after %d records)", p.Detail, stoppedAt)
	}
	// Under the default limit (64 MiB) the same records run.
	var wideRes api.TestResult
	c.post("/api/test", rawBody("graph", wide, "records", quote(records.String()))).ok(t, http.StatusOK, &wideRes)
	if n := wideRes.Nodes["w"].Counts.In; n != 2_000 {
		t.Errorf("the window took %d records, want 2,000", n)
	}

	// The same graph on one record runs (100,000 contexts), under the default limit.
	var res1 api.TestResult
	c.post("/api/test", rawBody("graph", fanOut, "records", quote(`{"t": 1}`))).ok(t, http.StatusOK, &res1)
	if n := res1.Nodes["end"]; n.TotalRecords != 100_000 || len(n.Records) != api.DefaultMaxRecordsPerNode || string(n.Records[99].Variables["item"]) != "100" {
		t.Errorf("fan-out: %d records, %d listed", n.TotalRecords, len(n.Records))
	}
}

// testNodeTest: one node run on given variables shows its expressions and what leaves it,
// for every kind of node.
func testNodeTest(t *testing.T, c *client) {
	payments := paymentsGraph(t)
	kinds, err := readTestdata("kinds.json")
	if err != nil {
		t.Fatal(err)
	}
	input := func(amount string) string {
		return `{"input": {"card": "A", "amount": ` + amount + `, "time": "2024-05-01T10:00:00Z"}}`
	}
	run := func(graph, node, vars string) api.NodeTestResult {
		t.Helper()
		var res api.NodeTestResult
		c.post("/api/node-test", rawBody("graph", graph, "nodeId", quote(node), "variables", vars)).ok(t, http.StatusOK, &res)
		if res.NodeID != node || res.Expressions == nil || res.Outputs == nil {
			t.Errorf("node %s: %s", node, mustJSON(res))
		}
		return res
	}
	// outputs summarises the outputs as "edgeType>to variables value key inputs".
	outputs := func(res api.NodeTestResult) string {
		var parts []string
		for _, o := range res.Outputs {
			s := o.EdgeType + ">" + o.To
			if o.From != "" {
				s = o.From + ":" + s
			}
			for _, x := range []any{o.Variables, o.Value, o.Key, o.Inputs} {
				if b, _ := json.Marshal(x); string(b) != "null" {
					s += " " + string(b)
				}
			}
			if o.EventTime != nil {
				s += fmt.Sprintf(" @%d", *o.EventTime)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ")
	}
	expect := func(res api.NodeTestResult, want string) {
		t.Helper()
		if got := outputs(res); got != want || res.Error != "" {
			t.Errorf("node %s: outputs %q (error %q), want %q", res.NodeID, got, res.Error, want)
		}
	}

	// Source: the timestamp of 2024-05-01T10:00:00Z is 1714557600000 ms.
	res := run(payments, "payments", input("1"))
	expect(res, ">large @1714557600000")
	if v := string(res.Expressions["timestamp"].Value); v != "1714557600000" {
		t.Errorf("timestamp %s", v)
	}
	// Filter (amounts over 1000), both ways; the '#' of a variable's name may be given.
	expect(run(payments, "large", input("1000.5")), "FilterTrue>last hour")
	res = run(payments, "large", `{"#input": {"amount": 1000}}`)
	expect(res, "FilterFalse>small")
	if v := string(res.Expressions["expression"].Value); v != "false" {
		t.Errorf("filter expression %s", v)
	}
	// A failing expression stops the context: no output, the error named.
	res = run(payments, "large", input(`"ten"`))
	if len(res.Outputs) != 0 || !strings.HasPrefix(res.Error, "expression: ") || res.Expressions["expression"].Error == "" {
		t.Errorf("filter on a string: %s", mustJSON(res))
	}
	// Aggregate: key and inputs, exact integers kept (Count has no input).
	expect(run(payments, "last hour", input("9223372036854775807")),
		`>summary ["A"] {"count":null,"p95":9223372036854775807,"total":9223372036854775807}`)
	// VariableBuilder, Switch (first condition that holds, else the default), Sink.
	hour := `{"hour": {"count": 3, "total": 4500, "p95": 2925.0}, "key": ["A"]}`
	expect(run(payments, "summary", hour), `>how many {"summary":{"card":"A","payments":3,"total":4500}}`)
	res = run(payments, "how many", `{"hour": {"count": 3}}`)
	expect(res, "NextSwitch>alert")
	if res.Outputs[0].Condition != "edges[5].edgeType.condition" {
		t.Errorf("switch condition %q", res.Outputs[0].Condition)
	}
	expect(run(payments, "how many", `{"hour": {"count": 2}}`), "SwitchDefault>log")
	expect(run(payments, "log", `{"summary": {"card": "A"}, "input": {"amount": -9223372036854775808}}`), `> {"card":"A","amount":-9223372036854775808}`)
	// A variable not given: a field of it is an error, as the expression's own value says,
	// and nothing is written (a record with a null card was, beside that error).
	res = run(payments, "log", `{"input": {"amount": 5}}`)
	if len(res.Outputs) != 0 || !strings.HasPrefix(res.Error, "value: ") || res.Expressions["value"].Error == "" {
		t.Errorf("sink without #summary: %s", mustJSON(res))
	}

	// The other kinds, on the graph of testdata/kinds.json: a switch of two conditions in
	// order, variables, a union with an expression per branch, a split, a for-each.
	expect(run(kinds, "by amount", `{"input": {"amount": 5000}}`), "NextSwitch>big")
	expect(run(kinds, "by amount", `{"input": {"amount": 500}}`), "NextSwitch>medium")
	expect(run(kinds, "by amount", `{"input": {"amount": 5}}`), "SwitchDefault>small")
	expect(run(kinds, "big", `{}`), `>merge {"risk":"high"}`)
	expect(run(kinds, "medium", `{"input": {"amount": 500}}`), `>merge {"risk":{"level":"medium","amount":500}}`)
	// A union runs the expression of the branch named, or of every branch.
	var join api.NodeTestResult
	c.post("/api/node-test", rawBody("graph", kinds, "nodeId", quote("merge"), "branch", quote("small"), "variables", `{"risk": "low"}`)).ok(t, http.StatusOK, &join)
	expect(join, `small:>fan out {"branch":"low!"}`)
	if len(join.Expressions) != 1 {
		t.Errorf("union from one branch shows the expressions %v", keysOf(join.Expressions))
	}
	res = run(kinds, "merge", `{"risk": {"level": "medium"}}`)
	if got := outputs(res); got != `big:>fan out {"branch":"big"}; medium:>fan out {"branch":"medium"}` || !strings.HasPrefix(res.Error, "branchParameters[2].parameters[0].expression: ") {
		t.Errorf("union from every branch: %q, error %q", got, res.Error)
	}
	c.post("/api/node-test", rawBody("graph", kinds, "nodeId", quote("merge"), "branch", quote("nowhere"))).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	c.post("/api/node-test", rawBody("graph", kinds, "nodeId", quote("big"), "branch", quote("big"))).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	expect(run(kinds, "fan out", `{}`), ">print; >each item")
	expect(run(kinds, "each item", `{}`), `>drop {"item":1}; >drop {"item":2}; >drop {"item":3}`)
	expect(run(kinds, "drop", `{}`), "")
	expect(run(kinds, "print", `{"risk": "low", "branch": "small"}`), `> {"risk":"low","branch":"small"}`)

	// Another node's errors do not matter; the node's own do.
	bad := replace(t, payments, "#input.amount > 1000", "#input.amout > 1000")
	expect(run(bad, "summary", hour), `>how many {"summary":{"card":"A","payments":3,"total":4500}}`)
	p := c.post("/api/node-test", rawBody("graph", bad, "nodeId", quote("large"), "variables", input("1"))).problem(t, http.StatusUnprocessableEntity, api.CodeScenarioHasErrors)
	if p.Validation == nil || len(p.Validation.Errors) == 0 || p.Validation.Errors[0].NodeID != "large" {
		t.Errorf("node with errors: %s", mustJSON(p))
	}
	c.post("/api/node-test", rawBody("graph", payments, "nodeId", quote("nowhere"))).problem(t, http.StatusUnprocessableEntity, api.CodeUnknownNode)
	c.post("/api/node-test", rawBody("graph", payments, "nodeId", quote("large"), "variables", `{"input": 1e999}`)).problem(t, http.StatusBadRequest, api.CodeInvalidJSON)

	// A node test holds an event's variables to 64 MiB as a test run does (round 18: it had no
	// bound, and a VariableBuilder of a hundred 16 MiB fields ran the server out of memory):
	// fields of 1,000,000 bytes fail at the 68th, 67,000,000 bytes held and 108,864 left.
	wide := wideRecordGraph(100, 1_000_000, `{"typ": "dead-end"}`)
	var wideRes api.NodeTestResult
	answer := c.post("/api/node-test", rawBody("graph", wide, "nodeId", quote("rec"), "variables", `{"input": {"t": 1}}`))
	answer.ok(t, http.StatusOK, &wideRes)
	if len(wideRes.Outputs) != 0 || !strings.Contains(wideRes.Error, "fields[67].expression") || !strings.Contains(wideRes.Error, "the event's variables hold 67000000 bytes already") {
		t.Errorf("a node test of a hundred 1 MB fields: %d outputs, error %.300q; want none, the 68th field failing", len(wideRes.Outputs), wideRes.Error)
	}
	// Its expressions are listed within 32 MiB of JSON: 33 values of 1,000,002 bytes
	// (33,000,066) fit, the 34th does not; the other 67 say they are not listed. Before, the
	// hundred values were listed whole.
	listed := 0
	for _, x := range wideRes.Expressions {
		if x.Value != nil {
			listed++
		} else if !strings.Contains(x.Error, "not listed") {
			t.Errorf("an expression not listed says %.200q", x.Error)
		}
	}
	if listed != 33 || !wideRes.ListsCut || len(answer.Body) > 32<<20+64<<10 {
		t.Errorf("%d values listed, listsCut %v, an answer of %d bytes; want 33, true, at most 32 MiB and 64 KiB", listed, wideRes.ListsCut, len(answer.Body))
	}
}

// wideRecordGraph is an HTTP source into VariableBuilder "rec" (#r) of n fields f0..f(n-1),
// each a string of size x's, into sink "out" of the given ref.
func wideRecordGraph(n, size int, sinkRef string) string {
	var fields []string
	for i := range n {
		fields = append(fields, fmt.Sprintf(`{"name": "f%d", "expression": {"language": "expr", "expression": "repeat('x', %d)"}}`, i, size))
	}
	return `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}}]}},
		{"id": "rec", "type": "VariableBuilder", "varName": "r", "fields": [` + strings.Join(fields, ",") + `]},
		{"id": "out", "type": "Sink", "ref": ` + sinkRef + `}
	], "edges": [{"from": "in", "to": "rec", "edgeType": null}, {"from": "rec", "to": "out", "edgeType": null}]}`
}

// One node of many slow expressions is stopped at the test time limit, in a test run and in a
// node test (hostile round: a VariableBuilder of 6,500 fields of 27 ms ran 207 s against a
// 30 s limit, the test run's listing evaluating every field before the engine looked at the
// time; a node test had no limit at all). Here 3,000 fields of nearly a million steps each
// are about 90 s of work (more under -race); an answer within 20 s shows they were stopped.
func TestSlowNodeStoppedAtTheTestTimeout(t *testing.T) {
	var fields []string
	for i := range 3000 {
		fields = append(fields, fmt.Sprintf(`{"name": "f%d", "expression": {"language": "expr", "expression": "count(1..999000, # > 0)"}}`, i))
	}
	graph := `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http"}},
		{"id": "rec", "type": "VariableBuilder", "varName": "r", "fields": [` + strings.Join(fields, ",") + `]},
		{"id": "end", "type": "Sink", "ref": {"typ": "dead-end"}}
	], "edges": [{"from": "in", "to": "rec", "edgeType": null}, {"from": "rec", "to": "end", "edgeType": null}]}`
	const limit = 300 * time.Millisecond
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) { cfg.TestTimeout = limit })
	for _, call := range []struct{ path, body string }{
		{"/api/test", rawBody("graph", graph, "records", quote(`{"a": 1}`))},
		{"/api/node-test", rawBody("graph", graph, "nodeId", quote("rec"), "variables", `{"input": {"a": 1}}`)},
	} {
		start := time.Now()
		p := c.post(call.path, call.body).problem(t, http.StatusUnprocessableEntity, api.CodeTestTimeout)
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s: answered after %v", call.path, took)
		}
		if !strings.Contains(p.Detail, limit.String()) {
			t.Errorf("%s: detail %q does not give the limit", call.path, p.Detail)
		}
	}
}

// A test run's listing counts each value's name and its place in the answer, not only its
// JSON (found by a hostile client: 498 Variable nodes of value 1 on 150 records listed 18 MB
// of values in a 167 MB answer, 2 GB of memory). Here 50 Variable nodes in a chain, each
// naming its 1 with 200 bytes, on 150 records: record k lists k variables at node k (#input
// and k-1 names), 1,275 entries of about 205 bytes of JSON a record, 39 MB for 150. Counted
// with their names, the lists stop within 32 MiB and say so; before, the answer was the 39 MB
// with listsCut false.
func TestListingCountsNames(t *testing.T) {
	nodes := []string{`{"id": "in", "type": "Source", "ref": {"typ": "http"}}`}
	edges := []string{}
	prev := "in"
	for i := range 50 {
		id := fmt.Sprintf("v%d", i)
		name := fmt.Sprintf("v%d_%s", i, strings.Repeat("n", 195))
		nodes = append(nodes, fmt.Sprintf(`{"id": %q, "type": "Variable", "varName": %q, "value": {"language": "expr", "expression": "1"}}`, id, name))
		edges = append(edges, fmt.Sprintf(`{"from": %q, "to": %q, "edgeType": null}`, prev, id))
		prev = id
	}
	nodes = append(nodes, `{"id": "end", "type": "Sink", "ref": {"typ": "dead-end"}}`)
	edges = append(edges, fmt.Sprintf(`{"from": %q, "to": "end", "edgeType": null}`, prev))
	graph := `{"nodes": [` + strings.Join(nodes, ",") + `], "edges": [` + strings.Join(edges, ",") + `]}`
	records := strings.Repeat("{}\n", 150)
	c := newClient(t, sqliteStore(t))
	answer := c.post("/api/test?maxRecordsPerNode=1000", rawBody("graph", graph, "records", quote(records)))
	var res api.TestResult
	answer.ok(t, http.StatusOK, &res)
	if !res.ListsCut || len(answer.Body) > 32<<20+64<<10 {
		t.Errorf("an answer of %d bytes, listsCut %v; want at most 32 MiB and 64 KiB, lists cut", len(answer.Body), res.ListsCut)
	}
}

// A node test's listing counts its outputs' strings and names too (found by review: the
// listing of a for-each's 100,000 outputs to a node of a 1,000-byte id, each with a variable
// of a 61-byte name, was a 109,200,069-byte answer, 6.5 MB counted). The expression's value,
// 100,000 ones (200,001 bytes of JSON), is charged with its 8-byte name and 64: 200,073.
// Each output is then charged 128 bytes, its 1,000-byte "to", the name and 64 bytes besides
// the value's 1: 1,254 bytes, so (33,554,432 - 200,073) / 1,254 = 26,598 outputs are listed,
// within 32 MiB, and the lists say they were cut.
func TestNodeTestListingCountsNames(t *testing.T) {
	next := strings.Repeat("n", 1000)
	varName := "v" + strings.Repeat("x", 60)
	graph := fmt.Sprintf(`{"nodes": [
	  {"id": "in", "type": "Source", "ref": {"typ": "http"}},
	  {"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": %q, "parameters": [
	    {"name": "Elements", "expression": {"language": "expr", "expression": "map(1..100000, 1)"}}]},
	  {"id": %q, "type": "Sink", "ref": {"typ": "dead-end"}}
	], "edges": [
	  {"from": "in", "to": "each", "edgeType": null},
	  {"from": "each", "to": %q, "edgeType": null}
	]}`, varName, next, next)
	c := newClient(t, sqliteStore(t))
	answer := c.post("/api/node-test", rawBody("graph", graph, "nodeId", quote("each"), "variables", `{"input": {}}`))
	var res api.NodeTestResult
	answer.ok(t, http.StatusOK, &res)
	if len(answer.Body) > 32<<20+64<<10 || !res.ListsCut || len(res.Outputs) != 26598 {
		t.Errorf("node test answer of %d bytes, listsCut %v, %d outputs; want at most 32 MiB and 64 KiB, cut, 26,598", len(answer.Body), res.ListsCut, len(res.Outputs))
	}
}

// warningsGraph sums aggregateBy per key in tumbling windows of 1 minute of the timestamp
// expression ts, and lists #input.amount too.
func warningsGraph(ts, aggregateBy string) string {
	source := `{"typ": "http"}` // ts "": no timestamp expression
	if ts != "" {
		source = `{"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "` + ts + `"}}]}`
	}
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": ` + source + `},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [
      {"name": "total", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "` + aggregateBy + `"}},
      {"name": "all", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.amount"}}]},
    {"name": "windowLength", "value": "1m"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#agg"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`
}

// A test run warns of the two mistakes that give results without an error (found by a new
// user): a timestamp in epoch seconds, read as milliseconds (1,700,000,000 s is 2023-11-14,
// as ms 1970-01-20T16:13:20Z, every event in one minute's window), and a misspelt field in
// aggregateBy (the Sum of "amout", null for the 3 records, is 0 for every window). Neither
// warns when the unit and the field are right.
func TestTestRunWarnings(t *testing.T) {
	records := `{"ts": 1700000000, "key": "a", "amount": 1.5}
{"ts": 1700000030, "key": "a", "amount": 2}
{"ts": 1700000090, "key": "b", "amount": 3}
`
	c := newClient(t, sqliteStore(t))
	run := func(ts, aggregateBy string) api.TestResult {
		t.Helper()
		var res api.TestResult
		c.post("/api/test", rawBody("graph", warningsGraph(ts, aggregateBy), "records", quote(records))).ok(t, http.StatusOK, &res)
		if res.TotalErrors != 0 {
			t.Fatalf("errors: %v", res.Errors)
		}
		return res
	}

	res := run("#input.ts", "#input.amout")
	want := []api.TestWarning{
		{NodeID: "in", Field: "timestamp", Message: "every event time is before 1973-03-03 (the latest is 1700000090 ms, 1970-01-20T16:13:20.09Z): " +
			"event times are epoch milliseconds; if the timestamp is in seconds, multiply it by 1000"},
		{NodeID: "win", Field: "aggregations[0].aggregateBy", Message: "aggregateBy was null for all 3 events that reached the node " +
			"(Sum ignores null: every result is that of an empty window): is the field's name right? #input's fields are ts, key, amount."},
	}
	if !slices.Equal(res.Warnings, want) {
		t.Errorf("warnings:\n%v\nwant\n%v", res.Warnings, want)
	}
	// Seconds read as ms put the 3 events in one window of key a and one of b, each total 0.
	if out := res.SinkOutputs["out"]; out.Total != 2 {
		t.Errorf("%d outputs, want 2", out.Total)
	}

	if res := run("#input.ts * 1000", "#input.amount"); len(res.Warnings) != 0 {
		t.Errorf("warnings with the timestamp in ms and the field right: %v", res.Warnings)
	}
	// One record with the field is enough: no warning.
	records = strings.Replace(records, `"amount": 3`, `"amout": 3`, 1)
	if res := run("#input.ts * 1000", "#input.amout"); len(res.Warnings) != 0 {
		t.Errorf("warnings with one record of the field: %v", res.Warnings)
	}

	// Without a timestamp expression every record is at time 0, in the first window of its
	// key (a new-user round: nothing said): warned at the source's timestamp.
	res = run("", "#input.amount")
	if len(res.Warnings) != 1 || res.Warnings[0].NodeID != "in" || res.Warnings[0].Field != "timestamp" ||
		!strings.Contains(res.Warnings[0].Message, "no timestamp expression") || !strings.Contains(res.Warnings[0].Message, "event time 0 (1970-01-01T00:00:00Z)") {
		t.Errorf("warnings without a timestamp expression: %v; want one at in's timestamp, of event time 0", res.Warnings)
	}
	if out := res.SinkOutputs["out"]; out.Total != 2 {
		t.Errorf("%d outputs without a timestamp expression, want 2: [0, 1m) of a and of b", out.Total)
	}
	// Records that come with their own times: no warning.
	envelopes := `{"sourceId": "in", "record": {"key": "a", "amount": 1}, "timestamp": 1700000000000}
{"sourceId": "in", "record": {"key": "b", "amount": 2}, "timestamp": 1700000060000}
`
	var own api.TestResult
	c.post("/api/test", rawBody("graph", warningsGraph("", "#input.amount"), "records", quote(envelopes))).ok(t, http.StatusOK, &own)
	if own.TotalErrors != 0 || len(own.Warnings) != 0 {
		t.Errorf("records with their own timestamps: errors %v, warnings %v; want none", own.Errors, own.Warnings)
	}
}

// A node test of a sink lists the value it writes whole, however many values it holds: a list
// of 300,000 one-element lists is 600,001 values, past what one JSON document decodes into
// (value.MaxValues), and was listed as null without a word (found by review) when the output
// was copied through JSON.
func TestNodeTestSinkOutputPastMaxValues(t *testing.T) {
	graph := `{"nodes": [
	  {"id": "in", "type": "Source", "ref": {"typ": "http"}},
	  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
	    {"name": "value", "expression": {"language": "expr", "expression": "map(1..300000, [1])"}}]}}
	], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	c := newClient(t, sqliteStore(t))
	var res struct {
		Outputs []struct {
			Value [][]int `json:"value"`
		} `json:"outputs"`
		Error string `json:"error"`
	}
	c.post("/api/node-test", rawBody("graph", graph, "nodeId", quote("out"), "variables", `{"input": {}}`)).ok(t, http.StatusOK, &res)
	if len(res.Outputs) != 1 || len(res.Outputs[0].Value) != 300_000 || res.Outputs[0].Value[299_999][0] != 1 || res.Error != "" {
		n := -1
		if len(res.Outputs) == 1 {
			n = len(res.Outputs[0].Value)
		}
		t.Errorf("%d outputs, the first of %d elements, error %q; want one of 300,000 [1]", len(res.Outputs), n, res.Error)
	}
}

// A test run answers at most 100 warnings, and a null-input warning names #input's fields cut
// to 64 bytes each (found by a hostile client: 21 field names of 400 KB in each of 300
// warnings made an answer of gigabytes). 150 aggregations of a field no record has, on one
// record with two fields of 10,000 bytes: 100 warnings, each naming the fields cut.
func TestTestRunWarningsBounded(t *testing.T) {
	var aggs []string
	for i := range 150 {
		aggs = append(aggs, fmt.Sprintf(`{"name": "s%d", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.nosuch"}}`, i))
	}
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "'x'"}]},
    {"name": "aggregations", "value": [` + strings.Join(aggs, ",") + `]},
    {"name": "windowLength", "value": "1m"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#agg.s0"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`
	a, b := strings.Repeat("a", 10_000), strings.Repeat("b", 10_000)
	record := fmt.Sprintf(`{%q: 1, %q: 2, "ts": 1700000000000}`, a, b)
	c := newClient(t, sqliteStore(t))
	var res api.TestResult
	c.post("/api/test?maxRecordsPerNode=1", rawBody("graph", graph, "records", quote(record))).ok(t, http.StatusOK, &res)
	want := "aggregateBy was null for all 1 events that reached the node (Sum ignores null: every result is that of an empty window): " +
		"is the field's name right? #input's fields are " + a[:64] + "... (9936 bytes more), " + b[:64] + "... (9936 bytes more), ts."
	if len(res.Warnings) != 100 || !res.WarningsTruncated || res.Warnings[0].Message != want || res.Warnings[99].Field != "aggregations[99].aggregateBy" {
		t.Fatalf("%d warnings, the first %q; want 100, the first %q", len(res.Warnings), res.Warnings[0].Message, want)
	}
}
