package engine

import (
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Filter passes the events for which its expression is true on its FilterTrue edge, the
// others on its FilterFalse edge when it has one.

var _ = builtIn(newFilter, "Filter")

type filter struct{ oneExpr }

func newFilter(_ *Engine, n *node) (operator, error) {
	return filter{n.oneExpr(n.plan.Typed.(*nodes.FilterPlan).Expression)}, nil
}

func (f filter) process(e *Engine, n *node, ev *event, _ string) {
	v, ok := f.eval(e, n, ev)
	if !ok {
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
