package nodes_test

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/expression"
	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

var stringType = expression.String

func typeNamed(name string) expression.Type {
	return map[string]expression.Type{"integer": expression.Integer, "float": expression.Float, "number": expression.Number}[name]
}

// readDocExample returns the JSON block that follows the "# A complete
// example" heading of a package documentation: its lines that start with
// "//" and a tab, without those.
func readDocExample(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "// # A complete example" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%s: no \"# A complete example\" heading", path)
	}
	var out []string
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "//\t") {
			out = append(out, strings.TrimPrefix(l, "//\t"))
			continue
		}
		if len(out) > 0 {
			break
		}
	}
	return []byte(strings.Join(out, "\n")), nil
}

// sampleValue is a valid value for a parameter, by its spec.
func sampleValue(p ParamSpec) (expr string, value any) {
	switch p.Name {
	case "offset":
		return "", "30s" // shorter than the sample windowLength
	case "timeZone":
		return "", "Europe/Warsaw"
	case "windowLength":
		if p.Editor == EditorDuration {
			// Whole days: with the sample timeZone, a tumbling window
			// must be (time-zone-needs-whole-days).
			return "", "1d"
		}
	}
	if p.Editor == EditorExpression {
		switch p.Type {
		case "boolean":
			return "true", nil
		case "list":
			return "[1, 2]", nil
		case "record":
			return `{"a": 1}`, nil
		case "timestamp":
			return "toEpochMillis('2024-01-01T00:00:00Z')", nil
		}
		return "1", nil
	}
	switch p.Editor {
	case EditorDuration:
		return "", "1m"
	case EditorEnum:
		return "", p.Options[0]
	case EditorBoolean:
		return "", false
	case EditorInteger:
		return "", 3
	case EditorString:
		return "", "x"
	case EditorJSONSchema:
		return "", map[string]any{"type": "object"}
	case EditorListOfExpressions:
		return "", []any{map[string]any{"language": "expr", "expression": "1"}}
	case EditorAggregations:
		return "", []any{map[string]any{"name": "n", "aggregator": "Count"}}
	}
	return "", nil
}

// minimalNode builds a node of kind k with the parameters that pass the
// filter set to sample values.
func minimalNode(k *Kind, include func(ParamSpec) bool) scenario.Node {
	n := scenario.Node{ID: "n", Type: k.NodeType}
	var params []scenario.Parameter
	for _, p := range k.Parameters {
		if !include(p) {
			continue
		}
		expr, value := sampleValue(p)
		switch p.In {
		case InNode:
			switch p.Name {
			case "expression":
				n.Expression = scenario.Expr(expr)
			case "value":
				n.Value = scenario.Expr(expr)
			case "varName":
				n.VarName = "v"
			case "outputVar":
				n.OutputVar = "out"
			case "fields":
				n.Fields = []scenario.RecordField{{Name: "a", Expression: scenario.Expr("1")}}
			}
		case InBranchParameters:
			n.BranchParameters = append(n.BranchParameters, scenario.BranchParameters{BranchID: "src",
				Parameters: []scenario.Parameter{{Name: p.Name, Expression: scenario.Expr(expr)}}})
		case InParameters:
			param := scenario.Parameter{Name: p.Name}
			if p.Editor == EditorExpression {
				param.Expression = scenario.Expr(expr)
			} else {
				raw, _ := json.Marshal(value)
				param.Value = raw
			}
			params = append(params, param)
		}
	}
	switch k.NodeType {
	case scenario.TypeSource, scenario.TypeSink:
		n.Ref = &scenario.Ref{Typ: k.Subtype, Parameters: params}
	default:
		n.NodeType = k.Subtype
		n.Parameters = params
	}
	return n
}

