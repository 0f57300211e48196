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
// when the same schemas apply more times to a value than to one above it on its path (the
// count grows with depth, without bound), when some value could have more than MaxApplied
// applied, or when it has a $dynamicRef or $recursiveRef (whose target depends on the path,
// which this walk does not follow). Within the bound, checking a value costs at most
// MaxApplied schema applications per value node in it: linear in its size.
//
// The count is an upper bound: every patternProperties schema is taken to match every
// property, and both branches of if/then/else and every anyOf/oneOf branch are counted.
// Patterns are bounded too (regexp.go).
package jsonschemas

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/scenario-server/scenario-server/expression"
)

// MaxApplied is the most schemas that may apply to one value. MaxWork is the most steps (a
// schema counted into the set of those applying to a place, or looked at in one) Check takes
// before it gives up on a schema as too complex to bound (under a second).
const (
	MaxApplied = 10_000
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
	_, err := bound(s)
	return err
}

// bound is Check, and the root of the places it walked.
func bound(s *jsonschema.Schema) (*Place, error) {
	w := walker{closures: map[*jsonschema.Schema]*applied{}, visiting: map[*jsonschema.Schema]bool{}, seen: map[string]*Place{},
		onPath: map[string]int64{}, depthOf: map[string]int{}, sizes: map[*jsonschema.Schema][]size{}}
	root := w.closure(s)
	if w.work > MaxWork {
		return nil, errTooComplex
	}
	p, err := w.place(root)
	if err != nil {
		return nil, err
	}
	// Every schema below has been met (its closure taken).
	if at := inPlaceCycle(w.closures); at != "" {
		return nil, fmt.Errorf("%s applies itself to the same value (through $ref, allOf, an even number of nots, or a branch every value takes, without going into a property or an item): the library refuses every value that reaches it as an infinite loop", at)
	}
	if w.dynamic != "" {
		return nil, fmt.Errorf("%s has a $dynamicRef or $recursiveRef: which schema it applies depends on the path to the value, so the work of checking cannot be bounded in advance; use $ref", w.dynamic)
	}
	return p, nil
}

// inPlaceCycle returns the location of a schema among met that applies itself to the same
// value through keywords every value goes through ($ref, allOf, not, an anyOf or oneOf of one
// branch that a value may pass (onlyBranch), then under "if": true, else under "if": false) with an even number of nots on the
// way, "" when none does: the library ends the check of every value that reaches it with an
// infinite-loop error (round 22: {"$ref": "#"} was saved, and every event refused). Through an
// odd number of nots the error turns into a pass: the library accepts every value there
// (R24-3). A cycle through anyOf or oneOf of more branches, if, then, else otherwise, or
// dependentSchemas is left: the library reaches it for some values only (an anyOf whose first
// branch holds stops there; an error within if only picks else), and refuses those as the
// event's error.
func inPlaceCycle(met map[*jsonschema.Schema]*applied) string {
	// A schema is reached with an even or odd number of nots; like the library, the walk
	// stops where a schema on its way is met again: with the same parity, a cycle of an even
	// number of nots (found), with the other, of an odd number.
	type reached struct {
		s   *jsonschema.Schema
		odd bool
	}
	onWay := map[*jsonschema.Schema]bool{} // the parity each schema on the way was reached with
	done := map[reached]bool{}
	var found string
	var visit func(r reached)
	visit = func(r reached) {
		onWay[r.s] = r.odd
		s := r.s
		next := []reached{{s.Ref, r.odd}, {s.Not, !r.odd}}
		for _, t := range s.AllOf {
			next = append(next, reached{t, r.odd})
		}
		for _, of := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf} {
			if b := onlyBranch(of); b != nil {
				next = append(next, reached{b, r.odd})
			}
		}
		if s.If != nil && s.If.Bool != nil {
			if *s.If.Bool {
				next = append(next, reached{s.Then, r.odd})
			} else {
				next = append(next, reached{s.Else, r.odd})
			}
		}
		for _, t := range next {
			if t.s == nil || found != "" {
				continue
			}
			if odd, ok := onWay[t.s]; ok {
				if odd == t.odd {
					found = t.s.Location
				}
				continue
			}
			if !done[t] {
				visit(t)
			}
		}
		delete(onWay, s)
		done[r] = true
	}
	// In a fixed order, so that the location named does not vary.
	for _, s := range slices.SortedFunc(maps.Keys(met), func(a, b *jsonschema.Schema) int { return strings.Compare(a.Location, b.Location) }) {
		if r := (reached{s, false}); !done[r] && found == "" {
			visit(r)
		}
	}
	return found
}

