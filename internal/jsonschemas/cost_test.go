package jsonschemas

import (
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The counts worked by hand. {"items": {"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}}: an item
// has the items schema, its two anyOf branches and, through each, the root applied: 5; an
// item of an item has everything twice (the root applied twice): 10; at depth d, 5·2^(d-1),
// past 1000 first at depth 9 (1280).
func TestExponentialRefused(t *testing.T) {
	err := Check(compile(t, `{"items": {"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}}`))
	if want := "a value at " + strings.Repeat("/[*]", 9) + " could be checked against more than 1000 schemas"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	// The same through properties and allOf: a property "a" of the root has its schema,
	// allOf's two refs and the root twice (5), then 10, ... depth 9.
	err = Check(compile(t, `{"properties": {"a": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}}}`))
	if want := "a value at " + strings.Repeat(`/"a"`, 9) + " could be"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("properties: got %v, want %q", err, want)
	}
	// Without recursion: ten definitions, each the next one twice (allOf), apply 2^10 = 1024
	// times to one value (and 2^10 - 1 + ... more: past 1000 at the root).
	var defs []string
	for i := range 10 {
		defs = append(defs, `"d`+string(rune('0'+i))+`": {"allOf": [{"$ref": "#/$defs/d`+string(rune('1'+i))+`"}, {"$ref": "#/$defs/d`+string(rune('1'+i))+`"}]}`)
	}
	defs = append(defs, `"d:": {"type": "number"}`) // d9's next one: ':' follows '9'
	err = Check(compile(t, `{"$ref": "#/$defs/d0", "$defs": {`+strings.Join(defs, ", ")+`}}`))
	if err == nil || !strings.Contains(err.Error(), "a value at / could be checked against more than 1000 schemas") {
		t.Errorf("definitions doubling in place: %v", err)
	}
}

// Schemas whose count does not grow with depth pass: recursive trees and lists, shared
// definitions, the usual keywords.
func TestBoundedAccepted(t *testing.T) {
	for _, s := range []string{
		`{"type": "object", "properties": {"value": {"type": "number"}, "left": {"$ref": "#"}, "right": {"$ref": "#"}}}`,
		`{"type": "array", "items": {"$ref": "#"}}`,
		`{"$defs": {"n": {"type": "integer", "minimum": 0}}, "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "#/$defs/n"}, "c": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}`,
		`{"type": "object", "required": ["user", "amount"], "properties": {"user": {"type": "string"}, "amount": {"type": "number"}},
		  "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false,
		  "if": {"properties": {"amount": {"minimum": 100}}}, "then": {"required": ["note"]}, "else": {"not": {"required": ["note"]}},
		  "allOf": [{"properties": {"tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "contains": {"const": 1}}}}]}`,
		`{"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}], "$defs": {"a": {"properties": {"next": {"$ref": "#/$defs/a"}}}, "b": {"properties": {"other": {"$ref": "#/$defs/b"}}}}}`,
		`true`,
	} {
		if err := Check(compile(t, s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// Large schemas: a chain of 5,000 definitions, each an allOf of a $ref to the next, applies
// over 10,000 schemas to the event itself (refused at "/"). Compile refuses a document of more than 5,000 objects before compiling it. a chain of 200,000 allOf is past MaxWork in building the
// sets (each within the bound, refused as too complex).
func TestLargeSchemas(t *testing.T) {
	var defs []string
	for i := range 5000 {
		defs = append(defs, `"d`+strconv.Itoa(i)+`": {"allOf": [{"$ref": "#/$defs/d`+strconv.Itoa(i+1)+`"}]}`)
	}
	defs = append(defs, `"d5000": {"type": "number"}`)
	if err := Check(compile(t, `{"$ref": "#/$defs/d0", "$defs": {`+strings.Join(defs, ", ")+`}}`)); err == nil || !strings.Contains(err.Error(), "a value at / could be checked against more than 1000 schemas") {
		t.Errorf("a chain of 5,000: %v", err)
	}
	var props []string
	for i := range 4998 {
		props = append(props, `"p`+strconv.Itoa(i)+`": {"$ref": "#/$defs/n"}`)
	}
	// 4,998 properties' objects, the properties object, $defs and n, the document: 5,002.
	doc := func(props []string) []byte {
		return []byte(`{"$defs": {"n": {"type": "number"}}, "properties": {` + strings.Join(props, ", ") + `}}`)
	}
	if _, err := Compile(doc(props), "s.json"); err == nil || !strings.Contains(err.Error(), "the schema has more than 5000 objects") {
		t.Errorf("5,002 objects: %v", err)
	}
	if _, err := Compile(doc(props[:4996]), "s.json"); err != nil {
		t.Errorf("5,000 objects: %v", err)
	}
}