// inGraph places n between a source and a sink, as its kind needs.
func inGraph(k *Kind, n scenario.Node) *scenario.Scenario {
	src := scenario.Node{ID: "src", Type: scenario.TypeSource, Ref: &scenario.Ref{Typ: "http"}}
	sink := scenario.Node{ID: "sink", Type: scenario.TypeSink, Ref: &scenario.Ref{Typ: "dead-end"}}
	switch k.NodeType {
	case scenario.TypeSource:
		return &scenario.Scenario{Nodes: []scenario.Node{n, sink}, Edges: []scenario.Edge{{From: "n", To: "sink"}}}
	case scenario.TypeSink:
		return &scenario.Scenario{Nodes: []scenario.Node{src, n}, Edges: []scenario.Edge{{From: "src", To: "n"}}}
	}
	out := scenario.Edge{From: "n", To: "sink"}
	switch k.NodeType {
	case scenario.TypeFilter:
		out.EdgeType = &scenario.EdgeType{Type: scenario.EdgeFilterTrue}
	case scenario.TypeSwitch:
		out.EdgeType = &scenario.EdgeType{Type: scenario.EdgeNextSwitch, Condition: scenario.Expr("true")}
	}
	return &scenario.Scenario{Nodes: []scenario.Node{src, n, sink}, Edges: []scenario.Edge{{From: "src", To: "n"}, out}}
}

// TestKindConformance runs the same cases against every registered kind.
func TestKindConformance(t *testing.T) {
	editors := map[Editor]bool{EditorExpression: true, EditorDuration: true, EditorEnum: true, EditorListOfExpressions: true,
		EditorAggregations: true, EditorBoolean: true, EditorString: true, EditorInteger: true, EditorNumber: true,
		EditorJSONSchema: true, EditorVariableName: true, EditorRecordFields: true}
	ins := map[string]bool{InNode: true, InParameters: true, InBranchParameters: true}
	for _, k := range builtin.Kinds() {
		t.Run(k.ID, func(t *testing.T) {
			// The self-description is complete and renders as JSON.
			if k.Label == "" || k.Description == "" || GroupOrder[k.Group] == 0 && k.Group != GroupSources {
				t.Errorf("kind %s: label %q, description %q, group %q", k.ID, k.Label, k.Description, k.Group)
			}
			// The edges are scenario.RulesFor's, but for a Late output, which only the
			// time-window aggregates have.
			want := scenario.RulesFor(k.NodeType)
			timeWindow := map[string]bool{engine.AggregateSliding: true, engine.AggregateTumbling: true, engine.AggregateHopping: true, engine.AggregateSession: true}
			if k.NodeType == scenario.TypeCustomNode && !timeWindow[k.Subtype] {
				want.Outputs = []scenario.OutputRule{{EdgeType: "", Min: 1, Max: 1}}
			}
			if !reflect.DeepEqual(k.Edges, want) {
				t.Errorf("kind %s: edges %+v, want %+v", k.ID, k.Edges, want)
			}
			seen := map[string]bool{}
			for _, p := range k.Parameters {
				if seen[p.Name] || !editors[p.Editor] || !ins[p.In] || p.Label == "" || p.Description == "" {
					t.Errorf("kind %s: bad parameter spec %+v", k.ID, p)
				}
				seen[p.Name] = true
				if p.Editor == EditorEnum && (len(p.Options) == 0 || p.Default != nil && !contains(p.Options, p.Default.(string))) {
					t.Errorf("kind %s: enum %s: options %v, default %v", k.ID, p.Name, p.Options, p.Default)
				}
			}
			if _, err := json.Marshal(k); err != nil {
				t.Errorf("kind %s: %v", k.ID, err)
			}

			// Only the required parameters: the defaults make it valid.
			required := minimalNode(k, func(p ParamSpec) bool { return p.Required })
			if v := validate(inGraph(k, required)); !v.OK() || len(v.Warnings) > 0 {
				t.Errorf("kind %s with required parameters only: %v %v", k.ID, v.Errors, v.Warnings)
			}
			// Every parameter set to a sample value is valid too.
			all := minimalNode(k, func(p ParamSpec) bool { return true })
			v := validate(inGraph(k, all))
			if !v.OK() {
				t.Errorf("kind %s with all parameters: %v", k.ID, v.Errors)
			}
			if _, ok := v.Variables["n"]; !ok {
				t.Errorf("kind %s: no variables recorded for the node", k.ID)
			}
			// Each required parameter left out is reported, on its field.
			for _, p := range k.Parameters {
				if !p.Required {
					continue
				}
				n := minimalNode(k, func(q ParamSpec) bool { return q.Required && q.Name != p.Name })
				v := validate(inGraph(k, n))
				if !hasProblem(v.Errors, "n", p.Name, CodeMissingParameter) {
					t.Errorf("kind %s without %s: %v", k.ID, p.Name, v.Errors)
				}
			}
			// A parameter the kind does not have is reported.
			if k.NodeType != scenario.TypeSplit && k.NodeType != scenario.TypeSwitch && k.NodeType != scenario.TypeFilter &&
				k.NodeType != scenario.TypeVariable && k.NodeType != scenario.TypeVariableBuilder {
				n := minimalNode(k, func(p ParamSpec) bool { return p.Required })
				extra := scenario.Parameter{Name: "bogus", Value: json.RawMessage(`1`)}
				if n.Ref != nil {
					n.Ref.Parameters = append(n.Ref.Parameters, extra)
				} else {
					n.Parameters = append(n.Parameters, extra)
				}
				if v := validate(inGraph(k, n)); !hasProblem(v.Errors, "n", "bogus", CodeUnknownParameter) {
					t.Errorf("kind %s with an unknown parameter: %v", k.ID, v.Errors)
				}
			}
		})
	}
}

