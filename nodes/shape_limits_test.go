package nodes_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/expression"
	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// TestNodeIDsInURLs: which ids validate as one URL path segment. The ids refused are those a
// client or proxy changes ("." and ".." are removed, '/' splits the segment) or that JSON
// cannot carry back (invalid UTF-8); the API test TestUnusualNodeIDReachable sends events to
// accepted ones through real HTTP.
func TestNodeIDsInURLs(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"payments", true},
		{"a b", true},
		{"café ☕", true},
		{"50%", true},
		{"a?b#c", true},
		{"...", true}, // not a dot segment
		{".hidden", true},
		{`back\slash`, true},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"/", false},
		{"bad\xffutf8", false},
	} {
		s := variableChain(3, "1")
		s.Nodes[1].ID = tc.id
		s.Edges[0].To, s.Edges[1].From = tc.id, tc.id
		v := validate(s)
		var idErrors []scenario.Problem
		for _, p := range v.Errors {
			if p.Code == scenario.CodeInvalidNodeID {
				idErrors = append(idErrors, p)
			}
		}
		if tc.ok {
			if !v.OK() {
				t.Errorf("id %q: %v", tc.id, v.Errors)
			}
			continue
		}
		if len(idErrors) != 1 || idErrors[0].NodeID != tc.id || idErrors[0].Field != "id" {
			t.Errorf("id %q: want one %s on its id, got %v", tc.id, scenario.CodeInvalidNodeID, v.Errors)
			continue
		}
		if got := v.LimitErrors(); len(got) != 1 || got[0] != idErrors[0] {
			t.Errorf("id %q: limit errors %v", tc.id, got)
		}
	}
}

// TestLimitClass: the limit class holds the size, id, window-shape and expression-limit codes,
// and nothing a draft may have while it is being edited.
func TestLimitClass(t *testing.T) {
	for _, code := range []string{scenario.CodeTooManyNodes, scenario.CodeTooManyScenarioEdges, scenario.CodeInvalidNodeID,
		CodeTooManySlices, CodeTooManyWindows, CodeExpressionsTooLarge, expression.CodeTooLong, expression.CodeTooDeep, expression.CodeTooLarge} {
		if !IsLimit(code) {
			t.Errorf("%s is not of the limit class", code)
		}
	}
	for _, code := range []string{"expression-type", "expression-syntax", "unknown-variable", scenario.CodeMissingOutput,
		CodeNotMultipleOfPrec, CodeMissingParameter, CodeReadsClock} {
		if IsLimit(code) {
			t.Errorf("%s is of the limit class", code)
		}
	}
	// A type error is not a limit: the draft validates with errors, none of them limits.
	v := validate(variableChain(3, `"a" + 1`))
	if v.OK() || len(v.LimitErrors()) != 0 {
		t.Errorf("a type error: errors %v, limit errors %v", v.Errors, v.LimitErrors())
	}
	// An expression nested past the compile limit is, at its node and field.
	v = validate(variableChain(3, strings.Repeat("(", 1000)+"1"+strings.Repeat(")", 1000)))
	if got := v.LimitErrors(); len(got) != 1 || got[0].Code != expression.CodeTooDeep || got[0].NodeID != "v1" || got[0].Field != "value" {
		t.Errorf("a deep expression: limit errors %v", got)
	}
	// Too many nodes is.
	v = validate(variableChain(scenario.MaxNodes+1, "1"))
	if got := v.LimitErrors(); len(got) != 1 || got[0].Code != scenario.CodeTooManyNodes {
		t.Errorf("too many nodes: limit errors %v", got)
	}
}

// TestScenarioExpressionBytes: a chain of 5 variables, each `"<60,000 x>" != ""` (60,008
// bytes, and 16 an expression): 4 of them count 240,096 bytes, within
// MaxScenarioExpressionBytes (262,144); the 5th makes 300,120, a limit error at v5's value, and
// nothing after it is compiled (v6's type error is not reported). One variable less, no error.
func TestScenarioExpressionBytes(t *testing.T) {
	long := `"` + strings.Repeat("x", 60_000) + `" != ""`
	chain := func(n int) *scenario.Scenario {
		s := variableChain(n+3, "1")
		for i := 1; i <= n; i++ {
			s.Nodes[i].Value = scenario.Expr(long)
		}
		s.Nodes[n+1].Value = scenario.Expr(`"a" + 1`) // a type error
		return s
	}
	v := validate(chain(5))
	if len(v.Errors) != 1 || v.Errors[0].Code != CodeExpressionsTooLarge || v.Errors[0].NodeID != "v5" || v.Errors[0].Field != "value" ||
		!strings.Contains(v.Errors[0].Message, "(300120 with this one") {
		t.Errorf("5 long expressions: %v", v.Errors)
	}
	if got := v.LimitErrors(); len(got) != 1 {
		t.Errorf("limit errors %v, want the one", got)
	}
	v = validate(chain(4))
	if len(v.Errors) != 1 || v.Errors[0].Code != "expression-type" || v.Errors[0].NodeID != "v5" {
		t.Errorf("4 long expressions: %v; want only v5's type error", v.Errors)
	}
}

// The types of the variables an expression names count toward MaxScenarioExpressionBytes, a
// byte for each 2 parts (round 20: 490 expressions `#r0`, r0 a record of 9,000 fields, cost
// 1.45 GB to validate, 29 KB of text). The source's schema makes #input a record of 2,000
// integer fields; each variable `#input` counts its 6 bytes, 16, and (1 + 2,000) / 2 = 1,000
// for the type it names: 1,022. 256 of them count 261,632 bytes, within 262,144; the 257th
// (v257) makes 262,654, the limit error. Before, the 260 of them counted 1,560 bytes.
func TestScenarioExpressionTypesCount(t *testing.T) {
	props := map[string]any{}
	for i := range 2000 {
		props[fmt.Sprintf("f%d", i)] = map[string]any{"type": "integer"}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		t.Fatal(err)
	}
	s := variableChain(262, "#input")
	s.Nodes[0].Ref.Parameters = []scenario.Parameter{{Name: "schema", Value: schema}}
	for i := 1; i <= 260; i++ {
		s.Nodes[i].Value = scenario.Expr("#input")
	}
	v := validate(s)
	if len(v.Errors) != 1 || v.Errors[0].Code != CodeExpressionsTooLarge || v.Errors[0].NodeID != "v257" ||
		!strings.Contains(v.Errors[0].Message, "(262654 with this one") {
		t.Errorf("260 variables #input of 2,000 fields: %v; want the limit error at v257, 262,654 bytes", v.Errors)
	}
}
