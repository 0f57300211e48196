package engine

import (
	"fmt"
	"regexp"
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
	path []string // variable, then fields; nil when prog must run
}

// pathExpr matches `#name(.field)*` or `name(.field)*`, nothing else.
var pathExpr = regexp.MustCompile(`^\s*#?([A-Za-z_][A-Za-z0-9_]*)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*$`)

func newEvaluator(p *expression.Program) *evaluator {
	if p == nil {
		return nil
	}
	ev := &evaluator{prog: p}
	if m := pathExpr.FindStringSubmatch(p.Text()); m != nil && !isKeyword(m[1]) {
		ev.path = []string{m[1]}
		for _, f := range strings.Split(m[2], ".") {
			if f = strings.TrimSpace(f); f != "" {
				ev.path = append(ev.path, f)
			}
		}
	}
	return ev
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
	if ev.path == nil {
		return expression.Run(ev.prog, c.vars)
	}
	v, ok := c.vars[ev.path[0]]
	if !ok {
		return value.Null(), nil
	}
	return ev.walk(v)
}

// evalOne returns the expression's value when the only variable in scope is
// name = v (a source's timestamp sees #input alone).
func (ev *evaluator) evalOne(name string, v value.Value) (value.Value, error) {
	if ev.path == nil {
		return expression.Run(ev.prog, map[string]value.Value{name: v})
	}
	if ev.path[0] != name {
		return value.Null(), nil
	}
	return ev.walk(v)
}

// walk follows the fields of the path from v.
func (ev *evaluator) walk(v value.Value) (value.Value, error) {
	for _, f := range ev.path[1:] {
		switch v.Kind() {
		case value.KindRecord:
			v, _ = v.Record().Get(f)
		case value.KindNull:
			return value.Null(), &expression.RunError{Message: fmt.Sprintf("cannot fetch %s from nil", f)}
		default:
			return value.Null(), &expression.RunError{Message: fmt.Sprintf("cannot fetch %s from %s", f, v.Kind())}
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
