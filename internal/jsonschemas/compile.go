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
// among them, the objects holding them such as properties, and the names of required or the
// values of enum) a schema document may have: the library's compiling takes time quadratic
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
	if n := objects(doc, 0); n > MaxObjects {
		return nil, fmt.Errorf("the schema has more than %d objects, booleans and array elements (schemas, the objects holding them, the values of lists such as required and enum): it would take too long to compile and check against", MaxObjects)
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

// objects counts the objects and booleans in v, stopping past MaxObjects; n is the count so
// far.
func objects(v any, n int) int {
	switch v := v.(type) {
	case bool:
		n++
	case map[string]any:
		n++
		for _, x := range v {
			if n > MaxObjects {
				return n
			}
			n = objects(x, n)
		}
	case []any:
		for _, x := range v {
			n++
			if n > MaxObjects {
				return n
			}
			n = objects(x, n)
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

// Units of Work: what a schema applied to a value and a unit of a pattern's cost matched
// against a byte take, in nanoseconds about (measured: a schema applied to a number 1.2 µs;
// a pattern of cost 1,000 matched against 1 MB, 9 s).
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
// float64, bool, nil): an error for a number the library would take long to read (more than
// MaxNumberText characters, an exponent past ±400, past float64's range), and a
// *CheckWorkError past MaxCheckWork, before anything is checked; the library's
// *jsonschema.ValidationError when v does not fit. A match past MaxMatchWork panics (see
// MatchTooLongError).
func (s *Schema) Validate(v any) error {
	if err := numbers(v); err != nil {
		return err
	}
	if w := s.root.Work(v, MaxCheckWork); w > MaxCheckWork {
		return &CheckWorkError{Work: w}
	}
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

// Work estimates the work of checking v at p (see the work units), stopping past limit.
func (p *Place) Work(v any, limit int64) int64 {
	var w int64
	var walk func(p *Place, v any)
	walk = func(p *Place, v any) {
		if p == nil || w > limit {
			return
		}
		w += workApplied * (p.Applied + p.Lists)
		switch v := v.(type) {
		case string:
			w += workPatternByte * p.Patterns * int64(len(v))
		case map[string]any:
			for k, x := range v {
				w += workPatternByte * p.NamePatterns * int64(len(k))
				walk(p.below["(name)"], k)
				below := p.below[strconv.Quote(k)]
				if below == nil {
					below = p.below["*"]
				}
				walk(below, x)
			}
		case []any:
			for i, x := range v {
				below := p.below["["+strconv.Itoa(i)+"]"]
				if below == nil {
					below = p.below["[*]"]
				}
				walk(below, x)
			}
		}
	}
	walk(p, v)
	return w
}