// onlyBranch is the one branch of an anyOf or oneOf that some value may pass, nil when there
// are more or none: a branch that no value passes (false, {"not": {}}) leaves the others to
// decide alone, so every value goes through the one left (R25-5: {"anyOf": [false, {"$ref":
// "#"}]} failed every value, as {"anyOf": [{"$ref": "#"}]} does).
func onlyBranch(of []*jsonschema.Schema) *jsonschema.Schema {
	var only *jsonschema.Schema
	for _, b := range of {
		if alwaysFails(b) {
			continue
		}
		if only != nil {
			return nil
		}
		only = b
	}
	return only
}

// alwaysFails reports a schema that no value passes: false, or the not of a schema every value
// passes (true, or a schema of annotations only: {}). It may miss some (it never reports one
// that a value passes).
func alwaysFails(s *jsonschema.Schema) bool {
	if s.Bool != nil {
		return !*s.Bool
	}
	if s.Not == nil || !alwaysPasses(s.Not) {
		return false
	}
	// The not's schema may hold other keywords too: only a not alone (with annotations).
	t := *s
	t.Not = nil
	return alwaysPasses(&t)
}

// annotations are the fields of a schema that do not check the value (identifiers and
// annotations): alwaysPasses allows them.
var annotations = map[string]bool{"DraftVersion": true, "Location": true, "ID": true, "Anchor": true, "DynamicAnchor": true,
	"RecursiveAnchor": true, "Title": true, "Description": true, "Default": true, "Comment": true, "ReadOnly": true,
	"WriteOnly": true, "Examples": true, "Deprecated": true}

