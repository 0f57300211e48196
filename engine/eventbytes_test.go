package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// variables is a chain of n Variable nodes p1..pn, each `repeat("x", #input.n)`, and their
// nodes and edges from node from.
func variables(p string, n int, from string) (nodes, edges []string, last string) {
	last = from
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s%d", p, i)
		nodes = append(nodes, `{"id": "`+id+`", "type": "Variable", "varName": "`+id+`", "value": {"language": "expr", "expression": "repeat('x', #input.n)"}}`)
		edges = append(edges, link(last, id))
		last = id
	}
	return nodes, edges, last
}

// The variables of one event hold at most DefaultMaxEventBytes (64 MiB = 67,108,864 bytes)
// along its path, each expression running with what the event has left: before, a hundred
// Variable nodes of 16 MiB strings held 1.77 GB for one event, and a VariableBuilder of a
// hundred such fields 7.59 GB. The failing node and the bytes held are worked out by hand.
func TestEventVariablesBounded(t *testing.T) {
	const bound = 64 << 20
	// 100 variables of 1,000,000 bytes: after 67 the event holds 67,000,000 bytes and has
	// 108,864 left, less than the 68th makes. With n = 1,000 the 100 hold 100,000 bytes.
	vars, edges, last := variables("v", 100, "in")
	sc := scenarioJSON(append(append([]string{srcNode("in", "#input.t", "0s")}, vars...), sinkNode("out", "len(#v1) + len(#v100)")),
		append(edges, link(last, "out")))
	out, e, _ := replay(t, sc, `{"t": 1, "n": 1000000}
{"t": 2, "n": 1000}
`)
	expectLines(t, out, `{"sink":"out","value":2000}`)
	errs, n := e.Errors()
	if n != 1 || errs[0].Line != 1 || errs[0].NodeID != "v68" ||
		!strings.Contains(errs[0].Message, fmt.Sprintf("the event's variables hold 67000000 bytes already, of the %d", bound)) {
		t.Errorf("errors %d: %+v; want one, line 1 at node v68, the event holding 67,000,000 bytes", n, errs)
	}

	// A VariableBuilder of 100 such fields: the 68th field fails the same way.
	var fields []string
	for i := 1; i <= 100; i++ {
		fields = append(fields, fmt.Sprintf(`{"name": "f%d", "expression": {"language": "expr", "expression": "repeat('x', #input.n)"}}`, i))
	}
	sc = scenarioJSON([]string{srcNode("in", "#input.t", "0s"),
		`{"id": "rec", "type": "VariableBuilder", "varName": "r", "fields": [` + strings.Join(fields, ",") + `]}`,
		sinkNode("out", "len(#r.f1) + len(#r.f100)")}, []string{link("in", "rec"), link("rec", "out")})
	out, e, _ = replay(t, sc, `{"t": 1, "n": 1000000}
{"t": 2, "n": 1000}
`)
	expectLines(t, out, `{"sink":"out","value":2000}`)
	errs, n = e.Errors()
	if n != 1 || errs[0].Line != 1 || errs[0].NodeID != "rec" || errs[0].Field != "fields[67].expression" ||
		!strings.Contains(errs[0].Message, "the event's variables hold 67000000 bytes already") {
		t.Errorf("errors %d: %+v; want one, line 1 at node rec, field fields[67].expression (f68), the event holding 67,000,000 bytes", n, errs)
	}

	// A for-each's list is held while its elements go: 15 strings of 1,000,000 bytes are
	// 16 + 15 × (16 + 1,000,000) = 15,000,256 bytes, leaving 52,108,608, so each element's
	// chain of variables fails at c53 (52 hold 52,000,000; 108,608 are left): 15 errors.
	vars, edges, last = variables("c", 60, "each")
	sc = scenarioJSON(append(append([]string{srcNode("in", "#input.t", "0s"),
		`{"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "item", "parameters": [
			{"name": "Elements", "expression": {"language": "expr", "expression": "map(1..15, repeat('x', #input.n))"}}]}`},
		vars...), sinkNode("out", "len(#item) + len(#c60)")),
		append(append([]string{link("in", "each")}, edges...), link(last, "out")))
	out, e, _ = replay(t, sc, `{"t": 1, "n": 1000000}
`)
	expectLines(t, out)
	errs, n = e.Errors()
	if n != 15 || errs[0].NodeID != "c53" || errs[14].NodeID != "c53" ||
		!strings.Contains(errs[0].Message, "the event's variables hold 67000256 bytes already") {
		t.Errorf("errors %d: %+v; want 15 at node c53, the event holding 15,000,256 + 52,000,000 bytes", n, errs[:min(2, len(errs))])
	}
}

