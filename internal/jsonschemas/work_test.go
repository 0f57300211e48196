package jsonschemas

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// The work of checking a value is estimated before it is checked, worked by hand in the units
// of Work (1,000 a schema applied, 10 a byte per unit of pattern cost).
func TestCheckWorkBounded(t *testing.T) {
	compile := func(schema string) *Schema {
		s, err := Compile([]byte(schema), "s.json")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	validate := func(s *Schema, v any) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err, _ = r.(error)
			}
		}()
		return s.Validate(v)
	}
	// Strings of 9,980 bytes (the most one match of [a-z]{1000}x, cost 1,002, takes) in a
	// list: 1,000 for the list, and for each 1,000 + 10 · 1,002 · 9,980 = 100,000,600. Nine
	// are 900,006,400; ten 1,000,007,000, past 10^9.
	pat := compile(`{"type": "array", "items": {"type": "string", "pattern": "[a-z]{1000}x"}}`)
	strs := func(n int) []any {
		var l []any
		for range n {
			l = append(l, strings.Repeat("a", 9980))
		}
		return l
	}
	var cw *CheckWorkError
	if err := validate(pat, strs(9)); errors.As(err, &cw) || err == nil {
		t.Errorf("nine strings: %v, want the schema's own error (no x)", err)
	}
	if err := validate(pat, strs(10)); !errors.As(err, &cw) || cw.Work != 1_000_007_000 {
		t.Errorf("ten strings: %v, want work 1,000,007,000", err)
	}
	// Each item has 141 schemas applied: items, its 70 allOf members and the number each
	// refers to. 7,092 numbers are 1,000 + 7,092 · 141,000 = 999,973,000; 7,093 are
	// 1,000,114,000.
	var refs []string
	for range 70 {
		refs = append(refs, `{"$ref": "#/$defs/n"}`)
	}
	fan := compile(`{"$defs": {"n": {"type": "number"}}, "type": "array", "items": {"allOf": [` + strings.Join(refs, ", ") + `]}}`)
	nums := func(n int) []any {
		var l []any
		for range n {
			l = append(l, json.Number("1"))
		}
		return l
	}
	if err := validate(fan, nums(7092)); err != nil {
		t.Errorf("7,092 numbers: %v", err)
	}
	if err := validate(fan, nums(7093)); !errors.As(err, &cw) || cw.Work != 1_000_114_000 {
		t.Errorf("7,093 numbers: %v, want work 1,000,114,000", err)
	}
	// Property names against patternProperties: an object's root (1,000) and each property:
	// 10 · 1,000 (the pattern [a-z]{1000}'s cost) per byte of its name, and its value's
	// schema (1,000).
	pp := compile(`{"patternProperties": {"[a-z]{1000}": {"type": "number"}}}`)
	if w := pp.root.Work(map[string]any{"ab": json.Number("1"), "cde": json.Number("2")}, MaxCheckWork); w != 1000+(10*1000*2+1000)+(10*1000*3+1000) {
		t.Errorf("two properties: work %d", w)
	}
}

// The lists a value is checked against are charged as schemas applied, one a name or value:
// items that require 1,000 names, against N objects: 1,000 for the list, and for each
// 1,000 · (1 + 1,000). 999 objects are 1,000,000,000 (within); 1,000 are 1,001,001,000. A
// list of 5,001 names is refused with the schema (array elements count toward MaxObjects).
// Numbers the library would read slowly are refused first.
func TestListsAndNumbersBounded(t *testing.T) {
	names := func(n int) string {
		var l []string
		for i := range n {
			l = append(l, `"n`+strconv.Itoa(i)+`"`)
		}
		return strings.Join(l, ", ")
	}
	s, err := Compile([]byte(`{"type": "array", "items": {"type": "object", "required": [`+names(1000)+`]}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	objects := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = map[string]any{}
		}
		return l
	}
	if w := s.root.Work(objects(999), MaxCheckWork); w != 1_000_000_000 {
		t.Errorf("999 objects: work %d, want 1,000,000,000", w)
	}
	var cw *CheckWorkError
	if err := s.Validate(objects(1000)); !errors.As(err, &cw) || cw.Work != 1_001_001_000 {
		t.Errorf("1,000 objects: %v, want work 1,001,001,000", err)
	}
	if _, err := Compile([]byte(`{"required": [`+names(5001)+`]}`), "s.json"); err == nil || !strings.Contains(err.Error(), "more than 5000 objects, booleans and array elements") {
		t.Errorf("required of 5,001 names: %v", err)
	}

	n, err := Compile([]byte(`{"items": {"type": "number"}}`), "n.json")
	if err != nil {
		t.Fatal(err)
	}
	for num, ok := range map[string]bool{
		"1e-400": true, "1e-401": false, "1e400": false, "0e9223372036854775808": false,
		"1" + strings.Repeat("0", 99): true, "1" + strings.Repeat("0", 100): false, "0." + strings.Repeat("7", 98): true, "0." + strings.Repeat("7", 99): false,
	} {
		err := n.Validate([]any{json.Number(num)})
		if got := err == nil; got != ok {
			t.Errorf("%.30s (%d characters): %v, want accepted %v", num, len(num), err, ok)
		}
	}
}

// Numbers in the schema itself are bounded as an event's are, at Compile, saying where: the
// library reads a schema's const, enum and numeric keywords as big.Rat against every number
// checked (enum of 4,900 x 1e-999999 against one number: 118 s).
func TestSchemaNumbersBounded(t *testing.T) {
	for schema, where := range map[string]string{
		`{"properties": {"a": {"const": 1e-400}}}`:                                          "",
		`{"properties": {"a": {"const": 1e-401}}}`:                                          "/properties/a/const",
		`{"items": {"multipleOf": 1e400}}`:                                                  "/items/multipleOf",
		`{"items": {"multipleOf": 1e399}}`:                                                  "/items/multipleOf", // past float64
		`{"minimum": -1e308}`:                                                               "",
		`{"enum": [1, "x", 7e-999999]}`:                                                     "/enum/2",
		`{"enum": [1` + strings.Repeat("0", 99) + `]}`:                                      "",
		`{"enum": [1` + strings.Repeat("0", 100) + `]}`:                                     "/enum/0",
		`{"properties": {"a/b~c": {"enum": [{"x": [0.` + strings.Repeat("7", 99) + `]}]}}}`: "/properties/a~1b~0c/enum/0/x/0",
	} {
		_, err := Compile([]byte(schema), "s.json")
		if where == "" {
			if err != nil {
				t.Errorf("%.60s: %v", schema, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "in the schema, the number ") || !strings.HasSuffix(strings.SplitN(err.Error(), ":", 2)[0], " at "+where) {
			t.Errorf("%.60s: %v, want refused at %s", schema, err, where)
		}
	}
}