// alwaysPasses reports a schema every value passes: true, or one whose exported fields are all
// annotations or empty (a field the library adds later counts as a check: it is never
// reported empty wrongly).
func alwaysPasses(s *jsonschema.Schema) bool {
	if s.Bool != nil {
		return *s.Bool
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && !annotations[f.Name] && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

// Place is where a value can be in a document checked against a schema: how many schemas
// apply to a value there (Applied), the patterns' cost (expression.PatternCost) matched
// against a string there (Patterns) and against each property name of an object there
// (NamePatterns, of patternProperties), and the places below, by step (a property's quoted
// name, "*" for any other property, "(name)" for property names, "[i]", "[*]").
type Place struct {
	Applied, Patterns, NamePatterns int64
	// Lists is the length of the lists checked against a value there, each as much work as
	// a schema applied (required's names, dependentRequired's).
	Lists int64
	// Unique is how many schemas with uniqueItems apply to an array there.
	Unique int64
	// NumberReads is how many times a number there is read as big.Rat: once for each schema
	// with a numeric keyword (minimum, maximum, their exclusive forms, multipleOf), and once
	// for each with type integer but not number.
	NumberReads int64
	// compared are the enum and const values compared with a value there.
	compared []comparedWith
	below    map[string]*Place
}

// comparedWith is an enum's values (a const's one) compared with a value at a place, times
// times (the schema applied that many times).
type comparedWith struct {
	values []size
	times  int64
}

type walker struct {
	closures map[*jsonschema.Schema]*applied // in-place closure of each schema
	visiting map[*jsonschema.Schema]bool
	seen     map[string]*Place // places looked at, by key
	// The places on the path to the one being looked at, by their schemas without counts
	// (placeKey's support): the total there, and the depth.
	onPath  map[string]int64
	depthOf map[string]int
	path    []string // the steps to the place being looked at
	work    int
	dynamic string                        // the location of the first $dynamicRef or $recursiveRef met
	sizes   map[*jsonschema.Schema][]size // comparedValues's
}

// add counts from into a, times times each; a set past MaxApplied keeps its total only.
func (w *walker) add(a, from *applied, times int64) {
	if w.work > MaxWork {
		return // Check gives up on the schema
	}
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
		if t != nil && !w.visiting[t] {
			w.add(c, w.closure(t), 1)
		}
	}
	add(s.Ref)
	if (s.RecursiveRef != nil || s.DynamicRef != nil) && w.dynamic == "" {
		w.dynamic = s.Location
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
func (w *walker) place(a *applied) (*Place, error) {
	if a.total > MaxApplied {
		return nil, fmt.Errorf("a value at %s could be checked against more than %d schemas (references applied in place several times): checking an event would take too long", w.where(), MaxApplied)
	}
	key, support := placeKey(a)
	// The same schemas applied more times than at a place above: applied more times at
	// each repeat of the path between, their count grows with the value's depth.
	if above, ok := w.onPath[support]; ok && a.total > above {
		return nil, fmt.Errorf("a value at %s could be checked against %d schemas where the value %d levels above it is checked against %d of the same: the count grows with the value's depth (references applied in place several times, nested), and checking an event would take time exponential in its depth",
			w.where(), a.total, len(w.path)-w.depthOf[support], above)
	}
	if p := w.seen[key]; p != nil {
		return p, nil
	}
	prevTotal, hadTotal := w.onPath[support]
	prevDepth := w.depthOf[support]
	w.onPath[support], w.depthOf[support] = a.total, len(w.path)
	defer func() {
		if hadTotal {
			w.onPath[support], w.depthOf[support] = prevTotal, prevDepth
		} else {
			delete(w.onPath, support)
			delete(w.depthOf, support)
		}
	}()
	if w.work += len(a.n); w.work > MaxWork {
		return nil, errTooComplex
	}
	p := &Place{Applied: a.total, below: map[string]*Place{}}
	for s, n := range a.n {
		if s.Pattern != nil {
			p.Patterns += n * patternCost(s.Pattern)
		}
		for re := range s.PatternProperties {
			p.NamePatterns += n * patternCost(re)
		}
		p.Lists += n * int64(len(s.Required))
		if values := w.comparedValues(s); values != nil {
			p.compared = append(p.compared, comparedWith{values: values, times: n})
		}
		if s.UniqueItems {
			p.Unique += n
		}
		if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil {
			p.NumberReads += n
		}
		if s.Types != nil {
			if types := s.Types.ToStrings(); slices.Contains(types, "integer") && !slices.Contains(types, "number") {
				p.NumberReads += n
			}
		}
		for _, names := range s.DependentRequired {
			p.Lists += n * int64(len(names))
		}
	}
	w.seen[key] = p
	for _, c := range w.children(a) {
		if w.work > MaxWork {
			return nil, errTooComplex
		}
		w.path = append(w.path, c.step)
		below, err := w.place(c.applied)
		if err != nil {
			return nil, err
		}
		p.below[c.step] = below
		w.path = w.path[:len(w.path)-1]
	}
	return p, nil
}

// comparedValues is the sizes of s's enum values and const (nil when it has neither),
// measured once for all the places s applies at.
func (w *walker) comparedValues(s *jsonschema.Schema) []size {
	if s.Enum == nil && s.Const == nil {
		return nil
	}
	if values, ok := w.sizes[s]; ok {
		return values
	}
	var values []size
	if s.Enum != nil {
		for _, v := range s.Enum.Values {
			values = append(values, measure(v, MaxCheckWork))
		}
	}
	if s.Const != nil {
		values = append(values, measure(*s.Const, MaxCheckWork))
	}
	w.sizes[s] = values
	return values
}

// patternCost is a compiled pattern's cost: boundedRegexp's, or worked out again for a
// pattern compiled otherwise (tests').
func patternCost(re jsonschema.Regexp) int64 {
	if b, ok := re.(boundedRegexp); ok {
		return int64(b.cost)
	}
	n, _ := expression.PatternCost(re.String(), expression.MaxPatternCost)
	return int64(max(n, 1))
}

// where is the path to the place being looked at, shortened past 200 bytes.
func (w *walker) where() string {
	where := "/" + strings.Join(w.path, "/")
	if len(where) > 200 {
		where = where[:100] + " ... " + where[len(where)-100:]
	}
	return where
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

// placeKey is a's schemas and counts in one string (places with the same key have the same
// places below them), and its support: the schemas alone.
func placeKey(a *applied) (key, support string) {
	type entry struct {
		ptr string
		n   int64
	}
	entries := make([]entry, 0, len(a.n))
	for s, n := range a.n {
		entries = append(entries, entry{fmt.Sprintf("%p", s), n})
	}
	slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.ptr, y.ptr) })
	var k, sup strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&k, "%s:%d,", e.ptr, e.n)
		sup.WriteString(e.ptr + ",")
	}
	return k.String(), sup.String()
}
