package engine

import (
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Filter passes the events for which its expression is true on its FilterTrue edge, the
// others on its FilterFalse edge when it has one.

var _ = builtIn(newFilter, "Filter")

type filter struct {
	field string
	expr  *evaluator
}

func newFilter(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.FilterPlan)
	return &filter{field: p.Expression.Field, expr: n.evaluator(p.Expression)}, nil
}

func (f *filter) process(e *Engine, n *node, ev *event, _ string) {
	v, err := f.expr.eval(ev)
	if err != nil {
		e.fail(n, f.field, err)
		return
	}
	typ := scenario.EdgeFilterFalse
	if v.Bool() {
		typ = scenario.EdgeFilterTrue
	}
	if typ == scenario.EdgeFilterTrue || n.hasEdge(typ) {
		n.counts.Out++
	}
	e.forward(n, ev, typ)
}
