package scenario

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func src(id string) Node  { return Node{ID: id, Type: TypeSource, Ref: &Ref{Typ: "http"}} }
func sink(id string) Node { return Node{ID: id, Type: TypeSink, Ref: &Ref{Typ: "dead-end"}} }
func node(id string, t NodeType) Node {
	return Node{ID: id, Type: t}
}
func edge(from, to string) Edge { return Edge{From: from, To: to} }
func typed(from, to, et string) Edge {
	return Edge{From: from, To: to, EdgeType: &EdgeType{Type: et}}
}
func cond(from, to, expr string) Edge {
	return Edge{From: from, To: to, EdgeType: &EdgeType{Type: EdgeNextSwitch, Condition: Expr(expr)}}
}

func TestValidateStructure(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		edges []Edge
		want  []Problem // codes, node ids and fields; messages are checked by the golden files
	}{
		{"valid chain", []Node{src("s"), node("v", TypeVariable), sink("o")},
			[]Edge{edge("s", "v"), edge("v", "o")}, nil},
		{"empty scenario", nil, nil, []Problem{{Code: CodeNoSource}}},
		{"missing id", []Node{src("s"), {Type: TypeSplit}, sink("o")},
			[]Edge{edge("s", "o")}, []Problem{{Field: "nodes[1].id", Code: CodeMissingNodeID}}},
		{"control character in id", []Node{src("s\n"), sink("o")},
			[]Edge{edge("s\n", "o")}, []Problem{{NodeID: "s\n", Field: "id", Code: CodeInvalidNodeID}}},
		// 128 characters (ä is two bytes, one character) pass; 129 do not.
		{"longest id", []Node{src(strings.Repeat("ä", 128)), sink("o")},
			[]Edge{edge(strings.Repeat("ä", 128), "o")}, nil},
		{"id too long", []Node{src(strings.Repeat("ä", 129)), sink("o")},
			[]Edge{edge(strings.Repeat("ä", 129), "o")}, []Problem{{NodeID: strings.Repeat("ä", 129), Field: "id", Code: CodeInvalidNodeID}}},
		{"right-to-left override in id", []Node{src("x‮gnp.exe"), sink("o")},
			[]Edge{edge("x‮gnp.exe", "o")}, []Problem{{NodeID: "x‮gnp.exe", Field: "id", Code: CodeInvalidNodeID}}},
		{"zero-width space in id", []Node{src("s"), sink("o​")},
			[]Edge{edge("s", "o​")}, []Problem{{NodeID: "o​", Field: "id", Code: CodeInvalidNodeID}}},
		{"Hangul filler in id", []Node{src("s"), sink("out\u3164")},
			[]Edge{edge("s", "out\u3164")}, []Problem{{NodeID: "out\u3164", Field: "id", Code: CodeInvalidNodeID}}},
		{"combining grapheme joiner in id", []Node{src("s"), sink("out\u034f")},
			[]Edge{edge("s", "out\u034f")}, []Problem{{NodeID: "out\u034f", Field: "id", Code: CodeInvalidNodeID}}},
		{"blank Braille pattern id", []Node{src("s"), sink("\u2800")},
			[]Edge{edge("s", "\u2800")}, []Problem{{NodeID: "\u2800", Field: "id", Code: CodeInvalidNodeID}}},
		{"no-break space in id", []Node{src("s"), sink("o\u00a0x")},
			[]Edge{edge("s", "o\u00a0x")}, []Problem{{NodeID: "o\u00a0x", Field: "id", Code: CodeInvalidNodeID}}},
		{"decomposed accent in id (not NFC)", []Node{src("s"), sink("cafe\u0301")},
			[]Edge{edge("s", "cafe\u0301")}, []Problem{{NodeID: "cafe\u0301", Field: "id", Code: CodeInvalidNodeID}}},
		{"composed accent in id", []Node{src("s"), sink("caf\u00e9")}, []Edge{edge("s", "caf\u00e9")}, nil},
		{"variation selector in id", []Node{src("s"), sink("o\ufe0f")},
			[]Edge{edge("s", "o\ufe0f")}, []Problem{{NodeID: "o\ufe0f", Field: "id", Code: CodeInvalidNodeID}}},
		{"edge into a source", []Node{src("a"), src("b"), sink("o")},
			[]Edge{edge("a", "b"), edge("a", "o"), edge("b", "o")},
			// The edge into b is reported and left out, so a has one output.
			[]Problem{
				{NodeID: "a", Field: "edges[0].to", Code: CodeEdgeToSource},
				{NodeID: "o", Code: CodeMultipleInputs},
			}},
		{"edge from a missing node", []Node{src("s"), sink("o")},
			[]Edge{edge("s", "o"), edge("ghost", "o")},
			[]Problem{{NodeID: "ghost", Field: "edges[1].from", Code: CodeEdgeFromMissingNode}}},
		{"duplicate plain edge", []Node{src("s"), node("sp", TypeSplit), sink("o")},
			[]Edge{edge("s", "sp"), edge("sp", "o"), edge("sp", "o")},
			[]Problem{{NodeID: "sp", Field: "edges[2]", Code: CodeDuplicateEdge}}},
		{"switch edges may repeat a target", []Node{src("s"), node("sw", TypeSwitch), sink("o")},
			[]Edge{edge("s", "sw"), cond("sw", "o", "a"), cond("sw", "o", "b")},
			[]Problem{{NodeID: "o", Code: CodeMultipleInputs}}},
		{"switch with only a default", []Node{src("s"), node("sw", TypeSwitch), sink("o")},
			[]Edge{edge("s", "sw"), typed("sw", "o", EdgeSwitchDefault)}, nil},
		{"switch: two defaults, a plain edge, no condition", []Node{src("s"), node("sw", TypeSwitch), sink("a"), sink("b"), sink("c"), sink("d")},
			[]Edge{edge("s", "sw"), typed("sw", "a", EdgeSwitchDefault), typed("sw", "b", EdgeSwitchDefault), edge("sw", "c"), typed("sw", "d", EdgeNextSwitch)},
			[]Problem{
				{NodeID: "sw", Field: "edges[2]", Code: CodeTooManyEdges},
				{NodeID: "sw", Field: "edges[3].edgeType", Code: CodeUnexpectedEdgeType},
				{NodeID: "sw", Field: "edges[4].edgeType.condition", Code: CodeMissingCondition},
			}},
		{"switch without edges", []Node{src("s"), node("sw", TypeSwitch)},
			[]Edge{edge("s", "sw")}, []Problem{{NodeID: "sw", Code: CodeMissingOutput}}},
		{"filter: two true edges, a condition, a plain edge", []Node{src("s"), node("f", TypeFilter), sink("a"), sink("b"), sink("c")},
			[]Edge{edge("s", "f"), typed("f", "a", EdgeFilterTrue), {From: "f", To: "b", EdgeType: &EdgeType{Type: EdgeFilterTrue, Condition: Expr("x")}}, edge("f", "c")},
			[]Problem{
				{NodeID: "f", Field: "edges[2].edgeType.condition", Code: CodeUnexpectedEdgeType},
				{NodeID: "f", Field: "edges[2]", Code: CodeTooManyEdges},
				{NodeID: "f", Field: "edges[3].edgeType", Code: CodeUnexpectedEdgeType},
			}},
		{"filter edge type on a variable", []Node{src("s"), node("v", TypeVariable), sink("o")},
			[]Edge{edge("s", "v"), typed("v", "o", EdgeFilterTrue)},
			[]Problem{{NodeID: "v", Field: "edges[1].edgeType", Code: CodeUnexpectedEdgeType}, {NodeID: "v", Code: CodeMissingOutput}}},
		{"split and source without outputs", []Node{src("s"), node("sp", TypeSplit), src("t")},
			[]Edge{edge("s", "sp")},
			[]Problem{{NodeID: "sp", Code: CodeMissingOutput}, {NodeID: "t", Code: CodeMissingOutput}}},
		{"join takes several inputs", []Node{src("a"), src("b"), node("j", TypeJoin), sink("o")},
			[]Edge{edge("a", "j"), edge("b", "j"), edge("j", "o")}, nil},
		{"self loop", []Node{src("s"), node("j", TypeJoin), sink("o")},
			[]Edge{edge("s", "j"), edge("j", "j"), edge("j", "o")},
			[]Problem{{NodeID: "j", Field: "edges[2]", Code: CodeTooManyEdges}, {NodeID: "j", Field: "edges[1]", Code: CodeCycle}}},
		{"unreachable cycle", []Node{src("s"), sink("o"), node("a", TypeJoin), node("b", TypeJoin)},
			[]Edge{edge("s", "o"), edge("a", "b"), edge("b", "a")},
			[]Problem{{NodeID: "a", Code: CodeUnreachableNode}, {NodeID: "b", Field: "edges[2]", Code: CodeCycle}, {NodeID: "b", Code: CodeUnreachableNode}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(&Scenario{Nodes: tt.nodes, Edges: tt.edges})
			var got []Problem
			for _, p := range r.Errors {
				got = append(got, Problem{NodeID: p.NodeID, Field: p.Field, Code: p.Code})
				if p.Message == "" {
					t.Errorf("problem without a message: %+v", p)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got %+v\nwant %+v\n(full: %v)", got, tt.want, r.Errors)
			}
		})
	}
}

