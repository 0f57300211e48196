package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one validation error or warning, located as precisely as
// possible.
//
// NodeID is the node the problem belongs to ("" for the scenario as a whole).
// Field names the node's field or parameter: "expression", "windowLength",
// "aggregations[1].aggregateBy", "edges[3].to" (an index into the scenario's
// edges; edge problems belong to the edge's From node). When NodeID is ""
// because the node has no usable id, Field is the full JSON path instead
// ("nodes[2].type").
//
// Line and Column (both 1-based, the column counted in Unicode code points)
// point into the text that Field holds: into the expression as the user
// wrote it for expression problems, into the scenario JSON for decoding
// problems. They are 0 when there is no text position.
//
// Code is stable and meant for programs; Message is for people.
type Problem struct {
	NodeID  string `json:"nodeId,omitempty"`
	Field   string `json:"field,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	// Authoring marks a rule that keeps new text tidy rather than one the run needs (node ids
	// that look alike: invisible characters, a spelling not in NFC). Such a rule may be newer
	// than a version already deployed: a deployment resumed from the store is built despite
	// it (engine.Options.Stored), while a new deploy, validation and the designer show it as
	// any other error. Not part of the JSON: the code says the same to programs.
	Authoring bool `json:"-"`
}

// Error formats the problem as `node "f", field "expression", 2:7: message (code)`.
func (p Problem) Error() string {
	var b strings.Builder
	if p.NodeID != "" {
		fmt.Fprintf(&b, "node %q, ", p.NodeID)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q, ", p.Field)
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Column)
	}
	fmt.Fprintf(&b, "%s (%s)", p.Message, p.Code)
	return b.String()
}

// Result is the outcome of validating a scenario. A scenario with no Errors
// can be deployed; Warnings point at likely mistakes that do not stop it.
// Both lists are never nil, so that they encode as [] in JSON.
type Result struct {
	Errors   []Problem `json:"errors"`
	Warnings []Problem `json:"warnings"`
}

// NewResult returns an empty Result.
func NewResult() Result {
	return Result{Errors: []Problem{}, Warnings: []Problem{}}
}

// OK reports whether there are no errors.
func (r *Result) OK() bool { return len(r.Errors) == 0 }

// Merge appends the problems of o to r.
func (r *Result) Merge(o Result) {
	r.Errors = append(r.Errors, o.Errors...)
	r.Warnings = append(r.Warnings, o.Warnings...)
}

// Sort orders the problems by the position of their node in s (problems of
// the scenario as a whole, and of nodes s does not have, first), keeping the
// order in which they were found within a node. Validation finds them in a
// fixed order, so the result is deterministic.
func (r *Result) Sort(s *Scenario) {
	index := map[string]int{}
	if s != nil {
		for i, n := range s.Nodes {
			if _, seen := index[n.ID]; !seen {
				index[n.ID] = i
			}
		}
	}
	key := func(p Problem) int {
		if i, ok := index[p.NodeID]; ok && p.NodeID != "" {
			return i
		}
		return -1
	}
	for _, list := range [][]Problem{r.Errors, r.Warnings} {
		sort.SliceStable(list, func(i, j int) bool { return key(list[i]) < key(list[j]) })
	}
}

// Codes of the problems found by Decode and Validate.
const (
	// Decoding.
	CodeInvalidJSON     = "invalid-json"      // not JSON at all; Line/Column in the JSON text
	CodeUnknownField    = "unknown-field"     // a field this format does not have
	CodeDuplicateField  = "duplicate-field"   // the same field twice in one object
	CodeWrongType       = "wrong-type"        // e.g. a number where a string belongs
	CodeMissingField    = "missing-field"     // a required field is absent
	CodeUnknownNodeType = "unknown-node-type" // "type" is not one of NodeTypes

	// Structure.
	CodeNoSource            = "no-source"
	CodeMissingNodeID       = "missing-node-id"
	CodeInvalidNodeID       = "invalid-node-id"
	CodeDuplicateNodeID     = "duplicate-node-id"
	CodeEdgeFromMissingNode = "edge-from-missing-node"
	CodeEdgeToMissingNode   = "edge-to-missing-node"
	CodeEdgeToSource        = "edge-to-source"
	CodeEdgeFromSink        = "edge-from-sink"
	CodeDuplicateEdge       = "duplicate-edge"
	CodeUnexpectedEdgeType  = "unexpected-edge-type"
	CodeMissingCondition    = "missing-condition"
	CodeFilterTrueMissing   = "filter-true-edge-missing"
	CodeTooManyEdges        = "too-many-edges"
	CodeMissingOutput       = "missing-output"
	CodeMultipleInputs      = "multiple-inputs"
	CodeCycle               = "cycle"
	CodeUnreachableNode     = "unreachable-node"

	// Size: more than MaxNodes nodes or MaxEdges edges. When either is
	// reported, nothing else is checked.
	CodeTooManyNodes         = "too-many-nodes"
	CodeTooManyScenarioEdges = "too-many-edges-in-scenario"
)
