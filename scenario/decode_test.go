package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const example = `{
  "properties": {"additionalFields": {"description": "demo", "properties": {"team": "fraud", "env": "dev"}}},
  "nodes": [
    {"id": "src", "type": "Source", "ref": {"typ": "http", "parameters": [
      {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
      {"name": "schema", "value": {"type": "object",   "properties": {"ts": {"type": "integer"}, "note": {"type": "string", "description": "<b>&</b>"}}}}
    ]}, "additionalFields": {"description": "events", "layoutData": {"x": 10.5, "y": -20}}},
    {"id": "f", "type": "Filter", "expression": {"language": "expr", "expression": "#input.ts > 0"}},
    {"id": "v", "type": "Variable", "varName": "x", "value": {"language": "expr", "expression": "1"}},
    {"id": "r", "type": "VariableBuilder", "varName": "rec", "fields": [{"name": "a", "expression": {"language": "expr", "expression": "#x"}}]},
    {"id": "sw", "type": "Switch"},
    {"id": "sp", "type": "Split"},
    {"id": "agg", "type": "CustomNode", "nodeType": "aggregate-sliding", "outputVar": "agg", "parameters": [
      {"name": "windowLength", "value": "1h"},
      {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]}
    ]},
    {"id": "u", "type": "Join", "nodeType": "union", "outputVar": "o", "branchParameters": [
      {"branchId": "sw", "parameters": [{"name": "Output expression", "expression": {"language": "expr", "expression": "1"}}]}
    ]},
    {"id": "out", "type": "Sink", "ref": {"typ": "dead-end"}}
  ],
  "edges": [
    {"from": "src", "to": "f", "edgeType": null},
    {"from": "f", "to": "v", "edgeType": {"type": "FilterTrue"}},
    {"from": "sw", "to": "u", "edgeType": {"type": "NextSwitch", "condition": {"language": "expr", "expression": "true"}}}
  ]
}`

