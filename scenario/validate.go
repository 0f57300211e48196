package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/scenario-server/scenario-server/internal/names"
)

// EdgeRules says which edges a node type takes and gives.
//
// Inputs: the least and most incoming edges (Max -1: any number).
// Outputs: the outgoing edge types allowed, each with how many edges of that
// type a node must and may have ("" is a plain edge, edgeType null).
type EdgeRules struct {
	MinInputs int          `json:"minInputs"`
	MaxInputs int          `json:"maxInputs"`
	Outputs   []OutputRule `json:"outputs"`
}

// OutputRule is one allowed outgoing edge type. Max -1 means any number.
// Condition is true when edges of this type carry a boolean condition.
type OutputRule struct {
	EdgeType  string `json:"edgeType"`
	Min       int    `json:"min"`
	Max       int    `json:"max"`
	Condition bool   `json:"condition,omitempty"`
}

// RulesFor returns the edge rules of a node type:
//
//	Source                       no inputs, one plain output
//	Sink                         one input, no outputs (sinks end every path)
//	Filter                       one input, one FilterTrue, at most one FilterFalse
//	Switch                       one input, NextSwitch edges (each with a
//	                             condition, tried in edge order) and at most
//	                             one SwitchDefault; at least one in all
//	Split                        one input, one or more plain outputs
//	Join                         one or more inputs, one plain output
//	Variable, VariableBuilder    one input, one plain output
//	CustomNode                   one input, one plain output, at most one
//	                             Late edge (which custom nodes have a Late
//	                             output is the node kind's business: see
//	                             package nodes)
func RulesFor(t NodeType) EdgeRules {
	one := []OutputRule{{EdgeType: "", Min: 1, Max: 1}}
	switch t {
	case TypeSource:
		return EdgeRules{MinInputs: 0, MaxInputs: 0, Outputs: one}
	case TypeSink:
		return EdgeRules{MinInputs: 1, MaxInputs: 1, Outputs: []OutputRule{}}
	case TypeFilter:
		return EdgeRules{MinInputs: 1, MaxInputs: 1, Outputs: []OutputRule{
			{EdgeType: EdgeFilterTrue, Min: 1, Max: 1},
			{EdgeType: EdgeFilterFalse, Min: 0, Max: 1},
		}}
	case TypeSwitch:
		return EdgeRules{MinInputs: 1, MaxInputs: 1, Outputs: []OutputRule{
			{EdgeType: EdgeNextSwitch, Min: 0, Max: -1, Condition: true},
			{EdgeType: EdgeSwitchDefault, Min: 0, Max: 1},
		}}
	case TypeSplit:
		return EdgeRules{MinInputs: 1, MaxInputs: 1, Outputs: []OutputRule{{EdgeType: "", Min: 1, Max: -1}}}
	case TypeJoin:
		return EdgeRules{MinInputs: 1, MaxInputs: -1, Outputs: one}
	case TypeCustomNode:
		return EdgeRules{MinInputs: 1, MaxInputs: 1, Outputs: []OutputRule{
			{EdgeType: "", Min: 1, Max: 1},
			{EdgeType: EdgeLate, Min: 0, Max: 1},
		}}
	}
	return EdgeRules{MinInputs: 1, MaxInputs: 1, Outputs: one}
}

// The most nodes and edges a scenario may have. Validation keeps, per
// node, the variables in scope, so its cost grows faster than the number of
// nodes; these bounds keep it small. See the package documentation.
const (
	MaxNodes = 500
	MaxEdges = 2000
)

// TooLarge reports whether s has more than MaxNodes nodes or more than
// MaxEdges edges.
func TooLarge(s *Scenario) bool {
	return len(s.Nodes) > MaxNodes || len(s.Edges) > MaxEdges
}

