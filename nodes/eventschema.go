package nodes

import (
	"bytes"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/scenario-server/scenario-server/internal/jsonschemas"
)

// EventSchema is a source's JSON Schema compiled for checking its events (the source's
// enforceSchema parameter). It is compiled once, when the scenario is checked, and is safe
// for concurrent use.
type EventSchema struct {
	s *jsonschemas.Schema
}

// eventSchemaURL names the schema inside its compiler; nothing is ever loaded from it.
const eventSchemaURL = "urn:scenario-server:source-schema"

// CompileEventSchema compiles a source's schema parameter (raw JSON). A $ref may only point
// inside the schema or at the JSON Schema meta-schemas: no file or URL is read. A schema that
// could make checking one event take time exponential in its depth is an error
// (jsonschemas.Check).
func CompileEventSchema(raw []byte) (*EventSchema, error) {
	s, err := jsonschemas.Compile(raw, eventSchemaURL)
	if err != nil {
		return nil, err
	}
	return &EventSchema{s: s}, nil
}

// Check checks an event in the library's form (map[string]any, []any, json.Number or
// float64, string, bool, nil). The error says where and why, its problems joined by "; ":
// "/amount: got string, want number; /: missing property 'amount'" (at most three, then how
// many more).
func (s *EventSchema) Check(event any) error {
	return jsonschemas.Problems(s.s.Validate(event)) // never panics (jsonschemas.Schema.Validate)
}

// CheckJSON is Check for an event written as JSON.
func (s *EventSchema) CheckJSON(b []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Check(doc)
}
