package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// lateEdgeScenario: a variable x = v * 10, then 10 s tumbling counts per #input.k (OnEnd)
// into sink "out", and the aggregate's Late edge into sink "late" (when withEdge).
func lateEdgeScenario(withEdge bool) string {
	nodes := []string{
		srcNode("in", "#input.t", "0s"),
		`{"id": "x", "type": "Variable", "varName": "x", "value": {"language": "expr", "expression": "#input.v * 10"}}`,
		countSumNode("aggregate-tumbling", `{"name": "emitWhen", "value": "OnEnd"}`),
		sinkNode("out", "{k: #key[0], n: #agg.n, start: #window.start}"),
	}
	edges := []string{link("in", "x"), link("x", "agg"), link("agg", "out")}
	if withEdge {
		nodes = append(nodes, sinkNode("late", "{t: #input.t, x: #x, start: #late.windowStart, end: #late.windowEnd, w: #late.watermark}"))
		edges = append(edges, typedEdge("agg", "late", scenario.EdgeLate))
	}
	return scenarioJSON(nodes, edges)
}

// A tumbling 10 s window, no disorder (W = the largest event time): events at 1 s, 25 s and
// 3 s. Worked by hand: 1 s opens [0, 10 s); 25 s opens [20 s, 30 s) and its step (W = 25 s)
// closes [0, 10 s) with n = 1; 3 s belongs to [0, 10 s), closed: late, so it leaves through
// the Late edge unchanged (t 3000, x = 3 * 10) with #late = {0, 10000, watermark 25000}. The
// end of input closes [20 s, 30 s) with n = 1. Out counts the two results, Late the one.
func TestLateEdgeCarriesLateEvents(t *testing.T) {
	input := `{"t": 1000, "k": "a", "v": 1}
{"t": 25000, "k": "a", "v": 2}
{"t": 3000, "k": "a", "v": 3}
`
	out, e, sum := replay(t, lateEdgeScenario(true), input)
	expectLines(t, out,
		`{"sink":"out","value":{"k":"a","n":1,"start":0}}`,
		`{"sink":"late","value":{"t":3000,"x":30,"start":0,"end":10000,"w":25000}}`,
		`{"sink":"out","value":{"k":"a","n":1,"start":20000}}`)
	if c := e.Counts()["agg"]; c.In != 3 || c.Out != 2 || c.Late != 1 || c.PartlyLate != 0 {
		t.Fatalf("aggregate counts %+v, want in 3, out 2, late 1", c)
	}
	if c := e.Counts()["late"]; c.In != 1 || c.Out != 1 {
		t.Fatalf("late sink counts %+v, want in 1, out 1", c)
	}
	if sum.Late != 1 {
		t.Fatalf("summary late %d, want 1", sum.Late)
	}

	// Without the edge the late event is dropped and counted, and the rest is the same.
	out, e, _ = replay(t, lateEdgeScenario(false), input)
	expectLines(t, out,
		`{"sink":"out","value":{"k":"a","n":1,"start":0}}`,
		`{"sink":"out","value":{"k":"a","n":1,"start":20000}}`)
	if c := e.Counts()["agg"]; c.Late != 1 || c.Out != 2 {
		t.Fatalf("aggregate counts without the edge %+v, want out 2, late 1", c)
	}
}

