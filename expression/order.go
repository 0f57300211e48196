package expression

import (
	"reflect"
	"sort"
	"unsafe"

	"github.com/expr-lang/expr/ast"

	"github.com/scenario-server/scenario-server/value"
)

// Records keep the key order of the map literals that build them.
//
// expr builds a map literal {n: 1, d: 2, at: 3} as a Go map, which has no
// order. Compile keeps the order in two ways:
//
//   - the map literal that is the whole expression, and the map literals
//     nested directly in it (as values of its keys, or as items of list
//     literals among them: {a: {x: 1}, l: [{y: 1}]}), or the map literals in
//     a list literal that is the whole expression, are compiled as list
//     literals of their values; Run makes each record from that list and
//     the keys as written (the shape of the result). No Go map is built.
//   - every other map literal with constant keys (one in map(), behind a
//     condition, read through a let) leaves its keys, in the written order,
//     in the Program's table of key orders; when Run converts a Go map of
//     the result, it uses the order of the first literal (in the text) that
//     has the same set of keys. In c ? {b: 1, a: 2} : {a: 1, b: 2} both
//     branches come out as b, a.
//
// A record of a variable that expr hands back as it is (#window, or #input
// inside a record literal) keeps its own key order: Run remembers the Go map
// it made for each record it converted. Other maps that match no literal get
// their keys sorted, as FromGo does. A key written twice keeps its first
// place (and the value expr gives it, the first).
//
// The checker's types are computed before, so the types Compile reports do
// not change; and map literals used inside the expression ({a: 1}.a,
// 'a' in {a: 1}, len({a: 1})) stay Go maps.

// keyOrders are the key lists of the map literals of an expression, in the
// order they are written, and, during a Run, the keys of the records of
// variables converted into Go maps, by map.
type keyOrders struct {
	lits [][]string
	vars varKeys
}

// varKeys maps the Go maps ToGo made from records to the records' keys.
type varKeys map[unsafe.Pointer][]string

func mapID(m map[string]any) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }

// mapKeyOrders collects the key orders of the map literals in tree whose
// keys are all string constants.
func mapKeyOrders(root ast.Node) keyOrders {
	type literal struct {
		at   int
		keys []string
	}
	var lits []literal
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		m, ok := (*n).(*ast.MapNode)
		if !ok || len(m.Pairs) == 0 {
			return
		}
		if keys, ok := literalKeys(m); ok {
			lits = append(lits, literal{at: m.Location().From, keys: uniqueKeys(keys)})
		}
	}))
	sort.SliceStable(lits, func(i, j int) bool { return lits[i].at < lits[j].at })
	var out keyOrders
	for _, l := range lits {
		out.lits = append(out.lits, l.keys)
	}
	return out
}

// literalKeys returns the keys of a map literal when they are all string
// constants.
func literalKeys(m *ast.MapNode) ([]string, bool) {
	keys := make([]string, len(m.Pairs))
	for i, p := range m.Pairs {
		pair, ok := p.(*ast.PairNode)
		if !ok {
			return nil, false
		}
		k, ok := pair.Key.(*ast.StringNode)
		if !ok {
			return nil, false
		}
		keys[i] = k.Value
	}
	return keys, true
}

// uniqueKeys drops the repetitions of keys, keeping first places. The result
// has no spare capacity: records share it, and an append must copy it.
func uniqueKeys(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out[:len(out):len(out)]
}

// find returns the keys of the record m was made from, or else of the
// first literal with exactly m's keys, or nil.
func (o keyOrders) find(m map[string]any) []string {
	if keys, ok := o.vars[mapID(m)]; ok && sameKeys(keys, m) {
		return keys
	}
	for _, keys := range o.lits {
		if sameKeys(keys, m) {
			return keys
		}
	}
	return nil
}

func sameKeys(keys []string, m map[string]any) bool {
	if len(keys) != len(m) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// shape is a record literal compiled as the list of its values, or a list
// literal some of whose items are record literals.
type shape struct {
	keys  []string // a record's keys as written; shared by every record made, never modified
	list  bool     // a list literal, not a record
	items []*shape // the shapes of the values or items that have one, or nil
}

var anySliceType = reflect.TypeOf([]any(nil))

// literalShape compiles the map literal at *n, and the map literals that are
// its values or items of its list literals (recursively), as list literals,
// and returns their shape. It returns nil, and leaves *n unchanged, when *n
// is neither a map literal with distinct constant keys nor a list literal
// with such an item.
func literalShape(n *ast.Node) *shape {
	switch x := (*n).(type) {
	case *ast.ArrayNode:
		s := &shape{list: true, items: make([]*shape, len(x.Nodes))}
		nested := false
		for i := range x.Nodes {
			s.items[i] = literalShape(&x.Nodes[i])
			nested = nested || s.items[i] != nil
		}
		if !nested {
			return nil
		}
		return s
	case *ast.MapNode:
		keys, ok := literalKeys(x)
		if !ok || len(uniqueKeys(keys)) != len(keys) {
			return nil
		}
		s := &shape{keys: keys[:len(keys):len(keys)], items: make([]*shape, len(keys))}
		values := make([]ast.Node, len(x.Pairs))
		nested := false
		for i, p := range x.Pairs {
			values[i] = p.(*ast.PairNode).Value
			s.items[i] = literalShape(&values[i])
			nested = nested || s.items[i] != nil
		}
		if !nested {
			s.items = nil
		}
		list := &ast.ArrayNode{Nodes: values}
		list.SetType(anySliceType)
		ast.Patch(n, list)
		return s
	}
	return nil
}

// fromShape converts x, made by the literal of shape s.
func fromShape(x any, s *shape, orders keyOrders, depth int) (value.Value, error) {
	if depth > maxResultDepth {
		return fromGo(x, depth, orders)
	}
	items, ok := x.([]any)
	if !ok || !s.list && len(items) != len(s.keys) || s.list && len(items) != len(s.items) {
		return fromGo(x, depth, orders) // not made by the literal: cannot happen
	}
	vals := make([]value.Value, len(items))
	for i, item := range items {
		var err error
		if s.items != nil && s.items[i] != nil {
			vals[i], err = fromShape(item, s.items[i], orders, depth+1)
		} else {
			vals[i], err = fromGo(item, depth+1, orders)
		}
		if err != nil {
			return value.Null(), err
		}
	}
	if s.list {
		return value.List(vals), nil
	}
	return value.NewRecord(s.keys, vals), nil
}
