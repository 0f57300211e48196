package expression

import (
	"sort"
	"strconv"

	"github.com/expr-lang/expr/ast"

	"github.com/scenario-server/scenario-server/value"
)

// What Run gives expr to read.
//
// expr reads variables from a map[string]any. Converting a whole record
// (#input) into a Go map for every event costs far more than the
// expression itself when it only reads a field or two. So a Program is
// compiled twice:
//
//   - the general program reads whole variables, converted with ToGo;
//   - the fast program has every field path on a variable (#input.origin,
//     #input.geo.lat, #key[0]: member accesses with a constant name or a
//     constant index from 0, not optional) turned into an identifier of its
//     own, named `input["origin"]` or `key[0]` (no name a user writes
//     contains a bracket; quoting keeps #input["a.b"] and #input.a.b
//     apart), which Run binds to the value looked up directly in the
//     value.Record or value list.
//
// A path can be bound only when every value on it but the last is a record
// or a list, and the indexes are within their lists; a missing last field is
// null, as expr gives for a missing map key. When a path cannot be bound
// (#input is null, #input.geo is a string, #key is empty), Run runs the
// general program instead, so that expr reports the same error it always
// did.

// binding is one entry of the env map expr reads.
type binding struct {
	key  string // the name expr reads: the variable, or `variable["field"][0]`
	name string // the variable
	path []step // the fields and indexes from the variable; none: the whole variable
	typ  Type   // the declared type of the value bound, for ToGo
	// toFloat and toInt are ToGo's conversions of numbers for typ: an
	// integer where a float is declared, a whole float where an integer is.
	toFloat, toInt bool
}

// step is a record field, or a list index when index >= 0.
type step struct {
	field string
	index int
}

func newBinding(key, name string, path []step, env TypeEnv) binding {
	t := typeOf(env, name, path)
	return binding{key: key, name: name, path: path, typ: t,
		toFloat: t.Kind == KindFloat && !t.Nullable,
		toInt:   t.Kind == KindInteger && !t.Nullable}
}

// wholeBindings binds the variables names, whole.
func wholeBindings(names []string, env TypeEnv) []binding {
	out := make([]binding, len(names))
	for i, n := range names {
		out[i] = newBinding(n, n, nil, env)
	}
	return out
}

// typeOf returns the declared type of variable name followed along path:
// ToGo's type for that value when it converts the whole variable.
func typeOf(env TypeEnv, name string, path []step) Type {
	t, ok := env[name]
	if !ok {
		return Unknown
	}
	for _, s := range path {
		switch {
		case s.index >= 0 && t.Kind == KindList:
			t = t.elem()
		case s.index < 0 && t.Kind == KindRecord:
			t, _ = t.Field(s.field) // the zero Type is Unknown
		default:
			return Unknown
		}
	}
	return t
}

// maxBoundSteps is the most steps of a field path bindFields binds: a longer path's first
// maxBoundSteps are bound and expr follows the rest. Each bound prefix of a path has its own
// identifier and step list, so binding a path of n steps whole would cost O(n²) (a chain
// of 4,900 steps, under the compile limits, took 450 MB); capped, it is O(n).
const maxBoundSteps = 16