// A per-event error's message is cut: expr's int() quotes its argument whole, so a 1 MB
// string made a 1 MB message in each error kept (a test run keeps 1,000, a deployment's
// dead letters all). Cut at expression.MaxRunErrorMessage (1 KiB) and a note of the rest.
// (int() now refuses a text past 1,024 bytes before it reads it, in a short message; one of
// 1,024 is quoted whole, in a message past 1 KiB.)
func TestErrorMessagesCut(t *testing.T) {
	sc := scenarioJSON([]string{srcNode("in", "#input.t", "0s"),
		`{"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "int(repeat('x', #input.n)) > 0"}}`,
		sinkNode("out", "#input.n")}, []string{link("in", "f"), typedEdge("f", "out", "FilterTrue")})
	_, e, _ := replay(t, sc, `{"t": 1, "n": 1024}
{"t": 2, "n": 3}
`)
	errs, n := e.Errors()
	if n != 2 {
		t.Fatalf("%d errors, want 2: %v", n, errs)
	}
	if m := errs[0].Message; len(m) > len("1:1: ")+1024+len("... (1000 bytes more)") || !strings.HasSuffix(m, " bytes more)") {
		t.Errorf("the message of a 1 KiB argument is %d bytes, ending %q; want at most 1 KiB and the bytes left out", len(m), m[max(0, len(m)-40):])
	}
	if m := errs[1].Message; strings.Contains(m, "bytes more") || !strings.Contains(m, "xxx") {
		t.Errorf("a short message was cut: %q", m)
	}
}

// RunNode lists the node's expressions, in field order, holding their values to
// DefaultMaxEventBytes together: of a hundred fields of 1,000,000 bytes, 67 have a value
// (67,000,000 bytes; the 68th has 108,864 left) and 33 an error (round 18: each had 16 MiB
// of its own, 1.6 GB for a hundred fields).
func TestRunNodeExpressionsBounded(t *testing.T) {
	var fields []string
	for i := range 100 {
		fields = append(fields, fmt.Sprintf(`{"name": "f%d", "expression": {"language": "expr", "expression": "repeat('x', 1000000)"}}`, i))
	}
	sc := scenarioJSON([]string{srcNode("in", "#input.t", "0s"),
		`{"id": "rec", "type": "VariableBuilder", "varName": "r", "fields": [` + strings.Join(fields, ",") + `]}`,
		sinkNode("out", "1")}, []string{link("in", "rec"), link("rec", "out")})
	s, err := scenario.Decode([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	run, err := RunNode(t.Context(), s, Default().Validate(s), "rec", map[string]value.Value{"input": value.NewRecord([]string{"t"}, []value.Value{value.Int(1)})}, "")
	if err != nil {
		t.Fatal(err)
	}
	values, errs := 0, 0
	for _, x := range run.Expressions {
		if x.Err != "" {
			errs++
		} else {
			values++
		}
	}
	if values != 67 || errs != 33 || len(run.Outputs) != 0 || !strings.Contains(run.Error, "fields[67].expression") {
		t.Errorf("%d values, %d errors, %d outputs, error %.200q; want 67, 33, none, the 68th field failing", values, errs, len(run.Outputs), run.Error)
	}
}

// A registered kind's operator (nodes.Operator) evaluates its expressions within the event's
// bound too: "times" evaluates its text a hundred times in one Process call; with text
// 1,000,000 bytes, the 68th Eval fails as the 68th Variable does (67 hold 67,000,000 bytes,
// 108,864 are left). Before, every Eval had the whole 64 MiB: 100 MB held. The second
// record (100 × 1,000 bytes) goes through to the sink.
func TestRegisteredKindEvalsBounded(t *testing.T) {
	kind := &nodes.Kind{
		ID: "CustomNode/times", NodeType: scenario.TypeCustomNode, Subtype: "times", Group: nodes.GroupBase,
		Label: "Times", Description: "Evaluates text a hundred times.",
		Parameters: []nodes.ParamSpec{{Name: "text", In: nodes.InParameters, Editor: nodes.EditorExpression, Type: "string", Required: true, Label: "Text", Description: "A string."}},
		Validate:   func(c *nodes.Check) { c.Expression("text", expression.String.OrNull()) },
		NewOperator: func(*nodes.Plan) (nodes.Operator, error) {
			return nodes.OperatorFunc(func(in nodes.Event, out nodes.Sender) error {
				kept := make([]value.Value, 0, 100)
				for i := range 100 {
					v, err := in.Eval("text")
					if err != nil {
						return &nodes.FieldError{Field: "text", Err: fmt.Errorf("evaluation %d: %w", i+1, err)}
					}
					kept = append(kept, v)
				}
				out.Send("", nil)
				return nil
			}), nil
		},
	}
	reg := Builtin()
	if err := reg.Register(kind); err != nil {
		t.Fatal(err)
	}
	times := func(id string) string {
		return `{"id": "` + id + `", "type": "CustomNode", "nodeType": "times", "parameters": [
			{"name": "text", "expression": {"language": "expr", "expression": "repeat('x', #input.n)"}}]}`
	}
	s, err := scenario.Decode([]byte(scenarioJSON([]string{srcNode("in", "#input.t", "0s"), times("x"), sinkNode("out", "1")},
		[]string{link("in", "x"), link("x", "out")})))
	if err != nil {
		t.Fatal(err)
	}
	var results int64
	e, err := New(s, Options{ScenarioName: "test", Registry: reg, Output: func(string, value.Value, int64) { results++ }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(t.Context(), e, strings.NewReader("{\"t\": 1, \"n\": 1000000}\n{\"t\": 2, \"n\": 1000}\n")); err != nil {
		t.Fatal(err)
	}
	errs, n := e.Errors()
	if n != 1 || errs[0].NodeID != "x" || errs[0].Field != "text" || !strings.HasPrefix(errs[0].Message, "evaluation 68: ") ||
		!strings.Contains(errs[0].Message, "the event's variables hold 67000000 bytes already") || results != 1 {
		t.Errorf("errors %d: %+v, %d results; want one at x.text on evaluation 68, the event holding 67,000,000 bytes, and the second record's result", n, errs, results)
	}
}
