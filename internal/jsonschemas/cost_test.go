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
// item of an item has the same schemas, each twice: 10. The same schemas, more times, one
// level down: the count doubles with each level, refused there.
func TestExponentialRefused(t *testing.T) {
	grows := "could be checked against 10 schemas where the value 1 levels above it is checked against 5 of the same"
	err := Check(compile(t, `{"items": {"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}}`))
	if want := "a value at /[*]/[*] " + grows; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	// The same through properties and allOf: a property "a" of the root has its schema,
	// allOf's two refs and the root twice (5), then 10.
	err = Check(compile(t, `{"properties": {"a": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]}}}`))
	if want := `a value at /"a"/"a" ` + grows; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("properties: got %v, want %q", err, want)
	}
	// Without recursion: definitions d0 to d11, each an allOf of two refs to the next, d12 a
	// number. d_k applies itself, its two allOf items and d_{k+1} twice over: size(d_k) =
	// 3 + 2·size(d_{k+1}), size(d12) = 1, so size(d0) = 4·2^12 - 3; with the root, 16,382
	// schemas on the event itself, past 10,000.
	var defs []string
	for i := range 12 {
		next := `{"$ref": "#/$defs/d` + strconv.Itoa(i+1) + `"}`
		defs = append(defs, `"d`+strconv.Itoa(i)+`": {"allOf": [`+next+`, `+next+`]}`)
	}
	defs = append(defs, `"d12": {"type": "number"}`)
	err = Check(compile(t, `{"$ref": "#/$defs/d0", "$defs": {`+strings.Join(defs, ", ")+`}}`))
	if err == nil || !strings.Contains(err.Error(), "a value at / could be checked against more than 10000 schemas") {
		t.Errorf("definitions doubling in place: %v", err)
	}
	// $dynamicRef and $recursiveRef: the schema applied depends on the path (the bound
	// could not follow it: a 51-byte event nested 21 deep ended the process).
	for _, s := range []string{
		`{"type": "object", "properties": {"a": {"$ref": "https://e.com/r"}}, "$defs": {"r": {"$id": "https://e.com/r", "$dynamicAnchor": "n",
		  "anyOf": [{"$ref": "l"}, {"$ref": "l"}], "$defs": {"l": {"$id": "https://e.com/l", "$dynamicAnchor": "n", "type": "array", "items": {"$dynamicRef": "#n"}}}}}}`,
		`{"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": true, "items": {"$recursiveRef": "#"}}`,
	} {
		if err := Check(compile(t, s)); err == nil || !strings.Contains(err.Error(), "has a $dynamicRef or $recursiveRef") {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// A schema that applies itself to the same value (a $ref cycle, or one through allOf, an even
// number of nots or a branch every value takes, without going into a property or an item) is
// refused: the library ends every check of a value reaching it with an infinite-loop error
// (checked here for each, on the value it reaches), so every event would be refused (round
// 22: saved as valid). One through an odd number of nots passes every value (R24-3); one
// through anyOf, oneOf, if, then, else or dependentSchemas otherwise is reached by some values
// only: it passes (round 23), and the values that reach it are the events' errors.
func TestInPlaceCycleRefused(t *testing.T) {
	for _, tc := range []struct{ schema, value string }{
		{`{"$ref": "#"}`, `{}`},
		{`{"$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}, "$ref": "#/$defs/x"}`, `1`},
		{`{"allOf": [{"type": "object"}, {"$ref": "#"}]}`, `{}`},
		{`{"not": {"not": {"$ref": "#"}}}`, `"a"`},
		{`{"properties": {"a": {"allOf": [{"type": "integer"}, {"$ref": "#/properties/a"}]}}}`, `{"a": 1}`},
		// R24-4: a branch every value goes through (an anyOf or oneOf of one, then under
		// "if": true, else under "if": false) is as allOf's.
		{`{"anyOf": [{"$ref": "#"}]}`, `1`},
		{`{"oneOf": [{"allOf": [{"$ref": "#"}]}]}`, `"a"`},
		{`{"if": true, "then": {"$ref": "#"}}`, `1`},
		{`{"if": false, "else": {"$ref": "#"}}`, `{}`},
		{`{"$defs": {"x": {"not": {"$ref": "#/$defs/y"}}, "y": {"not": {"$ref": "#/$defs/x"}}}, "$ref": "#/$defs/x"}`, `1`},
		// R25-5: the other branches fail every value (false, the not of {} or of annotations).
		{`{"anyOf": [false, {"$ref": "#"}]}`, `1`},
		{`{"oneOf": [{"not": {}}, {"allOf": [{"$ref": "#"}]}]}`, `"a"`},
		{`{"anyOf": [{"not": {"title": "x"}}, {"$ref": "#"}, {"not": true}]}`, `{}`},
	} {
		s := compile(t, tc.schema)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); err == nil {
			t.Errorf("%s: the library accepted %s", tc.schema, tc.value)
		}
		if err := Check(s); err == nil || !strings.Contains(err.Error(), "applies itself to the same value") {
			t.Errorf("%s: %v; want it refused", tc.schema, err)
		}
	}
	for _, tc := range []struct{ schema, value string }{
		{`{"anyOf": [{"type": "integer"}, {"$ref": "#"}]}`, `1`},
		{`{"if": {"type": "string"}, "then": {"$ref": "#"}}`, `1`},
		{`{"if": {"$ref": "#"}, "then": {"type": "integer"}}`, `1`},
		{`{"dependentSchemas": {"a": {"$ref": "#"}}}`, `{"b": 1}`},
		{`{"oneOf": [{"type": "integer"}, {"type": "string", "allOf": [{"$ref": "#"}]}]}`, `1`},
		// R24-3: through an odd number of nots, the loop's error is turned into a pass: the
		// library accepts every value.
		{`{"not": {"$ref": "#"}}`, `1`},
		{`{"allOf": [{"type": "integer"}, {"not": {"not": {"not": {"$ref": "#"}}}}]}`, `1`},
		{`{"if": true, "else": {"$ref": "#"}}`, `1`},
		// A branch that fails some values only: the loop's branch fails, the other decides.
		{`{"anyOf": [{"$ref": "#"}, {"type": "integer"}]}`, `1`},
		{`{"oneOf": [{"not": {"type": "string"}}, {"$ref": "#"}]}`, `1`},
		{`{"anyOf": [{"not": {}, "title": "x"}, {"not": {"type": "string"}}, {"$ref": "#"}]}`, `1`},
	} {
		s := compile(t, tc.schema)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: the library refused %s: %v", tc.schema, tc.value, err)
		}
		if err := Check(s); err != nil {
			t.Errorf("%s: %v; want it accepted (some values never reach the cycle)", tc.schema, err)
		}
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

// Large schemas: a chain of 700 definitions, each an allOf of a $ref to the next, applies
// 1,402 schemas to the event itself (accepted: each definition's set holds those below it,
// about a million steps); one of 5,000 would take 50 million, past MaxWork.
// Compile refuses a document of more than 5,000 objects before compiling it. A oneOf of 300
// event kinds sharing their parts (as a webhook's schema) applies each part once per kind,
// not more with depth: accepted.
func TestLargeSchemas(t *testing.T) {
	chain := func(n int) string {
		var defs []string
		for i := range n {
			defs = append(defs, `"d`+strconv.Itoa(i)+`": {"allOf": [{"$ref": "#/$defs/d`+strconv.Itoa(i+1)+`"}]}`)
		}
		defs = append(defs, `"d`+strconv.Itoa(n)+`": {"type": "number"}`)
		return `{"$ref": "#/$defs/d0", "$defs": {` + strings.Join(defs, ", ") + `}}`
	}
	if err := Check(compile(t, chain(700))); err != nil {
		t.Errorf("a chain of 700: %v", err)
	}
	if err := Check(compile(t, chain(5000))); err == nil || !strings.Contains(err.Error(), "too complex") {
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
	if _, err := Compile(doc(props), "s.json"); err == nil || !strings.Contains(err.Error(), "the schema has more than 5000 objects, booleans and array elements") {
		t.Errorf("5,002 objects: %v", err)
	}
	if _, err := Compile(doc(props[:4996]), "s.json"); err != nil {
		t.Errorf("5,000 objects: %v", err)
	}
	// Boolean schemas count as objects do: 5,001 patternProperties of true.
	var trues []string
	for i := range 5001 {
		trues = append(trues, `"^p`+strconv.Itoa(i)+`$": true`)
	}
	if _, err := Compile([]byte(`{"patternProperties": {`+strings.Join(trues, ", ")+`}}`), "s.json"); err == nil || !strings.Contains(err.Error(), "more than 5000 objects, booleans and array elements") {
		t.Errorf("5,001 boolean schemas: %v", err)
	}
	var kinds []string
	for i := range 300 {
		kinds = append(kinds, `{"type": "object", "required": ["action"], "properties": {"action": {"const": "a`+strconv.Itoa(i)+`"},
		  "repository": {"$ref": "#/$defs/repo"}, "sender": {"$ref": "#/$defs/user"}}}`)
	}
	webhook := `{"oneOf": [` + strings.Join(kinds, ", ") + `], "$defs": {
	  "user": {"type": "object", "properties": {"login": {"type": "string"}, "id": {"type": "integer"}}},
	  "repo": {"type": "object", "properties": {"name": {"type": "string"}, "owner": {"$ref": "#/$defs/user"},
	    "license": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"key": {"type": "string"}}}]}}}}}`
	if _, err := Compile([]byte(webhook), "s.json"); err != nil {
		t.Errorf("a webhook of 300 kinds: %v", err)
	}
}
