package expression

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestTypeFromJSONSchema(t *testing.T) {
	tests := []struct {
		schema string
		want   string
	}{
		{`{"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}`, "record{a: integer, b: string?}"},
		{`{"type": "object", "additionalProperties": true, "properties": {"a": {"type": "number"}}}`, "record{a: number?, ...}"},
		{`{"type": "object", "additionalProperties": {"type": "string"}}`, "record{...}"},
		{`{"type": ["string", "null"]}`, "string?"},
		{`{"type": ["string", "integer"]}`, "unknown"},
		{`{"type": "array", "items": {"type": "boolean"}}`, "list(boolean)"},
		{`{"type": "array"}`, "list(unknown)"},
		{`{"type": "null"}`, "null"},
		{`{}`, "unknown"},
		{`true`, "unknown"},
		{`{"type": "object", "required": ["geo"], "properties": {"geo": {"type": "object", "required": ["lat"], "properties": {"lat": {"type": "number"}}}}}`, "record{geo: record{lat: number}}"},
	}
	for _, tt := range tests {
		got, err := TypeFromJSONSchema([]byte(tt.schema))
		if err != nil {
			t.Errorf("TypeFromJSONSchema(%s): %v", tt.schema, err)
			continue
		}
		if got.String() != tt.want {
			t.Errorf("TypeFromJSONSchema(%s) = %s, want %s", tt.schema, got, tt.want)
		}
	}
	for _, bad := range []string{`[]`, `{"type": 1}`, `{"type": "date"}`, `{"type": "object", "required": "a"}`, `{"type": "object", "properties": []}`, `not json`} {
		if _, err := TypeFromJSONSchema([]byte(bad)); !errors.Is(err, ErrSchema) {
			t.Errorf("TypeFromJSONSchema(%s) error %v, want ErrSchema", bad, err)
		}
	}
}

func TestJoinAndAssignable(t *testing.T) {
	joins := []struct {
		a, b Type
		want string
	}{
		{Integer, Integer, "integer"},
		{Integer, Float, "number"},
		{Integer, Null, "integer?"},
		{String, Integer, "unknown"},
		{ListOf(Integer), ListOf(Float), "list(number)"},
		{Integer.OrNull(), Float, "number?"},
		{RecordOf(Field{"a", Integer}), RecordOf(Field{"a", Integer}), "record{a: integer}"},
	}
	for _, tt := range joins {
		if got := Join(tt.a, tt.b).String(); got != tt.want {
			t.Errorf("Join(%s, %s) = %s, want %s", tt.a, tt.b, got, tt.want)
		}
	}
	assign := []struct {
		t, want Type
		ok      bool
	}{
		{Integer, Number, true},
		{Float, Number, true},
		{Number, Integer, false},
		{Unknown, Boolean, true},
		{Boolean, Unknown, true},
		{Boolean.OrNull(), Boolean, false},
		{Boolean.OrNull(), Boolean.OrNull(), true},
		{Null, Boolean, false},
		{Null, Boolean.OrNull(), true},
		{ListOf(Integer), ListOf(Number), true},
		{ListOf(String), ListOf(Number), false},
		{RecordOf(Field{"a", Integer}, Field{"b", String}), RecordOf(Field{"a", Number}), true},
		{RecordOf(Field{"b", String}), RecordOf(Field{"a", Number}), false},
	}
	for _, tt := range assign {
		if got := tt.t.AssignableTo(tt.want); got != tt.ok {
			t.Errorf("%s.AssignableTo(%s) = %v, want %v", tt.t, tt.want, got, tt.ok)
		}
	}
}

func TestTypeJSON(t *testing.T) {
	typ := RecordOf(Field{"a", ListOf(Integer)}, Field{"b", String.OrNull()})
	b, err := json.Marshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"record","fields":{"a":{"kind":"list","elem":{"kind":"integer","display":"integer"},"display":"list(integer)"},"b":{"kind":"string","nullable":true,"display":"string?"}},"display":"record{a: list(integer), b: string?}"}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant %s", b, want)
	}
}

func TestBoundary(t *testing.T) {
	if got := Boundary(RecordOf(Field{"d", Duration}, Field{"l", ListOf(Duration)})).String(); got != "record{d: integer, l: list(integer)}" {
		t.Errorf("Boundary = %s", got)
	}
}
