package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/scenario-server/scenario-server/internal/jsonschemas"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// EventSchema is a source's JSON Schema compiled for checking its events (the source's
// enforceSchema parameter). It is compiled once, when the scenario is checked, and is safe
// for concurrent use.
type EventSchema struct {
	s *jsonschemas.Schema
}

// eventSchemaURL names the schema inside its compiler; nothing is ever loaded from it.
const eventSchemaURL = "urn:scenario-server:source-schema"

// schemaPrinter writes the library's messages in English.
var schemaPrinter = message.NewPrinter(language.English)

// maxSchemaProblems is how many of an event's problems its error lists, and
// maxSchemaProblemBytes the most bytes of each (an enum of thousands of values lists them).
const (
	maxSchemaProblems     = 3
	maxSchemaProblemBytes = 1024
)

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
	err := s.s.Validate(event) // never panics (jsonschemas.Schema.Validate)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	var problems []string
	collectProblems(verr, &problems)
	if len(problems) == 0 { // not expected: the library's own text
		return err
	}
	shown := problems[:min(len(problems), maxSchemaProblems)]
	for i, p := range shown {
		if len(p) > maxSchemaProblemBytes { // an enum's values, a pattern: the start says enough
			shown[i] = strings.ToValidUTF8(p[:maxSchemaProblemBytes], "") + "…"
		}
	}
	msg := strings.Join(shown, "; ")
	if n := len(problems) - maxSchemaProblems; n > 0 {
		msg += fmt.Sprintf("; and %d more", n)
	}
	return errors.New(msg)
}

// CheckJSON is Check for an event written as JSON.
func (s *EventSchema) CheckJSON(b []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Check(doc)
}

// collectProblems appends the leaves of a validation error's tree: each a JSON pointer to
// the value ("/" for the event itself) and what is wrong with it.
func collectProblems(e *jsonschema.ValidationError, into *[]string) {
	if len(e.Causes) == 0 {
		if _, ok := e.ErrorKind.(*kind.Schema); ok {
			return
		}
		*into = append(*into, jsonPointer(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(schemaPrinter))
		return
	}
	for _, c := range e.Causes {
		collectProblems(c, into)
	}
}

// jsonPointer writes a location as an RFC 6901 JSON pointer, "/" for the whole value.
func jsonPointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
