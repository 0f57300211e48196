package expression

import (
	"errors"
	"testing"
)

// FuzzTypeFromJSONSchema: a source's schema parameter (user text) never panics the typing of
// #input; every error wraps ErrSchema, and a type it gives prints.
func FuzzTypeFromJSONSchema(f *testing.F) {
	for _, s := range []string{
		`{"type": "object", "properties": {"a": {"type": ["integer", "null"]}, "b": {"type": "array", "items": {"type": "string"}}}, "required": ["a"]}`,
		`{"type": "object", "additionalProperties": {"type": "number"}}`,
		`{"type": ["object", "array"]}`, `{"type": 5}`, `true`, `[]`, `{"type": "object", "properties": {"a": 1}}`,
		`{"type": "object", "required": [1], "properties": {"a": {"$ref": "#"}}}`,
		`{"type": "array", "items": [{"type": "string"}]}`, `{"type": "object", "properties": {"": {}, "a.b": {"type": "null"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, err := TypeFromJSONSchema(b)
		if err != nil {
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("TypeFromJSONSchema(%q): %v does not wrap ErrSchema", b, err)
			}
			return
		}
		_ = typ.String()
	})
}
