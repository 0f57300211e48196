package nodes_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/engine"
	. "github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// sourceNode is an HTTP source (node "n") with the given literal parameters.
func sourceNode(t *testing.T, params map[string]any) *scenario.Scenario {
	t.Helper()
	k, _ := builtin.Kind("Source/http")
	n := minimalNode(k, func(p ParamSpec) bool { return p.Required })
	for name, val := range params {
		raw, err := json.Marshal(val)
		if err != nil {
			t.Fatal(err)
		}
		n.Ref.Parameters = append(n.Ref.Parameters, scenario.Parameter{Name: name, Value: raw})
	}
	return inGraph(k, n)
}

// enforceSchema needs a schema, and a schema it enforces must compile (a $ref that would read
// a file does not); without enforceSchema nothing is compiled and no plan carries a schema.
func TestEnforceSchemaValidation(t *testing.T) {
	amount := map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "number"}}, "required": []any{"amount"}}
	tests := []struct {
		name   string
		params map[string]any
		field  string // "" for valid
		code   string
	}{
		{"enforced without a schema", map[string]any{"enforceSchema": true}, "enforceSchema", CodeInvalidParameter},
		{"not a boolean", map[string]any{"enforceSchema": "yes", "schema": amount}, "enforceSchema", CodeInvalidParameter},
		{"enforced", map[string]any{"enforceSchema": true, "schema": amount}, "", ""},
		{"not enforced, no schema", map[string]any{"enforceSchema": false}, "", ""},
		{"a $ref to a file", map[string]any{"enforceSchema": true, "schema": map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"$ref": "file:///etc/hostname"}}}}, "schema", CodeInvalidSchema},
		{"a bad pattern", map[string]any{"enforceSchema": true, "schema": map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "string", "pattern": "("}}}}, "schema", CodeInvalidSchema},
		// checking {"a": [[[...[1]...]]]} would try both branches at every level: 2^depth
		{"a check exponential in the event's depth", map[string]any{"enforceSchema": true, "schema": map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{
				map[string]any{"$ref": "#/properties/a"}, map[string]any{"$ref": "#/properties/a"}}}}}}}, "schema", CodeInvalidSchema},
	}
	for _, tt := range tests {
		v := validate(sourceNode(t, tt.params))
		switch {
		case tt.code == "" && !v.OK():
			t.Errorf("%s: %v", tt.name, v.Errors)
		case tt.code != "" && !hasProblem(v.Errors, "n", tt.field, tt.code):
			t.Errorf("%s: want %s on %s, got %v", tt.name, tt.code, tt.field, v.Errors)
		}
	}
	for _, enforce := range []bool{false, true} {
		v := validate(sourceNode(t, map[string]any{"enforceSchema": enforce, "schema": amount}))
		if got := v.Plans["n"].Typed.(*engine.SourcePlan).Schema != nil; got != enforce {
			t.Errorf("enforceSchema %v: plan has a schema: %v", enforce, got)
		}
	}
}

// Check says where and why, for each problem; worked by hand from the schema.
func TestEventSchemaCheck(t *testing.T) {
	s, err := CompileEventSchema([]byte(`{"type": "object", "properties": {
		"amount": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
		"a/b": {"type": "integer"}}, "required": ["amount"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ event, want string }{
		{`{"amount": 5}`, ""},
		{`{"amount": 5.5, "tags": ["x"], "a/b": 3}`, ""},
		{`{"amount": "5"}`, "/amount: got string, want number"},
		{`{}`, "/: missing property 'amount'"},
		{`{"amount": 1, "tags": ["x", 2]}`, "/tags/1: got number, want string"},
		{`{"amount": 1, "a/b": 1.5}`, "/a~1b: got number, want integer"},
	}
	for _, tt := range tests {
		err := s.CheckJSON([]byte(tt.event))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.event, got, tt.want)
		}
	}
	// Many problems: three listed, then how many more.
	err = s.CheckJSON([]byte(`{"amount": "x", "tags": [1, 2, 3]}`))
	if err == nil || !strings.HasSuffix(err.Error(), "; and 1 more") || strings.Count(err.Error(), ": got ") != 3 {
		t.Errorf("four problems: %v", err)
	}
}

// A number the validator cannot compare (0e9223372036854775808: zero, with an exponent past
// int64, which value.ParseJSON reads as 0.0 and big.Rat refuses) against a numeric keyword is
// an error for that event, not a panic: the validator dereferenced nil, which failed the
// deployment on the event, again at each redeploy, and answered a test run 500. (It is now
// refused before the validator reads it: an exponent past ±400.)
func TestEventSchemaCheckNeverPanics(t *testing.T) {
	for _, schema := range []string{`{"properties": {"a": {"minimum": 0}}}`, `{"properties": {"a": {"multipleOf": 2}}}`,
		`{"properties": {"a": {"exclusiveMaximum": 1}}}`} {
		s, err := CompileEventSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckJSON([]byte(`{"a": 0e9223372036854775808}`)); err == nil || !strings.Contains(err.Error(), "the number 0e9223372036854775808 is out of range") {
			t.Errorf("%s: %v", schema, err)
		}
		if err := s.CheckJSON([]byte(`{"a": 4}`)); (err != nil) != strings.Contains(schema, "exclusiveMaximum") {
			t.Errorf("%s, a = 4: %v", schema, err)
		}
	}
}

// An event's error shows at most 1,024 bytes of each problem: the library's message for an
// enum of 3,000 values lists them all (about 20 KB).
func TestEventSchemaProblemsShort(t *testing.T) {
	var values []string
	for i := range 3000 {
		values = append(values, fmt.Sprintf(`"value %d"`, i))
	}
	s, err := CompileEventSchema([]byte(`{"properties": {"a": {"enum": [` + strings.Join(values, ", ") + `]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = s.CheckJSON([]byte(`{"a": "x"}`))
	if err == nil || len(err.Error()) > 1024+len("…") || !strings.HasPrefix(err.Error(), "/a: ") || !strings.HasSuffix(err.Error(), "…") {
		t.Errorf("got %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
}

// manyFailures is a schema and an event of 1.5 MB that fails it 1,000,000 times: each of
// 500,000 empty lists fails minItems 1 and contains a string.
func manyFailures(tb testing.TB) (*EventSchema, []byte) {
	s, err := CompileEventSchema([]byte(`{"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "array", "items": {"minItems": 1, "contains": {"type": "string"}}}}}`))
	if err != nil {
		tb.Fatal(err)
	}
	return s, []byte(`{"b": 1, "a": [[]` + strings.Repeat(`,[]`, 499_999) + `]}`)
}

// An event that fails a million times lists its first three failures and counts the rest
// (worked by hand: two failures for each of 500,000 lists). Writing out every failure took
// 7 s and 13.6 GB of allocations for this event (found by a hostile re-test); see
// BenchmarkCheckManyFailures.
func TestCheckManyFailures(t *testing.T) {
	s, ev := manyFailures(t)
	err := s.CheckJSON(ev)
	want := "/a/0: minItems: got 0, want 1; /a/0: no items match contains schema; /a/1: minItems: got 0, want 1; and 999997 more"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func BenchmarkCheckManyFailures(b *testing.B) {
	s, ev := manyFailures(b)
	b.ReportAllocs()
	for b.Loop() {
		if s.CheckJSON(ev) == nil {
			b.Fatal("no error")
		}
	}
}
