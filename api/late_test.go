package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
)

// lateGraph: an HTTP source timed by #input.t with no disorder, split into a 10 s tumbling
// count whose Late edge leads to sink "late", and a 20 s hopping count sliding by 10 s.
const lateGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
    {"name": "maxOutOfOrderness", "value": "0s"}]}},
  {"id": "split", "type": "Split"},
  {"id": "tumbling", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "10s"}]},
  {"id": "hopping", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "20s"}, {"name": "slide", "value": "10s"}]},
  {"id": "out1", "type": "Sink", "ref": {"typ": "dead-end"}},
  {"id": "out2", "type": "Sink", "ref": {"typ": "dead-end"}},
  {"id": "late", "type": "Sink", "ref": {"typ": "stdout", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "{t: #input.t, end: #late.windowEnd}"}}]}}
], "edges": [
  {"from": "in", "to": "split", "edgeType": null},
  {"from": "split", "to": "tumbling", "edgeType": null},
  {"from": "split", "to": "hopping", "edgeType": null},
  {"from": "tumbling", "to": "out1", "edgeType": null},
  {"from": "tumbling", "to": "late", "edgeType": {"type": "Late"}},
  {"from": "hopping", "to": "out2", "edgeType": null}
]}`

// A test run lists each aggregate's late events with their line, record and #late, and counts
// partly late events apart. Worked by hand, W = the largest event time:
//   - line 1 (5 s), line 2 (35 s): W = 35 s closes tumbling [0, 10 s) and [20 s, 30 s) has
//     not opened; hopping windows [k·10 s, k·10 s + 20 s) with end ≤ 35 s are closed;
//   - line 3 (25 s): tumbling [20 s, 30 s) ended at 30 s ≤ W: late, #late = {20000, 30000,
//     35000}; hopping [10 s, 30 s) is closed but [20 s, 40 s) is open: partly late;
//   - line 4 (3 s): tumbling [0, 10 s) closed: late, #late = {0, 10000, 35000}; hopping
//     [−10 s, 10 s) and [0, 20 s) both closed: late, the first missed [−10000, 10000).
func testLateEvents(t *testing.T, c *client) {
	records := `{"t": 5000}` + "\n" + `{"t": 35000}` + "\n" + `{"t": 25000}` + "\n" + `{"t": 3000}`
	var res api.TestResult
	c.post("/api/test", rawBody("graph", lateGraph, "records", quote(records))).ok(t, http.StatusOK, &res)

	if got, want := res.Nodes["tumbling"].Counts, (api.TestCounts{In: 4, Out: 2, Late: 2}); got != want {
		t.Errorf("tumbling counts %+v, want %+v", got, want)
	}
	// Hopping results: [−10, 10) and [0, 20) with 5 s, [10, 30) empty (no result), [20, 40) and
	// [30, 50) with 35 s and 25 s: 4 results.
	if got, want := res.Nodes["hopping"].Counts, (api.TestCounts{In: 4, Out: 4, Late: 1, PartlyLate: 1}); got != want {
		t.Errorf("hopping counts %+v, want %+v", got, want)
	}
	type event struct {
		Line, Time         int64
		Input              string
		Start, End, WaterM int64
		LateVar            string
	}
	view := func(id string) (int64, bool, []event) {
		l, ok := res.LateEvents[id]
		if !ok {
			t.Fatalf("no late events for %q in %v", id, keysOf(res.LateEvents))
		}
		var out []event
		for _, e := range l.Events {
			out = append(out, event{e.Line, e.EventTime, string(e.Variables["input"]), e.Late.WindowStart, e.Late.WindowEnd, e.Late.Watermark, string(e.Variables["late"])})
		}
		return l.Total, l.Truncated, out
	}
	lateVar := func(start, end, w int64) string {
		return fmt.Sprintf(`{"windowStart":%d,"windowEnd":%d,"watermark":%d}`, start, end, w)
	}
	total, truncated, events := view("tumbling")
	want := []event{
		{3, 25000, `{"t":25000}`, 20000, 30000, 35000, lateVar(20000, 30000, 35000)},
		{4, 3000, `{"t":3000}`, 0, 10000, 35000, lateVar(0, 10000, 35000)},
	}
	if total != 2 || truncated || fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("tumbling late events: total %d truncated %v %+v, want %+v", total, truncated, events, want)
	}
	total, _, events = view("hopping")
	want = []event{{4, 3000, `{"t":3000}`, -10000, 10000, 35000, lateVar(-10000, 10000, 35000)}}
	if total != 1 || fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("hopping late events: total %d %+v, want %+v", total, events, want)
	}
	// The Late edge's sink wrote the two late events of the tumbling window.
	var outs []string
	for _, o := range res.SinkOutputs["late"].Outputs {
		outs = append(outs, fmt.Sprintf("%d %s", o.Line, o.Value))
	}
	if fmt.Sprint(outs) != fmt.Sprint([]string{`3 {"t":25000,"end":30000}`, `4 {"t":3000,"end":10000}`}) {
		t.Errorf("late sink outputs %q", outs)
	}
	// A count window lists none (no lateness), nor do other nodes.
	for id := range res.LateEvents {
		if id != "tumbling" && id != "hopping" {
			t.Errorf("late events listed for %q", id)
		}
	}
}

// Deployed, the same graph sends the late events down the Late edge into a collect sink, and
// the live counts and /metrics count late and partly late events apart (worked by hand as
// for testLateEvents: tumbling late 2; hopping late 1, partly late 1).
func testLateEventsDeployed(t *testing.T, c *client) {
	const name = "late events"
	// A stdout sink keeps no results to read: the 404 says what the node is.
	c.post("/api/scenarios", rawBody("name", quote("stdout late"), "graph", lateGraph)).ok(t, http.StatusCreated, nil)
	for sink, want := range map[string]string{
		"late": `"late" of scenario "stdout late" is a stdout Sink node: only a collect sink keeps results to read here`,
		"in":   `"in" of scenario "stdout late" is a Source node`,
		"nope": `scenario "stdout late" has no collect sink "nope"`,
	} {
		p := c.get("/api/scenarios/stdout%20late/sinks/"+sink+"/results").problem(t, http.StatusNotFound, api.CodeSinkNotFound)
		if !strings.Contains(p.Detail, want) {
			t.Errorf("results of %s: %q; want %q in it", sink, p.Detail, want)
		}
	}
	graph := replace(t, lateGraph, `"typ": "stdout"`, `"typ": "collect"`)
	c.post("/api/scenarios", rawBody("name", quote(name), "graph", graph)).ok(t, http.StatusCreated, nil)
	c.post("/api/scenarios/"+url.PathEscape(name)+"/deploy", rawBody()).ok(t, http.StatusOK, nil)
	lines := [][]byte{[]byte(`{"t": 5000}`), []byte(`{"t": 35000}`), []byte(`{"t": 25000}`), []byte(`{"t": 3000}`)}
	postEvents(c, name, "in", "", lines).ok(t, http.StatusAccepted, nil)
	lc := waitCounts(t, c, name, committed(4))
	if got, want := counters(lc.Nodes["tumbling"]), (api.NodeCounts{In: 4, Out: 1, Late: 2}); got != want {
		t.Errorf("tumbling counts %+v, want %+v (one window closed: [0, 10 s))", got, want)
	}
	// Closed by W = 35 s: [−10, 10) and [0, 20) with the 5 s event ([10, 30) is empty).
	if got, want := counters(lc.Nodes["hopping"]), (api.NodeCounts{In: 4, Out: 2, Late: 1, PartlyLate: 1}); got != want {
		t.Errorf("hopping counts %+v, want %+v", got, want)
	}
	var got []string
	for _, r := range readResults(t, c, name, "late", 100) {
		got = append(got, normJSON(t, r.Value))
	}
	if want := []string{`{"end":30000,"t":25000}`, `{"end":10000,"t":3000}`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("late sink results %q, want %q", got, want)
	}
	body := string(c.get("/metrics").Body)
	for _, want := range []string{
		fmt.Sprintf(`scenario_server_node_late_total{node="tumbling",scenario=%q} 2`, name),
		fmt.Sprintf(`scenario_server_node_late_total{node="hopping",scenario=%q} 1`, name),
		fmt.Sprintf(`scenario_server_node_partly_late_total{node="hopping",scenario=%q} 1`, name),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
