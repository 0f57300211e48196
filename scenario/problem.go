package scenario

import (
	"fmt"
	"sort"
	"strings"

	"github.com/scenario-server/scenario-server/internal/names"
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

// The bounds of a validation report (Result.Bound): a scenario within every limit could
// make a report of 300 MB (3,000 expressions each naming a field of a record of 100 long
// field names, each message listing them all; 1,444 cycles each listing a path of 500 long
// ids), which a viewer's unread answers held until the server ran out of memory (a hostile
// round). The first problems, in node order, are kept whole.
const (
	// MaxProblemMessage is the most bytes of one problem's message; a longer one is cut
	// ("... (N bytes more)").
	MaxProblemMessage = 2 << 10
	// MaxProblems is the most problems, errors and warnings together, a report lists.
	MaxProblems = 1_000
	// MaxProblemBytes is the most bytes of messages, node ids, fields and codes a report lists.
	MaxProblemBytes = 1 << 20
)

// CutMessages cuts each message, and each field (a JSON path naming what the input named), to
// MaxProblemMessage bytes. Validation does it to what it finds; the problems themselves, and
// their codes, stay: what is built or refused depends on them, not on how many a report shows
// (Bound).
func (r *Result) CutMessages() {
	for _, list := range [][]Problem{r.Errors, r.Warnings} {
		for i := range list {
			if p := &list[i]; len(p.Message) > MaxProblemMessage || len(p.Field) > MaxProblemMessage {
				p.Message = names.Cut(p.Message, MaxProblemMessage)
				p.Field = names.Cut(p.Field, MaxProblemMessage)
			}
		}
	}
}

// Bound is what a report (an answer) shows of r: each message cut to MaxProblemMessage bytes,
// and the first problems (errors first, then warnings) while they are within MaxProblems and
// MaxProblemBytes; when it leaves any out it adds the warning CodeProblemsTruncated saying
// how many. A result with errors keeps at least one. It changes r's lists in place.
func (r *Result) Bound() {
	r.CutMessages()
	n, bytes := 0, 0
	keep := func(list []Problem) ([]Problem, int) {
		for i := range list {
			p := &list[i]
			size := len(p.Message) + len(p.NodeID) + len(p.Field) + len(p.Code) + 64
			if n > 0 && (n+1 > MaxProblems || bytes+size > MaxProblemBytes) {
				return list[:i:i], len(list) - i
			}
			n, bytes = n+1, bytes+size
		}
		return list, 0
	}
	var leftErrors, leftWarnings int
	r.Errors, leftErrors = keep(r.Errors)
	r.Warnings, leftWarnings = keep(r.Warnings)
	if leftErrors+leftWarnings > 0 {
		r.Warnings = append(r.Warnings, Problem{Code: CodeProblemsTruncated, Message: fmt.Sprintf(
			"%d more errors and %d more warnings are not reported: the report lists at most %d problems and %d bytes of them",
			leftErrors, leftWarnings, MaxProblems, MaxProblemBytes)})
	}
}

// Codes of the problems found by Decode and Validate.
const (
	// CodeProblemsTruncated: a warning that the report leaves problems out (Result.Bound).
	CodeProblemsTruncated = "problems-truncated"

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