func passThrough(*Check) {}

func noOperator(*Plan) (Operator, error) { return nil, nil }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasProblem(ps []scenario.Problem, node, field, code string) bool {
	for _, p := range ps {
		if p.NodeID == node && p.Field == field && p.Code == code {
			return true
		}
	}
	return false
}

func TestRegistry(t *testing.T) {
	r := builtin
	var ids []string
	for _, k := range r.Kinds() {
		ids = append(ids, k.ID)
	}
	want := "Source/file Source/http Source/kafka Filter Variable VariableBuilder Switch Split Join/union CustomNode/for-each " +
		"CustomNode/aggregate-sliding CustomNode/aggregate-tumbling CustomNode/aggregate-hopping CustomNode/aggregate-session " +
		"CustomNode/aggregate-count Sink/collect Sink/file Sink/kafka Sink/stdout Sink/dead-end"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("kinds:\n got %s\nwant %s", got, want)
	}
	if got := RegistryAggregatorNames(r); !reflect.DeepEqual(got, AggregatorNames) {
		t.Errorf("aggregators %v, want %v", got, AggregatorNames)
	}
	if err := r.Register(&Kind{ID: "Filter", NodeType: scenario.TypeFilter, Validate: passThrough, NewOperator: noOperator}); err == nil {
		t.Error("registering Filter twice succeeded")
	}
	if err := NewRegistry().Register(&Kind{ID: "Source/x", NodeType: scenario.TypeSource, Subtype: "y", Validate: passThrough, NewOperator: noOperator}); err == nil {
		t.Error("registering a kind whose id does not match succeeded")
	}
}

func TestAggregatorResultTypes(t *testing.T) {
	r := builtin
	in := map[string]string{ // aggregator -> input type -> result
		"Count": "integer", "CountWhen": "integer", "Average": "float?", "Min": "string?", "First": "string?",
		"List": "list(string)", "Set": "list(string)", "CountDistinct": "integer", "ApproximateSetCardinality": "integer",
		"Median": "float?", "P99": "float?", "VarSamp": "float?", "StddevPop": "float?",
	}
	for name, want := range in {
		a, _ := r.Aggregator(name)
		if got := a.ResultType(stringType).String(); got != want {
			t.Errorf("%s(string) = %s, want %s", name, got, want)
		}
	}
	sum, _ := r.Aggregator("Sum")
	for input, want := range map[string]string{"integer": "integer", "float": "float", "number": "number"} {
		if got := sum.ResultType(typeNamed(input)).String(); got != want {
			t.Errorf("Sum(%s) = %s, want %s", input, got, want)
		}
	}
}

