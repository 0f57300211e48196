// Package jsonschemas compiles the JSON Schemas the server checks values against (sources'
// schemas, a schema registry's JSON Schema subjects): nothing is loaded from outside the
// schema, and the work of checking a value is bounded before any value is checked (Check).
//
// A validator applies, to each value of a document, the schemas that reach it: the schema
// of its place (a property's, an item's) and, in place, what that one applies (allOf, anyOf,
// oneOf, not, if/then/else, $ref, dependentSchemas). Shared or recursive references can make
// that number grow with the value's depth: {"type": "array", "items": {"anyOf": [{"$ref": "#"},
// {"$ref": "#"}]}} applies 2^d schemas to a list nested d deep whose innermost value fails
// (both branches are tried at every level): 2.5 s and a 50 MB error for 18 levels, doubling
// with each. Check walks the schema, not the values: for every path a value can be reached
// by (a property name, any other property, an item position, any other item, a property
// name's string), it counts the schemas applied to the value there, and refuses the schema
// when some value could have more than MaxApplied applied. Within the bound, checking a value
// costs at most MaxApplied schema applications per value node in it: linear in its size.
//
// The count is an upper bound: every patternProperties schema is taken to match every
// property, and both branches of if/then/else and every anyOf/oneOf branch are counted.
package jsonschemas

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxApplied is the most schemas that may apply to one value. MaxWork is the most steps (a
// schema counted into the set of those applying to a place, or looked at in one) Check takes
// before it gives up on a schema as too complex to bound (under a second).
const (
	MaxApplied = 1000
	MaxWork    = 2_000_000
)

// errTooComplex is Check's error past MaxWork.
var errTooComplex = errors.New("the schema is too complex for the work of checking a value against it to be bounded")

// applied is a set of schemas applying to one value, each with how many times it applies,
// and their total; past MaxApplied (the set is refused then) only the total is kept.
type applied struct {
	n     map[*jsonschema.Schema]int64
	total int64
}

// Check returns an error when some value could have more than MaxApplied schemas of s
// applied to it, or when bounding it takes more than MaxWork steps.
func Check(s *jsonschema.Schema) error {
	w := walker{closures: map[*jsonschema.Schema]*applied{}, visiting: map[*jsonschema.Schema]bool{}, seen: map[string]bool{}}
	root := w.closure(s)
	if w.work > MaxWork {
		return errTooComplex
	}
	return w.place(root)
}

type walker struct {
	closures map[*jsonschema.Schema]*applied // in-place closure of each schema
	visiting map[*jsonschema.Schema]bool
	seen     map[string]bool // places looked at, by key
	path     []string        // the steps to the place being looked at
	work     int
}

// add counts from into a, times times each; a set past MaxApplied keeps its total only.
func (w *walker) add(a, from *applied, times int64) {
	if a.total > MaxApplied || from.total > MaxApplied || times > MaxApplied || a.total+from.total*times > MaxApplied {
		a.total = MaxApplied + 1 // refused where it applies: what it holds no longer matters
		return
	}
	for u, k := range from.n {
		w.work++
		a.n[u] += k * times
	}
	a.total += from.total * times
}

// closure returns s and every schema s applies in place to the same value, with how many
// times. A schema reaching itself in place (a $ref loop) is counted once: the validator
// refuses such a loop when it meets it.
func (w *walker) closure(s *jsonschema.Schema) *applied {
	if c, ok := w.closures[s]; ok {
		return c
	}
	w.visiting[s] = true
	c := &applied{n: map[*jsonschema.Schema]int64{s: 1}, total: 1}
	add := func(t *jsonschema.Schema) {
		if t != nil && !w.visiting[t] && w.work <= MaxWork {
			w.add(c, w.closure(t), 1)
		}
	}
	add(s.Ref)
	add(s.RecursiveRef)
	if s.DynamicRef != nil {
		add(s.DynamicRef.Ref)
	}
	add(s.Not)
	for _, group := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, t := range group {
			add(t)
		}
	}
	add(s.If)
	add(s.Then)
	add(s.Else)
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		add(s.DependentSchemas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if t, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			add(t)
		}
	}
	delete(w.visiting, s)
	w.closures[s] = c
	return c
}

