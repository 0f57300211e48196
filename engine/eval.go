package engine

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/value"
)

// evaluator runs one compiled expression on a context. Expressions that
// only read a variable or a path of record fields (`#input.ts`,
// `#input.user.id`, `#agg`) are answered by walking the decoded value,
// without running expr: most groupBy, aggregateBy and timestamp expressions
// are such paths, and this is the per-event hot path.
type evaluator struct {
	prog *expression.Program
	path []pathStep // variable, then fields and indexes; nil when prog must run
	// A record literal whose values are all paths ({a: #input.x, b: #key[0]}):
	// its keys in written order and one path per key.
	keys  []string
	paths [][]pathStep
	// The declared types of the path (or of each record value), for the
	// number conversions expr makes (see conform).
	typ   expression.Type
	types []expression.Type
}

// pathStep is a variable or field name, or a list index when index >= 0.
type pathStep struct {
	name  string
	index int
}

// pathExpr matches `#name(.field|[index])*` or `name(...)*`, nothing else.
var pathExpr = regexp.MustCompile(`^\s*#?([A-Za-z_][A-Za-z0-9_]*)((?:\s*(?:\.\s*[A-Za-z_][A-Za-z0-9_]*|\[\s*[0-9]{1,9}\s*\]))*)\s*$`)

// stepExpr splits the steps of a matched path.
var stepExpr = regexp.MustCompile(`\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*([0-9]+)\s*\]`)

// recordExpr matches a record literal `{ key: value, ... }` with plain keys;
// its values are checked one by one with pathExpr.
var recordExpr = regexp.MustCompile(`^\s*\{(.*)\}\s*$`)
var recordEntry = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$`)

func parsePath(text string) []pathStep {
	m := pathExpr.FindStringSubmatch(text)
	if m == nil || isKeyword(m[1]) {
		return nil
	}
	path := []pathStep{{name: m[1], index: -1}}
	for _, sm := range stepExpr.FindAllStringSubmatch(m[2], -1) {
		if sm[1] != "" {
			path = append(path, pathStep{name: sm[1], index: -1})
			continue
		}
		i, err := strconv.Atoi(sm[2])
		if err != nil {
			return nil
		}
		path = append(path, pathStep{index: i})
	}
	return path
}

func newEvaluator(p *expression.Program) *evaluator {
	if p == nil {
		return nil
	}
	ev := &evaluator{prog: p, typ: p.Result()}
	text := p.Text()
	if ev.path = parsePath(text); ev.path != nil {
		if !scalarOrUnknown(ev.typ) {
			ev.path = nil // a typed record or list: expr converts inside it
		}
		return ev
	}
	// A record literal of paths: split on the commas at the top level (a
	// path has no commas, brackets hold digits only, so any comma splits).
	m := recordExpr.FindStringSubmatch(text)
	if m == nil || strings.ContainsAny(m[1], "{}\"'`") {
		return ev
	}
	seen := map[string]bool{}
	for _, entry := range strings.Split(m[1], ",") {
		em := recordEntry.FindStringSubmatch(entry)
		if em == nil || seen[em[1]] {
			return ev
		}
		path := parsePath(em[2])
		if path == nil {
			return ev
		}
		ft := typeAt(p.Env(), path)
		if !scalarOrUnknown(ft) {
			ev.keys, ev.paths, ev.types = nil, nil, nil
			return ev
		}
		seen[em[1]] = true
		ev.keys = append(ev.keys, em[1])
		ev.paths = append(ev.paths, path)
		ev.types = append(ev.types, ft)
	}
	return ev
}

// typeAt returns the declared type of the value a path reaches from env.
func typeAt(env expression.TypeEnv, path []pathStep) expression.Type {
	t, ok := env[path[0].name]
	if !ok {
		return expression.Unknown
	}
	for _, s := range path[1:] {
		switch {
		case s.index >= 0 && t.Kind == expression.KindList && t.Elem != nil:
			t = *t.Elem
		case s.index < 0 && t.Kind == expression.KindRecord:
			t, _ = t.Field(s.name)
		default:
			return expression.Unknown
		}
	}
	return t
}

// scalarOrUnknown reports types whose values conform needs to look at only
// at the top: a path typed as a record or list is left to expr, which
// converts numbers inside it by their declared types.
func scalarOrUnknown(t expression.Type) bool {
	return t.Kind != expression.KindRecord && t.Kind != expression.KindList
}

// conform makes the number conversions expr makes for a value of declared
// type t (expression.ToGo): an integer where a non-null float is declared
// becomes a float; a whole float where a non-null integer is declared
// becomes an integer.
func conform(v value.Value, t expression.Type) value.Value {
	if t.Nullable {
		return v
	}
	switch {
	case t.Kind == expression.KindFloat && v.Kind() == value.KindInt:
		return value.Float(float64(v.Int()))
	case t.Kind == expression.KindInteger && v.Kind() == value.KindFloat:
		if f := v.Float(); f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return value.Int(int64(f))
		}
	}
	return v
}

// isKeyword reports names that expr reads as literals or operators.
func isKeyword(s string) bool {
	switch s {
	case "true", "false", "nil", "null", "not", "and", "or", "in", "matches", "contains", "startsWith", "endsWith", "let":
		return true
	}
	return false
}

// eval returns the expression's value for c.
func (ev *evaluator) eval(c *ctx) (value.Value, error) {
	switch {
	case ev.path != nil:
		v, ok := c.vars[ev.path[0].name]
		if !ok {
			return value.Null(), nil
		}
		w, err := walk(v, ev.path)
		return conform(w, ev.typ), err
	case ev.keys != nil:
		vals := make([]value.Value, len(ev.keys))
		for i, path := range ev.paths {
			v, ok := c.vars[path[0].name]
			if !ok {
				vals[i] = value.Null()
				continue
			}
			w, err := walk(v, path)
			if err != nil {
				return expression.Run(ev.prog, c.vars) // expr's own error, with its position
			}
			vals[i] = conform(w, ev.types[i])
		}
		return value.NewRecord(ev.keys, vals), nil
	}
	return expression.Run(ev.prog, c.vars)
}

// evalOne returns the expression's value when the only variable in scope is
// name = v (a source's timestamp sees #input alone).
func (ev *evaluator) evalOne(name string, v value.Value) (value.Value, error) {
	if ev.path == nil {
		return expression.Run(ev.prog, map[string]value.Value{name: v})
	}
	if ev.path[0].name != name {
		return value.Null(), nil
	}
	w, err := walk(v, ev.path)
	return conform(w, ev.typ), err
}

// walk follows the fields and indexes of path (after its variable) from v.
// A missing field is null, as expr gives for a missing map key; a field of
// something that is not a record, or an index out of range, is an error.
func walk(v value.Value, path []pathStep) (value.Value, error) {
	for _, s := range path[1:] {
		if s.index >= 0 {
			l := v.List()
			if v.Kind() != value.KindList || s.index >= len(l) {
				return value.Null(), &expression.RunError{Message: fmt.Sprintf("index %d out of range of %s", s.index, v.Kind())}
			}
			v = l[s.index]
			continue
		}
		switch v.Kind() {
		case value.KindRecord:
			v, _ = v.Record().Get(s.name)
		default:
			return value.Null(), &expression.RunError{Message: fmt.Sprintf("cannot fetch %s from %s", s.name, v.Kind())}
		}
	}
	return v, nil
}

// usesVariable reports whether any of the evaluators reads variable name.
func usesVariable(name string, evs ...*evaluator) bool {
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		for _, v := range ev.prog.Variables() {
			if v == name {
				return true
			}
		}
	}
	return false
}
