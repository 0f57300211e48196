package jsonschemas

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxObjects is the most JSON objects and booleans (schemas, true and false among them, and
// the objects holding them such as properties) a schema document may have: the library's
// compiling takes time quadratic in its subschemas (20,000 properties: 2 to 3 s; 5,000: 0.2 s).
const MaxObjects = 5000

// Compile compiles raw, a JSON Schema document, as the resource url: a document of more
// than MaxObjects objects is an error before it is compiled, and so are a $ref outside the
// document (a file, a URL) and a schema Check refuses.
func Compile(raw []byte, url string) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if n := objects(doc, 0); n > MaxObjects {
		return nil, fmt.Errorf("the schema has more than %d objects and booleans (schemas and the objects holding them): it would take too long to compile", MaxObjects)
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
	return fmt.Sprintf("checking the value against the schema would take too long: about %d ms (its values times the schemas that apply to each, and its strings' bytes times the patterns' cost), at most %d ms",
		e.Work/1_000_000, MaxCheckWork/1_000_000)
}

// Validate checks v (in the library's form: map[string]any, []any, string, json.Number or
// float64, bool, nil): a *CheckWorkError past MaxCheckWork, before anything is checked; the
// library's *jsonschema.ValidationError when v does not fit. A match past MaxMatchWork
// panics (see MatchTooLongError).
func (s *Schema) Validate(v any) error {
	if w := s.root.Work(v, MaxCheckWork); w > MaxCheckWork {
		return &CheckWorkError{Work: w}
	}
	return s.Schema.Validate(v)
}

// Work estimates the work of checking v at p (see the work units), stopping past limit.
func (p *Place) Work(v any, limit int64) int64 {
	var w int64
	var walk func(p *Place, v any)
	walk = func(p *Place, v any) {
		if p == nil || w > limit {
			return
		}
		w += workApplied * p.Applied
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