// Validate checks the structure of the graph and returns every problem, in
// a deterministic order (see Result.Sort):
//
//   - at most MaxNodes nodes and MaxEdges edges (CodeTooManyNodes,
//     CodeTooManyScenarioEdges); when there are more, these are the only
//     problems reported, and nothing else is looked at;
//   - at least one Source; node ids present, free of control characters and
//     unique (CodeMissingNodeID, CodeInvalidNodeID, CodeDuplicateNodeID);
//   - edges between existing nodes, never into a Source nor out of a Sink,
//     no two plain edges between the same nodes (Switch edges may repeat,
//     with different conditions);
//   - each node's edges as RulesFor says: edge types allowed for the node,
//     conditions on NextSwitch edges only, a FilterTrue edge on every
//     Filter, one output where one is expected (CodeMissingOutput when a
//     path stops before a sink), more than one input only into a Join;
//   - no cycles; every node reachable from a Source.
//
// It does not look inside parameters or expressions; the nodes package
// does, and also checks that no variable is defined twice on a path.
func Validate(s *Scenario) Result {
	r := NewResult()
	if TooLarge(s) {
		if len(s.Nodes) > MaxNodes {
			r.Errors = append(r.Errors, Problem{Field: "nodes", Code: CodeTooManyNodes,
				Message: fmt.Sprintf("the scenario has %d nodes; at most %d are allowed", len(s.Nodes), MaxNodes)})
		}
		if len(s.Edges) > MaxEdges {
			r.Errors = append(r.Errors, Problem{Field: "edges", Code: CodeTooManyScenarioEdges,
				Message: fmt.Sprintf("the scenario has %d edges; at most %d are allowed", len(s.Edges), MaxEdges)})
		}
		return r
	}
	v := &validator{s: s, r: &r}
	v.run()
	r.Sort(s)
	return r
}

type validator struct {
	s *Scenario
	r *Result
	// byID maps an id to the index of its first node.
	byID map[string]int
	// out and in list edge indexes per node index, in edge order. Edges
	// with a missing end are left out.
	out, in [][]int
}

