package engine

import "github.com/scenario-server/scenario-server/nodes"

// A Variable defines its varName from an expression, for the nodes below.

var _ = builtIn(newVariable, "Variable")

type variable struct{ oneExpr }

func newVariable(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.VariablePlan)
	n.varName = p.Name
	return variable{n.oneExpr(p.Value)}, nil
}

func (o variable) process(e *Engine, n *node, ev *event, _ string) {
	if v, ok := o.eval(e, n, ev); ok {
		n.counts.Out++
		e.forward(n, n.with(ev, v), "")
	}
}
