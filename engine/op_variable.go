package engine

import "github.com/scenario-server/scenario-server/nodes"

// A Variable defines its varName from an expression, for the nodes below.

var _ = builtIn(newVariable, "Variable")

type variable struct {
	field string
	value *evaluator
}

func newVariable(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.VariablePlan)
	n.varName = p.Name
	return &variable{field: p.Value.Field, value: n.evaluator(p.Value)}, nil
}

func (o *variable) process(e *Engine, n *node, ev *event, _ string) {
	v, err := o.value.eval(ev)
	if err != nil {
		e.fail(n, o.field, err)
		return
	}
	n.counts.Out++
	e.forward(n, n.with(ev, v), "")
}
