package nodes_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// variableChain is a Source, n-2 Variable nodes v1..v(n-2) (each adding a
// variable, so scopes grow along the chain: the case whose report grew
// with the square of n) and a Sink: n nodes, n-1 edges. value is the
// expression of the first Variable; the others are 1.
func variableChain(n int, value string) *scenario.Scenario {
	s := &scenario.Scenario{Nodes: []scenario.Node{{ID: "src", Type: scenario.TypeSource, Ref: &scenario.Ref{Typ: "http"}}}}
	prev := "src"
	for i := 1; i <= n-2; i++ {
		id := fmt.Sprintf("v%d", i)
		e := "1"
		if i == 1 {
			e = value
		}
		s.Nodes = append(s.Nodes, scenario.Node{ID: id, Type: scenario.TypeVariable, VarName: id, Value: scenario.Expr(e)})
		s.Edges = append(s.Edges, scenario.Edge{From: prev, To: id})
		prev = id
	}
	s.Nodes = append(s.Nodes, scenario.Node{ID: "out", Type: scenario.TypeSink, Ref: &scenario.Ref{Typ: "dead-end"}})
	s.Edges = append(s.Edges, scenario.Edge{From: prev, To: "out"})
	return s
}

// reportSize is the size of v.Variables as MaxScopeReport counts it.
func reportSize(v *Validation) int {
	n := 0
	for _, env := range v.Variables {
		for _, t := range env {
			n += 1 + TypeSize(t, 1<<30)
		}
	}
	return n
}

func TestTooManyNodesChecksNothingElse(t *testing.T) {
	s := variableChain(scenario.MaxNodes+1, "#nothing + 1") // the expression would be an error
	v := validate(s)
	if len(v.Errors) != 1 || v.Errors[0].Code != scenario.CodeTooManyNodes || len(v.Warnings) != 0 {
		t.Fatalf("want only %s, got %v %v", scenario.CodeTooManyNodes, v.Errors, v.Warnings)
	}
	// No scope was worked out and nothing compiled: the cost stays that of
	// reading the input.
	if len(v.Variables) != 0 || len(v.Plans) != 0 || len(v.Order) != 0 {
		t.Errorf("a too large scenario was walked: %d scopes, %d plans, %d ordered", len(v.Variables), len(v.Plans), len(v.Order))
	}
	if v.Variables == nil {
		t.Errorf("Variables is nil; it must encode as {}")
	}
}

func TestLongestChainValidates(t *testing.T) {
	v := validate(variableChain(scenario.MaxNodes, "1"))
	if !v.OK() {
		t.Fatalf("a %d-node chain: %v", scenario.MaxNodes, v.Errors[:min(3, len(v.Errors))])
	}
	if len(v.Order) != scenario.MaxNodes {
		t.Errorf("%d nodes ordered, want %d", len(v.Order), scenario.MaxNodes)
	}
	// Its full report would be about MaxNodes²/2 variables: it is cut at
	// MaxScopeReport, with a warning, the earlier nodes kept whole.
	if size := reportSize(v); size > MaxScopeReport {
		t.Errorf("report size %d > %d", size, MaxScopeReport)
	}
	if len(v.Warnings) != 1 || v.Warnings[0].Code != CodeScopeReportTruncated || v.Warnings[0].NodeID != "" {
		t.Fatalf("want one %s warning, got %v", CodeScopeReportTruncated, v.Warnings)
	}
	if _, ok := v.Variables["v1"]; !ok {
		t.Errorf("the first nodes' scopes are missing")
	}
	if _, ok := v.Variables["out"]; ok {
		t.Errorf("the last node's scope is reported")
	}
	for i, id := range v.Order {
		_, ok := v.Variables[id]
		if prevOK := i == 0 || v.Variables[v.Order[i-1]] != nil; ok && !prevOK {
			t.Fatalf("node %s reported after an unreported one", id)
		}
	}
	skipped := scenario.MaxNodes - len(v.Variables)
	if want := fmt.Sprintf("not reported for %d of the %d nodes", skipped, scenario.MaxNodes); !strings.Contains(v.Warnings[0].Message, want) {
		t.Errorf("warning %q does not say %q", v.Warnings[0].Message, want)
	}

	// A short chain is reported whole, without a warning.
	short := validate(variableChain(20, "1"))
	if !short.OK() || len(short.Warnings) != 0 || len(short.Variables) != 20 {
		t.Errorf("20 nodes: %v %v, %d scopes", short.Errors, short.Warnings, len(short.Variables))
	}
}

