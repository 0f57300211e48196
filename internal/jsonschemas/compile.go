package jsonschemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxObjects is the most JSON objects, booleans and array elements (schemas, true and false
// among them, the objects holding them such as properties, the names of required, and every
// value inside an enum or a const: objects, their properties' values, strings, numbers) a
// schema document may have: the library's compiling takes time quadratic
// in its subschemas (20,000 properties: 2 to 3 s; 5,000: 0.2 s), and checking a value takes
// time in the length of those lists (required of 100,000 names: 114 s for 1,000 objects).
const MaxObjects = 5000

// Compile compiles raw, a JSON Schema document, as the resource url: a document of more
// than MaxObjects objects is an error before it is compiled, and so are a $ref outside the
// document (a file, a URL) and a schema Check refuses.
func Compile(raw []byte, url string) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if err := numbers(doc); err != nil {
		return nil, fmt.Errorf("in the schema, %w: the library would read it slowly each time it is compared with a value", err)
	}
	if n := objects(doc, 0, false); n > MaxObjects {
		return nil, fmt.Errorf("the schema has more than %d objects, booleans and array elements (schemas, the objects holding them, the names of required, every value inside enum and const): it would take too long to compile and check against", MaxObjects)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme: nothing outside the schema is loaded
	pats := &patterns{}
	c.UseRegexpEngine(pats.compile)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	pats.compiled = true
	if err != nil {
		return nil, err
	}
	root, err := bound(s)
	if err != nil {
		return nil, err
	}
	return &Schema{Schema: s, root: root}, nil
}

// objects counts the objects and booleans in v, and every value inside an enum or a const
// (each compared with values checked), stopping past MaxObjects; n is the count so far, data
// whether v is inside an enum or a const.
func objects(v any, n int, data bool) int {
	switch v := v.(type) {
	case map[string]any:
		n++
		for k, x := range v {
			if n > MaxObjects {
				return n
			}
			n = objects(x, n, data || k == "enum" || k == "const")
		}
	case []any:
		if data {
			n++
		}
		for _, x := range v {
			if !data {
				n++ // an element of a list such as required, allOf, type
			}
			if n > MaxObjects {
				return n
			}
			n = objects(x, n, data)
		}
	case bool:
		n++
	default:
		if data {
			n++
		}
	}
	return n
}

// Schema is a compiled JSON Schema and the places of its values (Check's walk), so that the
// work of checking a value is bounded before it is checked.
type Schema struct {
	*jsonschema.Schema
	root *Place
}

// MaxCheckWork bounds the work of checking one value, as Work estimates it: about a second.
const MaxCheckWork = 1_000_000_000

// Units of Work: what a schema applied to a value (and a value walked comparing it with an
// enum or const entry or hashing it for uniqueItems) and a unit of a pattern's cost matched
// against a byte take, in nanoseconds about (measured: a schema applied to a number 1.2 µs;
// a pattern of cost 1,000 matched against 1 MB, 9 s; uniqueItems hashing 49.5 million
// values, 41 s).
const (
	workApplied     = 1000
	workPatternByte = 10
)

// CheckWorkError is a value whose check would take past MaxCheckWork.
type CheckWorkError struct{ Work int64 }

func (e *CheckWorkError) Error() string {
	return fmt.Sprintf("checking the value against the schema would take too long: %d ms or more (its values times the schemas and list entries that apply to each, and its strings' bytes times the patterns' cost), at most %d ms",
		e.Work/1_000_000, MaxCheckWork/1_000_000)
}

// Validate checks v (in the library's form: map[string]any, []any, string, json.Number or
// float64, bool, nil): a *NumberError for a number the library would take long to read (more
// than MaxNumberText characters, an exponent past ±400, past float64's range), and a
// *CheckWorkError past MaxCheckWork, before anything is checked; the library's
// *jsonschema.ValidationError when v does not fit; a *MatchTooLongError for a match past
// MaxMatchWork; an error saying so when the library panics on a value (it does on some it
// decoded itself: 0e9223372036854775808 against minimum, which big.Rat refuses). Whatever the
// value, the error is the value's: the caller (a deployment, the registry's decoder) goes on.
func (s *Schema) Validate(v any) (err error) {
	if err := numbers(v); err != nil {
		return err
	}
	if w := s.root.Work(v, MaxCheckWork); w > MaxCheckWork {
		return &CheckWorkError{Work: w}
	}
	defer func() {
		if r := recover(); r != nil {
			if m, ok := r.(*MatchTooLongError); ok {
				err = m
				return
			}
			err = fmt.Errorf("the value could not be checked against the schema: %v", r)
		}
	}()
	return s.Schema.Validate(v)
}

// MaxNumberText is the longest number Validate lets the library read: it reads numbers as
// big.Rat, in time quadratic in their digits (a million digits: 2.4 s) and exponential in
// their exponent (1e-999999: 30 ms each).
const MaxNumberText = 100

// numbers returns a *NumberError for the first number of v past MaxNumberText characters,
// with an exponent past ±400, or past float64's range.
func numbers(v any) error {
	switch v := v.(type) {
	case json.Number:
		if !numberInRange(string(v)) {
			return &NumberError{Number: string(v)}
		}
	case map[string]any:
		for k, x := range v {
			if err := numbers(x); err != nil {
				err.(*NumberError).at(k)
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := numbers(x); err != nil {
				err.(*NumberError).at(strconv.Itoa(i))
				return err
			}
		}
	}
	return nil
}

// numberInRange tells whether n, a JSON number, has at most MaxNumberText characters, an
// exponent within ±400, and is within float64's range.
func numberInRange(n string) bool {
	if len(n) > MaxNumberText {
		return false
	}
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
		if err != nil || e > 400 || e < -400 {
			return false
		}
	}
	_, err := strconv.ParseFloat(n, 64)
	return err == nil
}

// NumberError is a number the library would take long to read (numbers): its text and
// where it is (a JSON pointer).
type NumberError struct {
	Number string
	Where  string
}

// at puts step in front of e's place, as the walk returns up from it.
func (e *NumberError) at(step string) {
	step = strings.ReplaceAll(strings.ReplaceAll(step, "~", "~0"), "/", "~1")
	e.Where = "/" + step + e.Where
}

func (e *NumberError) Error() string {
	where := e.Where
	if where == "" {
		where = "/"
	}
	if len(where) > 200 {
		where = where[:100] + " ... " + where[len(where)-100:]
	}
	return fmt.Sprintf("the number %.40s is out of range (past float64, an exponent past ±400, or more than %d characters) at %s", e.Number, MaxNumberText, where)
}

// size is the work of comparing a value with another (the library's equals) or hashing it
// (uniqueItems of more than 20 items), in units of workApplied: its kind, its values (each
// object, array, string, boolean and null 1, a number 2: both sides are read as big.Rat)
// and the extra work of reading its long numbers (numberWork).
type size struct {
	kind          byte // 'o'bject, 'a'rray, 's'tring, 'n'umber, 'b'oolean, 'z' null
	values, extra int64
}

func (s *size) add(t size) {
	s.values += t.values
	s.extra += t.extra
}

// measure is v's size, stopping past limit values.
func measure(v any, limit int64) size {
	s := size{kind: 'z', values: 1}
	switch v := v.(type) {
	case map[string]any:
		s.kind = 'o'
		for _, x := range v {
			if s.values > limit {
				break
			}
			s.add(measure(x, limit-s.values))
		}
	case []any:
		s.kind = 'a'
		for _, x := range v {
			if s.values > limit {
				break
			}
			s.add(measure(x, limit-s.values))
		}
	case string:
		s.kind = 's'
	case bool:
		s.kind = 'b'
	case json.Number:
		s.kind, s.values, s.extra = 'n', 2, numberWork(string(v))
	case float64:
		s.kind, s.values, s.extra = 'n', 2, numberWork(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return s
}

// numberWork is the work of reading n as big.Rat past a short number's, in units of
// workApplied: its characters and its exponent, 32 a unit (measured: 1.<40 digits>e-320 8 µs,
// 1.<95 digits>e-400 13 µs, 7.5 1 µs).
func numberWork(n string) int64 {
	e := 0
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		e, _ = strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	}
	return int64(len(n)+max(e, -e)) / 32
}

// compareWork is the work of comparing values of sizes a and b (the library's equals): one
// step when their kinds differ, else a walk of the smaller one, and reading their numbers.
func compareWork(a, b size) int64 {
	if a.kind != b.kind {
		return 1
	}
	return min(a.values, b.values) + a.extra + b.extra
}

// uniqueWork is the work of uniqueItems on an array of items of these sizes: more than 20
// are each hashed whole (object keys sorted), fewer compared pairwise.
func uniqueWork(items []size) int64 {
	var w int64
	if len(items) > 20 {
		for _, it := range items {
			w += it.values + it.extra
		}
		return w
	}
	for i := range items {
		for j := range i {
			w += compareWork(items[i], items[j])
		}
	}
	return w
}

// Work estimates the work of checking v at p (see the work units), stopping past limit.
func (p *Place) Work(v any, limit int64) int64 {
	var w int64
	// walk returns v's size when sized (a place above compares or hashes it).
	var walk func(p *Place, v any, sized bool) size
	walk = func(p *Place, v any, sized bool) size {
		if w > limit {
			return size{}
		}
		if p == nil {
			if !sized {
				return size{}
			}
			return measure(v, (limit-w)/workApplied+1)
		}
		sized = sized || p.Unique > 0 || len(p.compared) > 0
		w += workApplied * (p.Applied + p.Lists)
		var sz size
		switch v := v.(type) {
		case string:
			w += workPatternByte * p.Patterns * int64(len(v))
			sz = size{kind: 's', values: 1}
		case map[string]any:
			sz = size{kind: 'o', values: 1}
			for k, x := range v {
				w += workPatternByte * p.NamePatterns * int64(len(k))
				walk(p.below["(name)"], k, false)
				below := p.below[strconv.Quote(k)]
				if below == nil {
					below = p.below["*"]
				}
				sz.add(walk(below, x, sized))
			}
		case []any:
			sz = size{kind: 'a', values: 1}
			var items []size
			if p.Unique > 0 && len(v) > 1 {
				items = make([]size, 0, len(v))
			}
			for i, x := range v {
				below := p.below["["+strconv.Itoa(i)+"]"]
				if below == nil {
					below = p.below["[*]"]
				}
				it := walk(below, x, sized)
				sz.add(it)
				if items != nil {
					items = append(items, it)
				}
			}
			if items != nil {
				w += workApplied * p.Unique * uniqueWork(items)
			}
		default:
			sz = measure(v, 1)
			if sz.kind == 'n' {
				w += workApplied * p.NumberReads * (1 + sz.extra)
			}
		}
		for _, c := range p.compared {
			for _, e := range c.values {
				if w > limit {
					break
				}
				w += workApplied * c.times * compareWork(e, sz)
			}
		}
		return sz
	}
	walk(p, v, false)
	return w
}