func TestRulesForEveryType(t *testing.T) {
	for _, typ := range NodeTypes {
		r := RulesFor(typ)
		if r.MaxInputs >= 0 && r.MinInputs > r.MaxInputs {
			t.Errorf("%s: inputs %d..%d", typ, r.MinInputs, r.MaxInputs)
		}
		if typ == TypeSink && len(r.Outputs) != 0 {
			t.Errorf("sinks must have no outputs")
		}
	}
}

func TestValidateSizeLimits(t *testing.T) {
	chain := func(n int) *Scenario {
		s := &Scenario{Nodes: []Node{src("n0")}}
		for i := 1; i < n; i++ {
			s.Nodes = append(s.Nodes, node("n"+strconv.Itoa(i), TypeSplit))
			s.Edges = append(s.Edges, edge("n"+strconv.Itoa(i-1), "n"+strconv.Itoa(i)))
		}
		return s
	}
	codes := func(r Result) []string {
		var out []string
		for _, p := range r.Errors {
			out = append(out, p.Field+":"+p.Code)
		}
		return out
	}

	// At the limit, the usual checks run (the last Split has no output).
	if got := codes(Validate(chain(MaxNodes))); !reflect.DeepEqual(got, []string{":" + CodeMissingOutput}) {
		t.Errorf("%d nodes: %v", MaxNodes, got)
	}
	// One more: only the size error, none of the others (no duplicate-id,
	// edge or missing-output checks ran).
	big := chain(MaxNodes + 1)
	big.Nodes = append(big.Nodes, src("n0")) // a duplicate id, not reported
	if got := codes(Validate(big)); !reflect.DeepEqual(got, []string{"nodes:" + CodeTooManyNodes}) {
		t.Errorf("%d nodes: %v", len(big.Nodes), got)
	}
	if !TooLarge(big) || TooLarge(chain(MaxNodes)) {
		t.Errorf("TooLarge wrong at the limit")
	}
	// Too many edges (all duplicates between two nodes), and both.
	few := &Scenario{Nodes: []Node{src("s"), sink("o")}}
	for range MaxEdges + 1 {
		few.Edges = append(few.Edges, edge("s", "o"))
	}
	if got := codes(Validate(few)); !reflect.DeepEqual(got, []string{"edges:" + CodeTooManyScenarioEdges}) {
		t.Errorf("%d edges: %v", len(few.Edges), got)
	}
	few.Edges = few.Edges[:MaxEdges]
	if got := codes(Validate(few)); len(got) == 0 || got[0] == "edges:"+CodeTooManyScenarioEdges {
		t.Errorf("%d edges: %v", len(few.Edges), got)
	}
	big.Edges = few.Edges[:0:0]
	for range MaxEdges + 1 {
		big.Edges = append(big.Edges, edge("n0", "n1"))
	}
	if got := codes(Validate(big)); !reflect.DeepEqual(got, []string{"nodes:" + CodeTooManyNodes, "edges:" + CodeTooManyScenarioEdges}) {
		t.Errorf("too many of both: %v", got)
	}
}