// ObserveLate sees every late event with its variables and #late, edge or not.
func TestObserveLateSeesLateEvents(t *testing.T) {
	s, err := scenario.Decode([]byte(lateEdgeScenario(false)))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	e.ObserveLate(func(id string, vars map[string]value.Value, at int64, late aggregate.LateError) {
		seen = append(seen, fmt.Sprintf("%s line %d at %d x=%s late=%s [%d, %d) w %d", id, e.Line(), at,
			value.AppendJSON(nil, vars["x"]), value.AppendJSON(nil, vars["late"]), late.WindowStart, late.WindowEnd, late.Watermark))
	})
	for i, line := range []string{`{"t": 1000, "k": "a", "v": 1}`, `{"t": 25000, "k": "a", "v": 2}`, `{"t": 3000, "k": "a", "v": 3}`} {
		if err := e.PushJSON("in", []byte(line), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	e.Flush()
	want := `agg line 3 at 3000 x=30 late={"windowStart":0,"windowEnd":10000,"watermark":25000} [0, 10000) w 25000`
	if len(seen) != 1 || seen[0] != want {
		t.Fatalf("late events seen:\n%s\nwant:\n%s", strings.Join(seen, "\n"), want)
	}
}

// httpCountScenario: an HTTP (live) source timed by #input.t with no disorder and the given
// extra source parameters, 1 min tumbling counts (OnEnd) into a sink.
func httpCountScenario(t *testing.T, sourceParams string) *scenario.Scenario {
	t.Helper()
	return liveCountScenario(t, "1m", sourceParams)
}

func mustMS(t *testing.T, rfc3339 string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

// An idle live source fed 2024 data, while the wall clock says 2026: its idle watermark moves
// on from its own largest event time, never to the wall clock (docs/semantics.md §1).
// Worked by hand, idle timeout 3 min, 1 min windows, no disorder:
//   - 10:00:05 arrives at wall T0; at T0 + 3 min the source is idle, and its watermark is
//     10:00:05 + 3 min − 3 min = 10:00:05: the window [10:00, 10:01) stays open (the old rule,
//     the wall clock less 3 min, would have closed every 2024 window);
//   - 10:00:20 arrives at T0 + 3 min + 1 s: on time (late 0), W = 10:00:20;
//   - silent s after that, W = 10:00:20 + s − 3 min, which reaches the window's end 10:01:00
//     at s = 3 min 40 s: the window (n = 2) is emitted one idle timeout after the source's own
//     time passed its end, and not 1 ms before.
func TestIdleSourceFollowsItsOwnTime(t *testing.T) {
	s := httpCountScenario(t, `, {"name": "idleTimeout", "value": "3m"}`)
	wall := time.UnixMilli(mustMS(t, "2026-12-01T08:00:00Z"))
	t0 := wall
	var got []string
	e, err := New(s, Options{Now: func() time.Time { return wall }, Output: func(_ string, v valueT, _ int64) {
		got = append(got, jsonOf(v))
	}})
	if err != nil {
		t.Fatal(err)
	}
	push := func(at time.Time, ts string, line int64) {
		t.Helper()
		wall = at
		if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, mustMS(t, ts)), line); err != nil {
			t.Fatal(err)
		}
	}
	tick := func(at time.Time) {
		wall = at
		e.Tick(at)
	}
	push(t0, "2024-03-01T10:00:05Z", 1)
	tick(t0.Add(3 * time.Minute))
	if w, _ := e.SourceWatermark("in"); w != mustMS(t, "2024-03-01T10:00:05Z") {
		t.Fatalf("idle watermark %s, want 2024-03-01T10:00:05Z", time.UnixMilli(w).UTC())
	}
	if len(got) != 0 {
		t.Fatalf("windows emitted after the first idle step: %v", got)
	}
	second := t0.Add(3*time.Minute + time.Second)
	push(second, "2024-03-01T10:00:20Z", 2)
	if c := e.Counts()["agg"]; c.Late != 0 || c.In != 2 {
		t.Fatalf("aggregate counts %+v, want in 2, late 0", c)
	}
	tick(second.Add(3*time.Minute + 40*time.Second - time.Millisecond))
	if len(got) != 0 {
		t.Fatalf("emitted 1 ms before the idle watermark reached the window's end: %v", got)
	}
	tick(second.Add(3*time.Minute + 40*time.Second))
	want := fmt.Sprintf(`{"start":%d,"n":2}`, mustMS(t, "2024-03-01T10:00:00Z"))
	if len(got) != 1 || got[0] != want {
		t.Fatalf("after the idle step: %v, want [%s]", got, want)
	}
}

// A live source refuses an event further ahead of the wall clock than maxFutureSkew (default
// 1 h) as an error at the source's timestamp, and its watermark does not move. Worked by
// hand: wall clock T0, no disorder. T0 − 10 s gives W = T0 − 10 s; 9999-12-31 is refused
// (W unchanged); T0 − 5 s is on time (W = T0 − 5 s, late 0); T0 + 1 h is exactly the skew
// and accepted; T0 + 1 h + 1 ms is refused.
func TestFarFutureEventRefused(t *testing.T) {
	s := httpCountScenario(t, "")
	wall := time.UnixMilli(mustMS(t, "2026-12-01T08:00:00Z"))
	t0 := wall.UnixMilli()
	e, err := New(s, Options{Now: func() time.Time { return wall }})
	if err != nil {
		t.Fatal(err)
	}
	push := func(ts int64, line int64) {
		t.Helper()
		if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, ts), line); err != nil {
			t.Fatal(err)
		}
	}
	watermark := func() int64 { w, _ := e.SourceWatermark("in"); return w }
	push(t0-10_000, 1)
	if w := watermark(); w != t0-10_000 {
		t.Fatalf("watermark %d, want T0 − 10 s = %d", w, t0-10_000)
	}
	push(mustMS(t, "9999-12-31T00:00:00Z"), 2)
	if w := watermark(); w != t0-10_000 {
		t.Fatalf("watermark after the far-future event %d, want it unchanged at %d", w, t0-10_000)
	}
	errs, n := e.Errors()
	// 9999-12-31T00:00:00Z is 253,402,214,400,000 ms; T0 (2026-12-01T08:00:00Z) is
	// 1,796,112,000,000 ms: 251,606,102,400,000 ms ahead, 2,912,107 whole days (beyond what a
	// time.Duration holds), 2,912,107 / 365.2425 = 7,973.05 years.
	if n != 1 || errs[0].NodeID != "in" || errs[0].Field != "timestamp" || errs[0].Line != 2 ||
		errs[0].Message != "event time 9999-12-31T00:00:00Z is 2912107 days (about 7973 years) ahead of the server's clock, more than maxFutureSkew 1h0m0s" {
		t.Fatalf("errors %d %+v, want one at node in, field timestamp, line 2, naming maxFutureSkew", n, errs)
	}
	push(t0-5_000, 3)
	if c := e.Counts()["agg"]; c.In != 2 || c.Late != 0 {
		t.Fatalf("aggregate counts %+v, want in 2 (lines 1 and 3), late 0", c)
	}
	push(t0+3_600_000, 4)
	if w := watermark(); w != t0+3_600_000 {
		t.Fatalf("an event exactly maxFutureSkew ahead: watermark %d, want %d", w, t0+3_600_000)
	}
	push(t0+3_600_001+3_600_000, 5) // 2 h + 1 ms ahead
	if _, n := e.Errors(); n != 2 {
		t.Fatalf("%d errors, want 2", n)
	}
	if c := e.Counts()["in"]; c.In != 5 || c.Out != 3 || c.Errors != 2 {
		t.Fatalf("source counts %+v, want in 5, out 3, errors 2", c)
	}

	// A bounded replay has no such bound: the same far-future event is just an event.
	e2, err := New(s, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, mustMS(t, "9999-12-31T00:00:00Z")), 1); err != nil {
		t.Fatal(err)
	}
	if _, n := e2.Errors(); n != 0 {
		t.Fatalf("a bounded replay refused a far-future event")
	}
}

