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

// keyed is an object of n keys, each with a string value.
func keyed(n int) map[string]any {
	o := make(map[string]any, n)
	for i := range n {
		o["k"+strconv.Itoa(i)] = ""
	}
	return o
}

// uniqueItems walks an array's items whole (hashing each, more than 20 of them; comparing
// each pair, fewer), at every level it applies: charged the values walked, 1,000 each.
func TestUniqueItemsCharged(t *testing.T) {
	var cw *CheckWorkError
	fifty := strings.TrimSuffix(strings.Repeat(`{"uniqueItems": true}, `, 50), ", ")
	// Three objects of K keys under an allOf of 50 {"uniqueItems": true}: 51 schemas applied
	// to the root (51,000), and for each uniqueItems 3 pairs compared, each walking the
	// smaller object's 1 + K values: 51,000 + 150,000·(1 + K). K = 6,665 is 999,951,000;
	// K = 6,666 is 1,000,101,000.
	pairs, err := Compile([]byte(`{"allOf": [`+fifty+`]}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if w := pairs.root.Work([]any{keyed(6665), keyed(6665), keyed(6665)}, MaxCheckWork); w != 999_951_000 {
		t.Errorf("3 objects of 6,665 keys: work %d, want 999,951,000", w)
	}
	if err := pairs.Validate([]any{keyed(6666), keyed(6666), keyed(6666)}); !errors.As(err, &cw) || cw.Work != 1_000_101_000 {
		t.Errorf("3 objects of 6,666 keys: %v, want work 1,000,101,000", err)
	}
	// Nested through a $ref, each level hashing what is below it: the root and every item
	// have 52 schemas applied (the root or items' {"$ref"}, n and its allOf's 50), 50 of them
	// uniqueItems. [[obj, "s" x 20], "s" x 20] with obj of K keys: 52,000 for each of the
	// outer list, the inner list, obj and 40 strings (2,236,000); for each uniqueItems the
	// inner list's 21 items hashed (obj 1 + K, 20 strings: K + 21) and the outer's (the inner
	// list 1 + (K + 1) + 20, 20 strings: K + 42): 50,000·(2K + 63). In all 5,386,000 +
	// 100,000·K: K = 9,946 is 999,986,000; K = 9,947 is 1,000,086,000.
	nested, err := Compile([]byte(`{"$defs": {"n": {"allOf": [`+fifty+`], "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	twice := func(k int) []any {
		pad := func(l []any) []any {
			for range 20 {
				l = append(l, "s")
			}
			return l
		}
		return pad([]any{pad([]any{keyed(k)})})
	}
	if w := nested.root.Work(twice(9946), MaxCheckWork); w != 999_986_000 {
		t.Errorf("nested, 9,946 keys: work %d, want 999,986,000", w)
	}
	if err := nested.Validate(twice(9947)); !errors.As(err, &cw) || cw.Work != 1_000_086_000 {
		t.Errorf("nested, 9,947 keys: %v, want work 1,000,086,000", err)
	}
}

// enum and const entries are charged the walk of comparing each with a value: the smaller
// of the two's values, and reading long numbers; the values inside them count toward
// MaxObjects.
func TestEnumCompareCharged(t *testing.T) {
	var cw *CheckWorkError
	entries := func(sizes ...int) string {
		var l []string
		for i, n := range sizes {
			o := keyed(n)
			o["k0"] = "x" + strconv.Itoa(i)
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			l = append(l, string(b))
		}
		return strings.Join(l, ", ")
	}
	// The root, items and the enum list (3), and each entry: the object and its values.
	// 3 + 3·1,250 + 1,247 = 5,000; one more key, 5,001.
	if _, err := Compile([]byte(`{"items": {"enum": [`+entries(1249, 1249, 1249, 1246)+`]}}`), "s.json"); err != nil {
		t.Errorf("5,000 values: %v", err)
	}
	if _, err := Compile([]byte(`{"items": {"enum": [`+entries(1249, 1249, 1249, 1247)+`]}}`), "s.json"); err == nil || !strings.Contains(err.Error(), "more than 5000 objects") {
		t.Errorf("5,001 values: %v", err)
	}
	// 4 entries of 999 keys against N objects of 999 keys: 1,000 for the list, and for each
	// object 1,000 + 4·1,000·(1 + 999) = 4,001,000. 249 are 996,250,000; 250 are
	// 1,000,251,000.
	objs, err := Compile([]byte(`{"items": {"enum": [`+entries(999, 999, 999, 999)+`]}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	list := func(n int, v any) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = v
		}
		return l
	}
	if w := objs.root.Work(list(249, keyed(999)), MaxCheckWork); w != 996_250_000 {
		t.Errorf("249 objects: work %d, want 996,250,000", w)
	}
	if err := objs.Validate(list(250, keyed(999))); !errors.As(err, &cw) || cw.Work != 1_000_251_000 {
		t.Errorf("250 objects: %v, want work 1,000,251,000", err)
	}
	// A const is one entry; a value of another kind is one step.
	c, err := Compile([]byte(`{"properties": {"a": {"const": `+entries(9)+`}}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if w := c.root.Work(map[string]any{"a": keyed(4)}, MaxCheckWork); w != 1000+1000+1000*5 {
		t.Errorf("const against 4 keys: work %d, want 7,000", w)
	}
	if w := c.root.Work(map[string]any{"a": "x"}, MaxCheckWork); w != 1000+1000+1000 {
		t.Errorf("const against a string: work %d, want 3,000", w)
	}
	// Numbers: 2 each (both sides read), and their characters and exponent, 32 a unit. An
	// entry 1.<40 digits>e-320 (47 characters: 367/32 = 11) against 1.23e-300 (309/32 = 9)
	// is 2 + 11 + 9 = 22. 2,000 such entries against N numbers: 1,000 + N·(1,000 +
	// 44,000,000); 22 are 968,023,000; at the 23rd the estimate stops at the first entry past
	// 10^9: 968,024,000 + 1,454·22,000 = 1,000,012,000.
	long := "1." + strings.Repeat("3", 40) + "e-320"
	nums, err := Compile([]byte(`{"items": {"enum": [`+strings.Repeat(long+", ", 1999)+long+`]}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if w := nums.root.Work(list(22, json.Number("1.23e-300")), MaxCheckWork); w != 968_023_000 {
		t.Errorf("22 numbers: work %d, want 968,023,000", w)
	}
	if err := nums.Validate(list(23, json.Number("1.23e-300"))); !errors.As(err, &cw) || cw.Work != 1_000_012_000 {
		t.Errorf("23 numbers: %v, want work 1,000,012,000", err)
	}
	for n, want := range map[string]int64{"7.5": 0, "123456789012345678901234567890.5": 1, "1e-31": 1, "6.02e23": 0, "1." + strings.Repeat("7", 95) + "e-400": 15} {
		if got := numberWork(n); got != want {
			t.Errorf("numberWork(%s) = %d, want %d", n, got, want)
		}
	}
}

// A webhook-like schema (a oneOf of 300 kinds, each with a const action, sharing their parts)
// against an event of about 2,000 values: worked by hand, 6 ms. The root: 301 schemas
// (itself, the kinds) and 300 required names; action: 300 consts, each compared (1 a
// string): 600; repository: 600 (each kind's $ref and repo), its name 300, owner 600 and
// owner's login 300 and id 600 (300 schemas of type integer, each reading the number),
// license 900 (anyOf, null, object); sender 1,500. The
// 2,000 other properties have no schema (no additionalProperties) and are not walked;
// repo's uniqueItems applies to arrays only.
func TestWebhookWithinBounds(t *testing.T) {
	var kinds []string
	for i := range 300 {
		kinds = append(kinds, `{"type": "object", "required": ["action"], "properties": {"action": {"const": "a`+strconv.Itoa(i)+`"},
		  "repository": {"$ref": "#/$defs/repo"}, "sender": {"$ref": "#/$defs/user"}}}`)
	}
	s, err := Compile([]byte(`{"oneOf": [`+strings.Join(kinds, ", ")+`], "$defs": {
	  "user": {"type": "object", "properties": {"login": {"type": "string"}, "id": {"type": "integer"}}},
	  "repo": {"type": "object", "uniqueItems": true, "properties": {"name": {"type": "string"}, "owner": {"$ref": "#/$defs/user"},
	    "license": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"key": {"type": "string"}}}]}}}}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	repo := map[string]any{"name": "r", "owner": map[string]any{"login": "u", "id": json.Number("1")}, "license": nil}
	for i := range 2000 {
		repo["x"+strconv.Itoa(i)] = "v"
	}
	event := map[string]any{"action": "a7", "repository": repo, "sender": map[string]any{"login": "u", "id": json.Number("2")}}
	if w := s.root.Work(event, MaxCheckWork); w != 6_001_000 {
		t.Errorf("work %d, want 6,001,000", w)
	}
	if err := s.Validate(event); err != nil {
		t.Error(err)
	}
}

// A number is read as big.Rat once for each schema applied with a numeric keyword, and once
// more for each with type integer (not number): 1,000 a read, more for a long number
// (numberWork). {"items": {"type": "integer", "minimum": 0}}: 1,000 for the list, and for
// each number 1,000 + 2 reads. 7 is 3,000: 333,333 are 1,000,000,000, 333,334 are
// 1,000,003,000. 1.<93 digits>e-400 (100 characters: 500/32 = 15) is 1,000 + 2,000·16 =
// 33,000: 30,303 are 1,000,000,000, 30,304 are 1,000,033,000.
func TestNumberReadsCharged(t *testing.T) {
	s, err := Compile([]byte(`{"items": {"type": "integer", "minimum": 0}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	list := func(n int, num string) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = json.Number(num)
		}
		return l
	}
	long := "1." + strings.Repeat("7", 93) + "e-400"
	var cw *CheckWorkError
	for _, c := range []struct {
		num    string
		within int
		past   int64
	}{{"7", 333_333, 1_000_003_000}, {long, 30_303, 1_000_033_000}} {
		if w := s.root.Work(list(c.within, c.num), MaxCheckWork); w != 1_000_000_000 {
			t.Errorf("%d x %.10s: work %d, want 1,000,000,000", c.within, c.num, w)
		}
		if err := s.Validate(list(c.within+1, c.num)); !errors.As(err, &cw) || cw.Work != c.past {
			t.Errorf("%d x %.10s: %v, want work %d", c.within+1, c.num, err, c.past)
		}
	}
	// type number reads nothing more: {"type": "number"} is 1,000 a number, long or not.
	n, err := Compile([]byte(`{"items": {"type": "number"}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if w := n.root.Work(list(10, long), MaxCheckWork); w != 11_000 {
		t.Errorf("type number: work %d, want 11,000", w)
	}
}