func TestAggregationParameters(t *testing.T) {
	agg := func(items string) *scenario.Scenario {
		k, _ := builtin.Kind("CustomNode/aggregate-sliding")
		n := minimalNode(k, func(p ParamSpec) bool { return p.Required && p.Name != "aggregations" })
		n.Parameters = append(n.Parameters, scenario.Parameter{Name: "aggregations", Value: json.RawMessage(items)})
		return inGraph(k, n)
	}
	tests := []struct {
		items string
		field string
		code  string
	}{
		{`[]`, "aggregations", CodeMissingParameter},
		{`{}`, "aggregations", CodeInvalidParameter},
		{`[1]`, "aggregations[0]", CodeInvalidParameter},
		{`[{"aggregator": "Count"}]`, "aggregations[0].name", CodeMissingParameter},
		{`[{"name": "a b", "aggregator": "Count"}]`, "aggregations[0].name", CodeInvalidName},
		{`[{"name": "a", "aggregator": "Count"}, {"name": "a", "aggregator": "Count"}]`, "aggregations[1].name", CodeDuplicateName},
		{`[{"name": "a", "aggregator": "Sum"}]`, "aggregations[0].aggregateBy", CodeMissingParameter},
		{`[{"name": "a", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "'x'"}}]`, "aggregations[0].aggregateBy", "result-type"},
		{`[{"name": "a", "aggregator": "Max", "aggregateBy": {"language": "expr", "expression": "[1]"}}]`, "aggregations[0].aggregateBy", "result-type"},
		{`[{"name": "a", "aggregator": "Sum", "aggregateBy": "#input.x"}]`, "aggregations[0].aggregateBy", CodeInvalidParameter},
		{`[{"name": "a", "aggregator": "Percentile", "aggregateBy": {"language": "expr", "expression": "1"}}]`, "aggregations[0].quantile", CodeMissingParameter},
		{`[{"name": "a", "aggregator": "Percentile", "quantile": 1.5, "aggregateBy": {"language": "expr", "expression": "1"}}]`, "aggregations[0].quantile", CodeInvalidParameter},
		{`[{"name": "a", "aggregator": "ApproximateSetCardinality", "precision": 19, "aggregateBy": {"language": "expr", "expression": "1"}}]`, "aggregations[0].precision", CodeInvalidParameter},
		{`[{"name": "a", "aggregator": "ApproximateSetCardinality", "precision": 4.5, "aggregateBy": {"language": "expr", "expression": "1"}}]`, "aggregations[0].precision", CodeInvalidParameter},
		{`[{"name": "a", "aggregator": "Count", "quantile": 0.5}]`, "aggregations[0].quantile", scenario.CodeUnknownField},
	}
	for _, tt := range tests {
		v := validate(agg(tt.items))
		if !hasProblem(v.Errors, "n", tt.field, tt.code) {
			t.Errorf("aggregations %s: want %s on %s, got %v", tt.items, tt.code, tt.field, v.Errors)
		}
	}
	// Count ignores aggregateBy, with a warning.
	v := validate(agg(`[{"name": "a", "aggregator": "Count", "aggregateBy": {"language": "expr", "expression": "1"}}]`))
	if !v.OK() || !hasProblem(v.Warnings, "n", "aggregations[0].aggregateBy", CodeIgnoredAggregateBy) {
		t.Errorf("Count with aggregateBy: %v %v", v.Errors, v.Warnings)
	}
}