func (v *validator) errorf(nodeID, field, code, format string, args ...any) {
	v.r.Errors = append(v.r.Errors, Problem{NodeID: nodeID, Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// authoringf is errorf for a rule that keeps new text tidy (Problem.Authoring).
func (v *validator) authoringf(nodeID, field, code, format string, args ...any) {
	v.errorf(nodeID, field, code, format, args...)
	v.r.Errors[len(v.r.Errors)-1].Authoring = true
}

func edgeField(i int, suffix string) string {
	f := "edges[" + strconv.Itoa(i) + "]"
	if suffix != "" {
		f += "." + suffix
	}
	return f
}

func (v *validator) run() {
	s := v.s
	v.byID = make(map[string]int, len(s.Nodes))
	sources := 0
	for i, n := range s.Nodes {
		if n.Type == TypeSource {
			sources++
		}
		switch {
		case n.ID == "":
			v.errorf("", "nodes["+strconv.Itoa(i)+"].id", CodeMissingNodeID, "node %d has no id", i)
			continue
		case utf8.RuneCountInString(n.ID) > MaxNodeIDLength:
			v.errorf(n.ID, "id", CodeInvalidNodeID, "node id %q has %d characters, more than %d", names.Cut(n.ID, 120), utf8.RuneCountInString(n.ID), MaxNodeIDLength)
		case strings.IndexFunc(n.ID, unicode.IsControl) >= 0:
			v.errorf(n.ID, "id", CodeInvalidNodeID, "node id %q contains a control character", n.ID)
		case strings.IndexFunc(n.ID, names.IsInvisible) >= 0:
			r, _ := utf8.DecodeRuneInString(n.ID[strings.IndexFunc(n.ID, names.IsInvisible):])
			v.authoringf(n.ID, "id", CodeInvalidNodeID, "node id %q contains an invisible or blank character (%U: direction marks and overrides, zero-width characters, fillers, blanks other than the space), which makes ids that look alike", n.ID, r)
		case !norm.NFC.IsNormalString(n.ID):
			// The two spellings of one letter are one id: é composed (U+00E9) or as e and U+0301.
			v.authoringf(n.ID, "id", CodeInvalidNodeID, "node id %q is not in Unicode normalization form C (NFC): write it %q, with accented letters composed, so that the two spellings of a letter are one id", n.ID, norm.NFC.String(n.ID))
		case strings.HasPrefix(n.ID, ReservedIDPrefix):
			v.errorf(n.ID, "id", CodeInvalidNodeID, "node id %q starts with %q, which the server keeps for its own ids (a deployment's dead letters)", n.ID, ReservedIDPrefix)
		}
		if first, dup := v.byID[n.ID]; dup {
			v.errorf(n.ID, "id", CodeDuplicateNodeID, "node id %q is used by nodes %d and %d", n.ID, first, i)
			continue
		}
		v.byID[n.ID] = i
	}
	if sources == 0 {
		v.errorf("", "", CodeNoSource, "the scenario has no Source node")
	}

	v.out = make([][]int, len(s.Nodes))
	v.in = make([][]int, len(s.Nodes))
	seen := map[[2]string]int{}
	for i, e := range s.Edges {
		from, fromOK := v.byID[e.From]
		to, toOK := v.byID[e.To]
		if !fromOK {
			v.errorf(e.From, edgeField(i, "from"), CodeEdgeFromMissingNode, "edge %d starts at node %q, which does not exist", i, e.From)
		}
		if !toOK {
			v.errorf(e.From, edgeField(i, "to"), CodeEdgeToMissingNode, "edge from %q goes to node %q, which does not exist", e.From, e.To)
		}
		if !fromOK || !toOK {
			continue
		}
		if s.Nodes[to].Type == TypeSource {
			v.errorf(e.From, edgeField(i, "to"), CodeEdgeToSource, "edge from %q goes into source %q; sources take no input", e.From, e.To)
			continue
		}
		key := [2]string{e.From, e.To}
		if prev, dup := seen[key]; dup && s.Nodes[from].Type != TypeSwitch {
			v.errorf(e.From, edgeField(i, ""), CodeDuplicateEdge, "edges %d and %d both go from %q to %q", prev, i, e.From, e.To)
			continue
		}
		seen[key] = i
		v.out[from] = append(v.out[from], i)
		v.in[to] = append(v.in[to], i)
	}

	for i := range s.Nodes {
		if s.Nodes[i].ID == "" || v.byID[s.Nodes[i].ID] != i {
			continue // missing or duplicate id: already reported
		}
		v.checkEdges(i)
	}
	v.checkCycles()
	v.checkReachable()
}

// checkEdges applies RulesFor to node i.
func (v *validator) checkEdges(i int) {
	n := &v.s.Nodes[i]
	if !n.Type.Known() {
		return // reported by Decode
	}
	rules := RulesFor(n.Type)
	if len(v.in[i]) > rules.MaxInputs && rules.MaxInputs >= 0 {
		if rules.MaxInputs == 1 {
			from := make([]string, len(v.in[i]))
			for k, e := range v.in[i] {
				from[k] = strconv.Quote(v.s.Edges[e].From)
			}
			v.errorf(n.ID, "", CodeMultipleInputs, "node %q has %d inputs (from %s); only a Join (union) takes more than one",
				n.ID, len(v.in[i]), strings.Join(from, ", "))
		}
	}
	if n.Type == TypeSink {
		for _, e := range v.out[i] {
			v.errorf(n.ID, edgeField(e, ""), CodeEdgeFromSink, "edge from sink %q to %q: a sink ends its path", n.ID, v.s.Edges[e].To)
		}
		return
	}
	counts := map[string]int{}
	for _, e := range v.out[i] {
		edge := &v.s.Edges[e]
		et := edgeTypeName(edge)
		var rule *OutputRule
		for k := range rules.Outputs {
			if rules.Outputs[k].EdgeType == et {
				rule = &rules.Outputs[k]
			}
		}
		if rule == nil {
			v.errorf(n.ID, edgeField(e, "edgeType"), CodeUnexpectedEdgeType, "%s node %q cannot have %s (allowed: %s)",
				n.Type, n.ID, describeEdgeType(et), allowedEdgeTypes(rules))
			continue
		}
		hasCond := edge.EdgeType != nil && edge.EdgeType.Condition != nil
		switch {
		case rule.Condition && !hasCond:
			v.errorf(n.ID, edgeField(e, "edgeType.condition"), CodeMissingCondition, "NextSwitch edge from %q to %q has no condition", n.ID, edge.To)
		case !rule.Condition && hasCond:
			v.errorf(n.ID, edgeField(e, "edgeType.condition"), CodeUnexpectedEdgeType, "%s takes no condition", describeEdgeType(et))
		}
		counts[et]++
		if rule.Max >= 0 && counts[et] > rule.Max {
			v.errorf(n.ID, edgeField(e, ""), CodeTooManyEdges, "%s node %q already has %d %s, the most it can have", n.Type, n.ID, rule.Max, edgeTypeNoun(et))
		}
	}
	switch n.Type {
	case TypeFilter:
		if counts[EdgeFilterTrue] == 0 {
			v.errorf(n.ID, "", CodeFilterTrueMissing, "filter %q has no FilterTrue edge: events that pass it go nowhere", n.ID)
		}
	case TypeSwitch:
		if len(v.out[i]) == 0 {
			v.errorf(n.ID, "", CodeMissingOutput, "switch %q has no outgoing edge; every path must end in a sink", n.ID)
		}
	default:
		for _, rule := range rules.Outputs {
			if counts[rule.EdgeType] < rule.Min {
				v.errorf(n.ID, "", CodeMissingOutput, "node %q has no outgoing edge; every path must end in a sink", n.ID)
			}
		}
	}
}

func describeEdgeType(et string) string {
	if et == "" {
		return "a " + edgeTypeNoun(et)
	}
	return "an " + edgeTypeNoun(et)
}

func edgeTypeNoun(et string) string {
	if et == "" {
		return "plain edge (edgeType null)"
	}
	return "edge of type " + strconv.Quote(et)
}

func allowedEdgeTypes(rules EdgeRules) string {
	if len(rules.Outputs) == 0 {
		return "none"
	}
	names := make([]string, len(rules.Outputs))
	for i, r := range rules.Outputs {
		names[i] = r.EdgeType
		if names[i] == "" {
			names[i] = "plain"
		}
	}
	return strings.Join(names, ", ")
}

// checkCycles reports each edge that closes a cycle, found by a depth-first
// search from each node in order, following edges in order.
func (v *validator) checkCycles() {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(v.s.Nodes))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		stack = append(stack, i)
		for _, e := range v.out[i] {
			to := v.byID[v.s.Edges[e].To]
			switch color[to] {
			case white:
				visit(to)
			case grey:
				start := len(stack) - 1
				for stack[start] != to {
					start--
				}
				path := make([]string, 0, len(stack)-start+1)
				for _, k := range stack[start:] {
					path = append(path, strconv.Quote(v.s.Nodes[k].ID))
				}
				path = append(path, strconv.Quote(v.s.Nodes[to].ID))
				from := v.s.Nodes[i].ID
				// The path's ids at most about 512 bytes: 1,444 cycles through 500 ids of 128
				// bytes made a validation answer of 92 MB (a hostile round).
				v.errorf(from, edgeField(e, ""), CodeCycle, "edge from %q to %q closes a cycle: %s", from, v.s.Nodes[to].ID, names.Join(path, " → ", 512))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range v.s.Nodes {
		if color[i] == white {
			visit(i)
		}
	}
}

// checkReachable reports nodes that no path from a Source reaches.
func (v *validator) checkReachable() {
	reached := make([]bool, len(v.s.Nodes))
	var queue []int
	for i, n := range v.s.Nodes {
		if n.Type == TypeSource {
			reached[i] = true
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, e := range v.out[i] {
			to := v.byID[v.s.Edges[e].To]
			if !reached[to] {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	for i, n := range v.s.Nodes {
		if reached[i] || n.ID == "" || v.byID[n.ID] != i {
			continue
		}
		v.errorf(n.ID, "", CodeUnreachableNode, "node %q cannot be reached from any source", n.ID)
	}
}

// Graph is the adjacency of a scenario's nodes, for walks over it: In and
// Out hold edge indexes per node index, in edge order, for edges whose ends
// both exist (first node of each id). Nodes with a missing or duplicate id
// have no edges.
type Graph struct {
	ByID map[string]int
	In   [][]int
	Out  [][]int
}

// NewGraph builds the Graph of s.
func NewGraph(s *Scenario) *Graph {
	g := &Graph{ByID: map[string]int{}, In: make([][]int, len(s.Nodes)), Out: make([][]int, len(s.Nodes))}
	for i, n := range s.Nodes {
		if n.ID == "" {
			continue
		}
		if _, dup := g.ByID[n.ID]; !dup {
			g.ByID[n.ID] = i
		}
	}
	for i, e := range s.Edges {
		from, ok1 := g.ByID[e.From]
		to, ok2 := g.ByID[e.To]
		if !ok1 || !ok2 {
			continue
		}
		g.Out[from] = append(g.Out[from], i)
		g.In[to] = append(g.In[to], i)
	}
	return g
}