// place looks at the schemas applied to a value (a), then at those applied to each place
// below it.
func (w *walker) place(a *applied) error {
	if a.total > MaxApplied {
		where := "/" + strings.Join(w.path, "/")
		if len(where) > 200 {
			where = where[:100] + " ... " + where[len(where)-100:]
		}
		return fmt.Errorf("a value at %s could be checked against more than %d schemas (references applied in place several times, nested): checking an event could take time exponential in its depth", where, MaxApplied)
	}
	key := placeKey(a)
	if w.seen[key] {
		return nil
	}
	if w.work += len(a.n); w.work > MaxWork {
		return errTooComplex
	}
	w.seen[key] = true
	for _, c := range w.children(a) {
		if w.work > MaxWork {
			return errTooComplex
		}
		w.path = append(w.path, c.step)
		if err := w.place(c.applied); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
	return nil
}

type child struct {
	step    string // as it reads in the error: a property's name, "*", "[0]", "[*]", "(name)"
	applied *applied
}

// children returns what applies below a value a applies to: to each named property, any
// other property, each item position, any other item, and property names.
func (w *walker) children(a *applied) []child {
	schemas := make([]*jsonschema.Schema, 0, len(a.n))
	for s := range a.n {
		schemas = append(schemas, s)
	}
	slices.SortFunc(schemas, func(x, y *jsonschema.Schema) int { return strings.Compare(x.Location, y.Location) })
	names := map[string]bool{}
	prefix := 0
	for _, s := range schemas {
		for name := range s.Properties {
			names[name] = true
		}
		if items, ok := s.Items.([]*jsonschema.Schema); ok {
			prefix = max(prefix, len(items))
		}
		prefix = max(prefix, len(s.PrefixItems))
	}
	var out []child
	build := func(step string, pick func(s *jsonschema.Schema) []*jsonschema.Schema) {
		c := &applied{n: map[*jsonschema.Schema]int64{}}
		for _, s := range schemas {
			for _, t := range pick(s) {
				if t != nil {
					w.add(c, w.closure(t), a.n[s])
				}
			}
		}
		if c.total > 0 {
			out = append(out, child{step, c})
		}
	}
	property := func(s *jsonschema.Schema, name string, named bool) []*jsonschema.Schema {
		var ts []*jsonschema.Schema
		if p, ok := s.Properties[name]; named && ok {
			ts = append(ts, p)
		} else if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			ts = append(ts, ap)
		}
		for _, p := range s.PatternProperties {
			ts = append(ts, p)
		}
		return append(ts, s.UnevaluatedProperties)
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		build(strconv.Quote(name), func(s *jsonschema.Schema) []*jsonschema.Schema { return property(s, name, true) })
	}
	build("*", func(s *jsonschema.Schema) []*jsonschema.Schema { return property(s, "", false) })
	build("(name)", func(s *jsonschema.Schema) []*jsonschema.Schema { return []*jsonschema.Schema{s.PropertyNames} })
	item := func(s *jsonschema.Schema, i int) []*jsonschema.Schema {
		ts := []*jsonschema.Schema{s.Contains, s.UnevaluatedItems}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			return append(ts, items)
		case []*jsonschema.Schema: // draft 2019-09 and older: a list, then additionalItems
			if i >= 0 && i < len(items) {
				return append(ts, items[i])
			}
			if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				ts = append(ts, ai)
			}
			return ts
		}
		if i >= 0 && i < len(s.PrefixItems) {
			return append(ts, s.PrefixItems[i])
		}
		return append(ts, s.Items2020)
	}
	for i := range prefix {
		build("["+strconv.Itoa(i)+"]", func(s *jsonschema.Schema) []*jsonschema.Schema { return item(s, i) })
	}
	build("[*]", func(s *jsonschema.Schema) []*jsonschema.Schema { return item(s, -1) })
	return out
}

// placeKey is a's schemas and counts, in one string: places with the same key have the same
// places below them.
func placeKey(a *applied) string {
	parts := make([]string, 0, len(a.n))
	for s, n := range a.n {
		parts = append(parts, fmt.Sprintf("%p:%d", s, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