func TestWindowParameters(t *testing.T) {
	counts := func(n int) []map[string]any {
		var l []map[string]any
		for i := range n {
			l = append(l, map[string]any{"name": fmt.Sprintf("c%d", i), "aggregator": "Count"})
		}
		return l
	}
	node := func(kind string, params map[string]any) *scenario.Scenario {
		k, _ := builtin.Kind("CustomNode/" + kind)
		n := minimalNode(k, func(p ParamSpec) bool { return p.Required && params[p.Name] == nil })
		for name, val := range params {
			raw, _ := json.Marshal(val)
			n.Parameters = append(n.Parameters, scenario.Parameter{Name: name, Value: raw})
		}
		return inGraph(k, n)
	}
	tests := []struct {
		kind   string
		params map[string]any
		field  string
		code   string // "" for valid
	}{
		{engine.AggregateSliding, map[string]any{"windowLength": "90s"}, "", ""}, // default precision 1s
		{engine.AggregateSliding, map[string]any{"windowLength": "1500ms"}, "windowLength", CodeNotMultipleOfPrec},
		{engine.AggregateSliding, map[string]any{"windowLength": "1500ms", "precision": "500ms"}, "", ""},
		{engine.AggregateSliding, map[string]any{"windowLength": "500ms"}, "windowLength", CodeShorterThanPrecision},
		{engine.AggregateSliding, map[string]any{"windowLength": "0s"}, "windowLength", CodeInvalidDuration},
		{engine.AggregateSliding, map[string]any{"windowLength": "-1h"}, "windowLength", CodeInvalidDuration},
		{engine.AggregateSliding, map[string]any{"windowLength": "1h", "precision": "0s"}, "precision", CodeInvalidDuration},
		{engine.AggregateSliding, map[string]any{"windowLength": "1h", "emitWhenEventLeft": "yes"}, "emitWhenEventLeft", CodeInvalidParameter},
		{engine.AggregateTumbling, map[string]any{"windowLength": "1d", "timeZone": "Europe/Warsaw", "offset": "PT6H"}, "", ""},
		{engine.AggregateTumbling, map[string]any{"windowLength": "1h", "offset": "1h"}, "offset", CodeOffsetOutOfRange},
		{engine.AggregateTumbling, map[string]any{"windowLength": "1h", "timeZone": "Local"}, "timeZone", CodeInvalidTimeZone},
		{engine.AggregateTumbling, map[string]any{"windowLength": "1d", "timeZone": "localtime"}, "timeZone", CodeInvalidTimeZone},
		{engine.AggregateTumbling, map[string]any{"windowLength": "1d", "timeZone": "posixrules"}, "timeZone", CodeInvalidTimeZone},
		{engine.AggregateTumbling, map[string]any{"windowLength": "1h", "emitWhen": "OnEndWithExtraWindow"}, "", ""},
		{engine.AggregateHopping, map[string]any{"windowLength": "2m", "slide": "30s"}, "", ""}, // precision = the slide, 30s
		{engine.AggregateHopping, map[string]any{"windowLength": "2m", "slide": "30s", "precision": "1m"}, "slide", CodeSlideNotMultiple},
		{engine.AggregateHopping, map[string]any{"windowLength": "1m", "slide": "5m"}, "windowLength", CodeNotMultipleOfSlide},
		{engine.AggregateSession, map[string]any{"sessionTimeout": "30s", "precision": "1m"}, "sessionTimeout", CodeShorterThanPrecision},
		{engine.AggregateSession, map[string]any{"sessionTimeout": "30m", "emitWhen": "OnEndWithExtraWindow"}, "emitWhen", CodeInvalidEnum},
		{engine.AggregateCount, map[string]any{"windowLength": 3, "slide": 4}, "slide", CodeSlideOutOfRange},
		{engine.AggregateCount, map[string]any{"windowLength": 0}, "windowLength", CodeInvalidParameter},
		// Count-slices per key: windowLength / gcd(windowLength, slide), at most 10,000.
		{engine.AggregateCount, map[string]any{"windowLength": 1_000_000_000, "slide": 1}, "windowLength", CodeTooManySlices}, // 10^9 slices
		{engine.AggregateCount, map[string]any{"windowLength": 1_000_000_000_000_000_000}, "", ""},                            // slide 10^18 too: 1 slice
		{engine.AggregateCount, map[string]any{"windowLength": 10_000, "slide": 1}, "", ""},                                   // 10,000 slices
		{engine.AggregateCount, map[string]any{"windowLength": 10_001, "slide": 1}, "windowLength", CodeTooManySlices},
		{engine.AggregateCount, map[string]any{"windowLength": 20_000, "slide": 2}, "", ""},                            // gcd 2: 10,000
		{engine.AggregateCount, map[string]any{"windowLength": 20_001, "slide": 2}, "windowLength", CodeTooManySlices}, // gcd 1: 20,001
		{engine.AggregateCount, map[string]any{"windowLength": 30_000, "slide": 20_000}, "", ""},                       // gcd 10,000: 3
		{engine.AggregateCount, map[string]any{"windowLength": 2.5}, "windowLength", CodeInvalidParameter},
		// Cells per key: count-slices × aggregations, at most 262,144 (2^18).
		{engine.AggregateCount, map[string]any{"windowLength": 10_000, "slide": 1, "aggregations": counts(26)}, "", ""}, // 260,000
		{engine.AggregateCount, map[string]any{"windowLength": 10_000, "slide": 1, "aggregations": counts(27)}, "aggregations", CodeTooManySlices},
		{engine.AggregateCount, map[string]any{"windowLength": 100, "slide": 1, "aggregations": counts(2_621)}, "", ""}, // 262,100
		{engine.AggregateCount, map[string]any{"windowLength": 100, "slide": 1, "aggregations": counts(2_622)}, "aggregations", CodeTooManySlices},
	}
	for _, tt := range tests {
		v := validate(node(tt.kind, tt.params))
		switch {
		case tt.code == "" && !v.OK():
			t.Errorf("%s %v: %v", tt.kind, tt.params, v.Errors)
		case tt.code != "" && !hasProblem(v.Errors, "n", tt.field, tt.code):
			t.Errorf("%s %v: want %s on %s, got %v", tt.kind, tt.params, tt.code, tt.field, v.Errors)
		}
	}
}