func TestDecodeEncodeRoundTrip(t *testing.T) {
	s, err := Decode([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Node("src").AdditionalFields.LayoutData; got == nil || got.X != 10.5 || got.Y != -20 {
		t.Errorf("layoutData = %+v", got)
	}
	if got := string(s.Node("src").Ref.Parameters[1].Value); !strings.HasPrefix(got, `{"type":"object","properties":`) {
		t.Errorf("parameter value not kept compact: %s", got)
	}
	if s.Edges[0].EdgeType != nil || s.Edges[2].EdgeType.Condition.Expression != "true" {
		t.Errorf("edges = %+v", s.Edges)
	}
	enc, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc, []byte(`\u003c`)) {
		t.Errorf("Encode escaped HTML: %s", enc)
	}
	s2, err := Decode(enc)
	if err != nil {
		t.Fatalf("decoding the encoding: %v\n%s", err, enc)
	}
	if !reflect.DeepEqual(s, s2) {
		t.Errorf("round trip changed the scenario:\n%+v\n%+v", s, s2)
	}
	enc2, _ := Encode(s2)
	if !bytes.Equal(enc, enc2) {
		t.Errorf("Encode is not stable:\n%s\n%s", enc, enc2)
	}
	// Properties are sorted, so the encoding does not depend on map order.
	if i, j := bytes.Index(enc, []byte(`"env"`)), bytes.Index(enc, []byte(`"team"`)); i < 0 || j < i {
		t.Errorf("properties not sorted:\n%s", enc)
	}
	// json.Unmarshal goes through Decode.
	var s3 Scenario
	if err := json.Unmarshal([]byte(example), &s3); err != nil || !reflect.DeepEqual(&s3, s) {
		t.Errorf("json.Unmarshal: %v", err)
	}
}

func TestEncodeEmpty(t *testing.T) {
	enc, err := Encode(&Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"properties\": {\n    \"additionalFields\": {}\n  },\n  \"nodes\": [],\n  \"edges\": []\n}\n"
	if string(enc) != want {
		t.Errorf("Encode(empty) = %q, want %q", enc, want)
	}
	s, err := Decode(enc)
	if err != nil || len(s.Nodes) != 0 || s.Nodes == nil {
		t.Errorf("Decode(empty) = %+v, %v", s, err)
	}
}

func TestDecodeProblems(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []Problem
	}{
		{"not JSON", "{\n  \"nodes\": [1,]\n}", []Problem{
			{Code: CodeInvalidJSON, Message: "invalid JSON: unexpected character ']', expected a JSON value", Line: 2, Column: 15},
		}},
		{"empty input", "", []Problem{
			{Code: CodeInvalidJSON, Message: "invalid JSON: unexpected end of input, expected a JSON value", Line: 1, Column: 1},
		}},
		{"text after the value", `{} x`, []Problem{
			{Code: CodeInvalidJSON, Message: "invalid JSON: unexpected character 'x' after the end of the JSON value", Line: 1, Column: 4},
		}},
		{"not an object", `[]`, []Problem{
			{Code: CodeWrongType, Message: "the scenario must be an object, not an array", Line: 1, Column: 1},
		}},
		{"unknown and duplicate top-level fields", `{"nodes": [], "nodes": [], "name": "x"}`, []Problem{
			{Field: "nodes", Code: CodeDuplicateField, Message: `field "nodes" appears more than once`, Line: 1, Column: 15},
			{Field: "name", Code: CodeUnknownField, Message: `unknown field "name" (allowed: properties, nodes, edges)`, Line: 1, Column: 28},
		}},
		{"node fields of another type", `{"nodes": [{"id": "f", "type": "Filter", "varName": "x"}]}`, []Problem{
			{NodeID: "f", Field: "varName", Code: CodeUnknownField, Message: `unknown field "varName" (allowed: id, type, additionalFields, expression)`, Line: 1, Column: 42},
		}},
		{"unknown node type", `{"nodes": [{"id": "n", "type": "Enricher", "x": 1}]}`, []Problem{
			{NodeID: "n", Field: "type", Code: CodeUnknownNodeType, Message: `unknown node type "Enricher" (one of Source, Filter, Variable, VariableBuilder, Switch, Split, Join, CustomNode, Sink)`, Line: 1, Column: 32},
		}},
		{"node without id or type: the JSON path", `{"nodes": [{}]}`, []Problem{
			{Field: "nodes[0].type", Code: CodeMissingField, Message: `field "type" is required (one of Source, Filter, Variable, VariableBuilder, Switch, Split, Join, CustomNode, Sink)`, Line: 1, Column: 12},
		}},
		{"wrong types inside a node", `{"nodes": [{"id": "s", "type": "Source", "ref": {"typ": 1, "parameters": {}}, "additionalFields": {"layoutData": {"x": "1", "y": 1e999}}}]}`, []Problem{
			{NodeID: "s", Field: "additionalFields.layoutData.x", Code: CodeWrongType, Message: `"additionalFields.layoutData.x" must be a number, not a string`, Line: 1, Column: 120},
			{NodeID: "s", Field: "additionalFields.layoutData.y", Code: CodeWrongType, Message: `"additionalFields.layoutData.y": number 1e999 is out of range`, Line: 1, Column: 130},
			{NodeID: "s", Field: "ref.typ", Code: CodeWrongType, Message: `"ref.typ" must be a string, not a number`, Line: 1, Column: 57},
			{NodeID: "s", Field: "ref.parameters", Code: CodeWrongType, Message: `"ref.parameters" must be an array, not an object`, Line: 1, Column: 74},
		}},
		{"edges", `{"edges": [{"from": "a"}, {"from": "a", "to": "b", "edgeType": {"type": "FilterTrue", "cond": 1}}]}`, []Problem{
			{Field: "edges[0].to", Code: CodeMissingField, Message: `field "to" is required`, Line: 1, Column: 12},
			{Field: "edges[1].edgeType.cond", Code: CodeUnknownField, Message: `unknown field "cond" (allowed: type, condition)`, Line: 1, Column: 87},
		}},
		{"expressions", `{"nodes": [{"id": "f", "type": "Filter", "expression": {"expression": 1}}]}`, []Problem{
			{NodeID: "f", Field: "expression.language", Code: CodeMissingField, Message: `field "language" is required`, Line: 1, Column: 56},
			{NodeID: "f", Field: "expression.expression", Code: CodeWrongType, Message: `"expression.expression" must be a string, not a number`, Line: 1, Column: 71},
		}},
		{"properties", `{"properties": {"additionalFields": {"properties": {"a": 1}}}}`, []Problem{
			{Field: "properties.additionalFields.properties.a", Code: CodeWrongType, Message: `"properties.additionalFields.properties.a" must be a string, not a number`, Line: 1, Column: 58},
		}},
		{"positions count code points", "{\"nodes\": [{\"id\": \"żółw\", \"type\": \"Split\", \"x\": 1}]}", []Problem{
			{NodeID: "żółw", Field: "x", Code: CodeUnknownField, Message: `unknown field "x" (allowed: id, type, additionalFields)`, Line: 1, Column: 44},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.json))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %v, want a *DecodeError", err)
			}
			if !reflect.DeepEqual(de.Problems, tt.want) {
				t.Errorf("problems:\n got %+v\nwant %+v", de.Problems, tt.want)
			}
		})
	}
}

func TestDecodeDeepNesting(t *testing.T) {
	deep := `{"properties": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	_, err := Decode([]byte(deep))
	var de *DecodeError
	if !errors.As(err, &de) || de.Problems[0].Code != CodeInvalidJSON || !strings.Contains(de.Problems[0].Message, "nested deeper") {
		t.Errorf("Decode(deep) = %v", err)
	}
}

func TestPosition(t *testing.T) {
	text := []byte("ab\nżx\n")
	for _, tt := range []struct{ offset, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 2}, {6, 2, 3}, {7, 3, 1}, {100, 3, 1}, {-1, 1, 1},
	} {
		if l, c := Position(text, tt.offset); l != tt.line || c != tt.col {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", tt.offset, l, c, tt.line, tt.col)
		}
	}
}