// TestScopeReportCountsTypeSizes: a large record type in scope everywhere
// counts with its fields, so the report stays bounded even when few
// variables are in scope.
func TestScopeReportCountsTypeSizes(t *testing.T) {
	s := variableChain(300, "1")
	// v1 becomes a VariableBuilder of 400 list fields.
	s.Nodes[1].Type, s.Nodes[1].Value = scenario.TypeVariableBuilder, nil
	for i := range 400 {
		s.Nodes[1].Fields = append(s.Nodes[1].Fields, scenario.RecordField{Name: fmt.Sprintf("f%d", i), Expression: scenario.Expr("[1, 2]")})
	}
	v := validate(s)
	if !v.OK() {
		t.Fatalf("%v", v.Errors[:min(3, len(v.Errors))])
	}
	if size := reportSize(v); size > MaxScopeReport {
		t.Errorf("report size %d > %d", size, MaxScopeReport)
	}
	// Each scope below v1 counts over 800 (v1 itself, and per field 1
	// and 1 for the list's element type), so about 60 nodes fit, where
	// counting variables alone would have reported all 300.
	if n := len(v.Variables); n < 50 || n > 65 {
		t.Errorf("%d scopes reported", n)
	}
	if len(v.Warnings) != 1 || v.Warnings[0].Code != CodeScopeReportTruncated {
		t.Errorf("warnings: %v", v.Warnings)
	}
}

func TestTypeSizeStopsAtLimit(t *testing.T) {
	v := validate(variableChain(3, "[[[[1]]]]"))
	typ := v.Variables["out"]["v1"]
	if got := TypeSize(typ, 100); got != 4 {
		t.Errorf("size of %s: %d, want 4", typ, got)
	}
	if got := TypeSize(typ, 2); got <= 2 {
		t.Errorf("size of %s within 2: %d, want more than 2", typ, got)
	}
}

// BenchmarkTooManyNodes shows that refusing a too large scenario is cheap
// (compare BenchmarkLongestChain).
func BenchmarkTooManyNodes(b *testing.B) {
	s := variableChain(10_000, "1")
	b.ReportAllocs()
	for b.Loop() {
		validate(s)
	}
}

func BenchmarkLongestChain(b *testing.B) {
	s := variableChain(scenario.MaxNodes, "1")
	b.ReportAllocs()
	for b.Loop() {
		validate(s)
	}
}

// An expression that calls now() validates, with a warning on its node and field: its value
// depends on when it runs.
func TestNowIsAWarning(t *testing.T) {
	v := validate(variableChain(4, "now()"))
	if !v.OK() {
		t.Fatalf("errors: %v", v.Errors)
	}
	if len(v.Warnings) != 1 || v.Warnings[0].Code != CodeReadsClock || v.Warnings[0].NodeID != "v1" || v.Warnings[0].Field != "value" {
		t.Fatalf("warnings: %+v, want one %s on v1 value", v.Warnings, CodeReadsClock)
	}
	if w := validate(variableChain(4, "1")).Warnings; len(w) != 0 {
		t.Errorf("warnings without now(): %+v", w)
	}
}

// TestVariableTypeBounded: a chain of record variables r1..r21, each {f0: #r<i-1>, f1:
// #r<i-1>} (r1 {f0: 1, f1: 1}), has types of 2^(i+1) - 2 parts: r12 8,190, r13 16,382, past
// MaxTypeParts (10,000): one type-too-large error at r13 (a limit), which is then unknown, so
// r14 is 2 parts again and the chain validates at once (it took seconds a node more, and
// 21 nodes ran a server out of memory).
func TestVariableTypeBounded(t *testing.T) {
	s := variableChain(23, "1")
	for i := 1; i <= 21; i++ {
		n := &s.Nodes[i]
		n.Type, n.Value, n.VarName = scenario.TypeVariableBuilder, nil, fmt.Sprintf("r%d", i)
		ref := fmt.Sprintf("#r%d", i-1)
		if i == 1 {
			ref = "1"
		}
		n.Fields = []scenario.RecordField{{Name: "f0", Expression: scenario.Expr(ref)}, {Name: "f1", Expression: scenario.Expr(ref)}}
	}
	v := validate(s)
	if len(v.Errors) != 1 || v.Errors[0].Code != CodeTypeTooLarge || v.Errors[0].NodeID != "v13" || !IsLimit(CodeTypeTooLarge) {
		t.Fatalf("errors %v, want one %s at v13", v.Errors, CodeTypeTooLarge)
	}
	if got := TypeSize(v.Variables["v13"]["r12"], 1<<20); got != 8190 {
		t.Errorf("r12 has %d parts, want 8,190", got)
	}
}