// bindFields rewrites the field paths on variables (isVar) into identifiers
// of their own and returns the bindings the rewritten tree reads, and
// whether it rewrote any path. A path is bound up to maxBoundSteps steps.
func bindFields(root *ast.Node, env TypeEnv, isVar func(string) bool) ([]binding, bool) {
	paths := map[*ast.IdentifierNode][]step{} // of the identifiers made
	vars := map[*ast.IdentifierNode]string{}  // their variables
	ast.Walk(root, visitorFunc(func(n *ast.Node) {
		m, ok := (*n).(*ast.MemberNode)
		if !ok || m.Optional || m.Method {
			return
		}
		var s step
		var name string
		switch prop := m.Property.(type) {
		case *ast.StringNode:
			s, name = step{field: prop.Value, index: -1}, "["+strconv.Quote(prop.Value)+"]"
		case *ast.IntegerNode:
			if prop.Value < 0 {
				return // from the end of the list: left to expr
			}
			s, name = step{index: prop.Value}, "["+strconv.Itoa(prop.Value)+"]"
		default:
			return
		}
		id, ok := m.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		base, patched := paths[id]
		if !patched && !isVar(id.Value) || len(base) >= maxBoundSteps {
			return
		}
		field := &ast.IdentifierNode{Value: id.Value + name}
		field.SetNature(*m.Nature())
		paths[field] = append(base[:len(base):len(base)], s)
		vars[field] = vars[id]
		if !patched {
			vars[field] = id.Value
		}
		ast.Patch(n, field)
	}))
	if len(paths) == 0 {
		return nil, false
	}
	var out []binding
	seen := map[string]bool{}
	ast.Walk(root, visitorFunc(func(n *ast.Node) {
		id, ok := (*n).(*ast.IdentifierNode)
		if !ok || seen[id.Value] {
			return
		}
		if path, ok := paths[id]; ok {
			seen[id.Value] = true
			out = append(out, newBinding(id.Value, vars[id], path, env))
		} else if isVar(id.Value) {
			seen[id.Value] = true
			out = append(out, newBinding(id.Value, id.Value, nil, env))
		}
	}))
	// By variable, so that bind looks each up once.
	sort.Slice(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].key < out[j].key
	})
	return out, true
}

// bind sets env for bs from vars; it reports false when a field path does
// not lead through records. The lists and records it converts take from *left (bytes; a
// negative *left: no bound): when one would pass it, bind stops and returns its name, "#v".
func bind(env map[string]any, bs []binding, vars Vars, keys varKeys, left *int) (bool, string) {
	fv, _ := vars.(FieldVars)
	var v, fx value.Value
	name, have := "", false
	for i := range bs {
		b := &bs[i]
		if i == 0 || b.name != name {
			name, have = b.name, false
		}
		x, path := &v, b.path
		if f, ok := fieldVar(fv, name, path); ok {
			fx = f
			x, path = &fx, path[1:]
		} else if !have {
			v, _ = vars.Var(name) // the zero Value, null, when vars lacks it
			have = true
		}
		for j, s := range path {
			if s.index >= 0 {
				items := x.List()
				if s.index >= len(items) {
					return false, ""
				}
				x = &items[s.index]
				continue
			}
			r := x.Record()
			if r == nil {
				return false, ""
			}
			if x = field(r, s.field); x == nil {
				if j < len(path)-1 {
					return false, ""
				}
				x = &null // a missing last field is null
			}
		}
		if k := x.Kind(); *left >= 0 && (k == value.KindList || k == value.KindRecord) {
			if *left = chargeConversion(*x, *left); *left < 0 {
				return false, "#" + name
			}
		}
		env[b.key] = b.toGo(x, keys)
	}
	return true, ""
}

var null value.Value

// fieldVar asks fv for the first field of path, when path starts with one.
func fieldVar(fv FieldVars, name string, path []step) (value.Value, bool) {
	if fv == nil || len(path) == 0 || path[0].index >= 0 {
		return value.Null(), false
	}
	return fv.VarField(name, path[0].field)
}

// field returns the field name of r, or nil.
func field(r *value.Record, name string) *value.Value {
	for i, k := range r.Keys {
		if k == name {
			return &r.Values[i]
		}
	}
	return nil
}

// toGo is ToGo(*v, b.typ), with the scalars done here: the hot path.
func (b *binding) toGo(v *value.Value, keys varKeys) any {
	kind, bits := v.KindBits()
	switch kind {
	case value.KindNull:
		return nil
	case value.KindBool:
		return bits == 1
	case value.KindInt:
		if b.toFloat {
			return float64(int64(bits))
		}
		return int(int64(bits))
	case value.KindString:
		return v.Str()
	}
	return toGo(*v, b.typ, keys)
}

// letNames returns the names the expression declares with let.
func letNames(root ast.Node) map[string]bool {
	names := map[string]bool{}
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		if d, ok := (*n).(*ast.VariableDeclaratorNode); ok {
			names[d.Name] = true
		}
	}))
	return names
}

// readsEnv reports whether the expression reads $env, expr's map of all
// variables.
func readsEnv(root ast.Node) bool {
	found := false
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		if id, ok := (*n).(*ast.IdentifierNode); ok && id.Value == "$env" {
			found = true
		}
	}))
	return found
}
