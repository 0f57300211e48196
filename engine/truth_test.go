package engine

import (
	"strings"
	"testing"
)

// A boolean expression that gives something else is a per-event error at its node and
// field, what it gave named; null (a field the event does not have) is false. By hand: a
// Filter on #input.ok (no schema: its type is known only when the events come) passes
// {"ok": true}, drops {"ok": false} and {} (null), and fails {"ok": 5000} and {"ok": "yes"};
// a choice's condition and a session's end condition alike. Before, anything but true was
// false: a Filter on #input.amount dropped every event without a word (new-user round 153).
func TestBooleanExpressionsGiveBooleans(t *testing.T) {
	input := `{"t": 1000, "k": "a", "v": 1, "ok": true}
{"t": 2000, "k": "a", "v": 2, "ok": false}
{"t": 3000, "k": "a", "v": 3}
{"t": 4000, "k": "a", "v": 4, "ok": 5000}
{"t": 5000, "k": "a", "v": 5, "ok": "yes"}
`
	check := func(t *testing.T, e *Engine, node, field string, wantIn, wantOut int64) {
		t.Helper()
		errs, n := e.Errors()
		if n != 2 {
			t.Fatalf("%d errors, want 2 (lines 4 and 5): %v", n, errs)
		}
		for i, w := range []struct {
			line int64
			gave string
		}{{4, "an integer"}, {5, "a string"}} {
			if errs[i].Line != w.line || errs[i].NodeID != node || errs[i].Field != field || !strings.Contains(errs[i].Message, "gave "+w.gave+", not true or false") {
				t.Errorf("error %d = %+v, want line %d at %s %s: gave %s, not true or false", i, errs[i], w.line, node, field, w.gave)
			}
		}
		if c := e.Counts()[node]; c.In != wantIn || c.Out != wantOut || c.Errors != 2 {
			t.Errorf("%s counts %+v, want in %d, out %d, errors 2", node, c, wantIn, wantOut)
		}
	}
	t.Run("Filter", func(t *testing.T) {
		sc := scenarioJSON([]string{
			srcNode("in", "#input.t", "0s"),
			`{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "#input.ok"}}`,
			sinkNode("out", "#input.v"),
		}, []string{link("in", "f"), typedEdge("f", "out", "FilterTrue")})
		out, e, _ := replay(t, sc, input)
		expectLines(t, out, `{"sink":"out","value":1}`)
		check(t, e, "f", "expression", 5, 1)
	})
	t.Run("Switch", func(t *testing.T) {
		sc := scenarioJSON([]string{
			srcNode("in", "#input.t", "0s"),
			`{"id": "sw", "type": "Switch"}`,
			sinkNode("yes", "#input.v"),
			sinkNode("no", "-#input.v"),
		}, []string{
			link("in", "sw"),
			`{"from": "sw", "to": "yes", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "#input.ok"}}}`,
			typedEdge("sw", "no", "SwitchDefault"),
		})
		out, e, _ := replay(t, sc, input)
		expectLines(t, out, `{"sink":"yes","value":1}`, `{"sink":"no","value":-2}`, `{"sink":"no","value":-3}`)
		check(t, e, "sw", "condition", 5, 3)
	})
	t.Run("endSessionCondition", func(t *testing.T) {
		sc := scenarioJSON([]string{
			srcNode("in", "#input.t", "0s"),
			`{"id": "agg", "type": "CustomNode", "nodeType": "aggregate-session", "outputVar": "agg", "parameters": [
				{"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
				{"name": "aggregations", "value": [{"name": "s", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.v"}}]},
				{"name": "sessionTimeout", "value": "10s"},
				{"name": "endSessionCondition", "expression": {"language": "expr", "expression": "#input.ok"}}]}`,
			sinkNode("out", "#agg.s"),
		}, []string{link("in", "agg"), link("agg", "out")})
		out, e, _ := replay(t, sc, input)
		// {"ok": true} ends the session of 1; 2 and 3 make the next, closed at the end.
		expectLines(t, out, `{"sink":"out","value":1}`, `{"sink":"out","value":5}`)
		check(t, e, "agg", "endSessionCondition", 5, 2)
	})
}