func TestScopesOfAggregates(t *testing.T) {
	// Which variables are certain below each aggregate mode.
	tests := []struct {
		kind   string
		params map[string]any
		want   string
	}{
		{engine.AggregateSliding, nil, "input key meta out"},
		{engine.AggregateSliding, map[string]any{"emitWhenEventLeft": true}, "key meta out"},
		{engine.AggregateTumbling, map[string]any{"emitWhen": "OnEvent"}, "input key meta out"},
		{engine.AggregateTumbling, map[string]any{"emitWhen": "OnEnd"}, "key meta out window"},
		{engine.AggregateTumbling, nil, "key meta out window"}, // OnEnd is the default
		{engine.AggregateHopping, nil, "key meta out window"},
		{engine.AggregateSession, map[string]any{"emitWhen": "OnEvent"}, "input key meta out"},
		{engine.AggregateSession, nil, "key meta out window"},
		{engine.AggregateCount, nil, "key meta out window"},
	}
	for _, tt := range tests {
		k, _ := builtin.Kind("CustomNode/" + tt.kind)
		n := minimalNode(k, func(p ParamSpec) bool { return p.Required })
		for name, val := range tt.params {
			raw, _ := json.Marshal(val)
			n.Parameters = append(n.Parameters, scenario.Parameter{Name: name, Value: raw})
		}
		v := validate(inGraph(k, n))
		if !v.OK() {
			t.Errorf("%s %v: %v", tt.kind, tt.params, v.Errors)
			continue
		}
		if got := strings.Join(v.Variables["sink"].Names(), " "); got != tt.want {
			t.Errorf("%s %v: scope below %q, want %q", tt.kind, tt.params, got, tt.want)
		}
	}
}

func TestDocExampleIsValid(t *testing.T) {
	src, err := readDocExample("../scenario/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	v := validateJSON(src)
	if !v.OK() || len(v.Warnings) > 0 {
		t.Errorf("the example in scenario/doc.go: %v %v\n%s", v.Errors, v.Warnings, src)
	}
}

func ExampleRegistry_ValidateJSON() {
	v := engine.Default().ValidateJSON([]byte(`{
  "nodes": [
    {"id": "src", "type": "Source", "ref": {"typ": "http"}},
    {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "#input.amount > 10 &&\n  #inptu.ok"}},
    {"id": "out", "type": "Sink", "ref": {"typ": "dead-end"}}
  ],
  "edges": [
    {"from": "src", "to": "f", "edgeType": null},
    {"from": "f", "to": "out", "edgeType": {"type": "FilterTrue"}}
  ]
}`))
	for _, p := range v.Errors {
		fmt.Println(p)
	}
	fmt.Println(v.Variables["f"].Names())
	// Output:
	// node "f", field "expression", 2:3: unknown variable #inptu (did you mean #input?) (unknown-variable)
	// [input meta]
}