// The skew is a source parameter: 0 turns the bound off.
func TestMaxFutureSkewParameter(t *testing.T) {
	for _, tc := range []struct {
		param string
		ahead int64
		errs  int64
	}{
		{`, {"name": "maxFutureSkew", "value": "10s"}`, 10_000, 0},
		{`, {"name": "maxFutureSkew", "value": "10s"}`, 10_001, 1},
		{`, {"name": "maxFutureSkew", "value": "0s"}`, 100 * 365 * 86_400_000, 0},
	} {
		s := httpCountScenario(t, tc.param)
		wall := time.UnixMilli(1_700_000_000_000)
		e, err := New(s, Options{Now: func() time.Time { return wall }})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, wall.UnixMilli()+tc.ahead), 1); err != nil {
			t.Fatal(err)
		}
		if _, n := e.Errors(); n != tc.errs {
			t.Errorf("%s, %d ms ahead: %d errors, want %d", tc.param, tc.ahead, n, tc.errs)
		}
	}
}

// aheadText, worked by hand: a span under 2 days as a duration, whole days from 2 days, and
// years of 365.2425 days from 2 years (26,444.2 days = 72.4 years).
func TestAheadText(t *testing.T) {
	const day = 86_400_000
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{1_500, "1.5s"},
		{2*day - 1, "47h59m59.999s"},
		{2 * day, "2 days"},
		{2*365*day - 1, "729 days"},
		{2 * 365 * day, "730 days (about 2 years)"},
		{26_444*day + 5*3600_000, "26444 days (about 72 years)"},
	} {
		if got := aheadText(tc.ms); got != tc.want {
			t.Errorf("aheadText(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}
