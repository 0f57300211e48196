package engine

// A Variable defines its varName from an expression, for the nodes below.

var _ = builtIn(newVariable, "Variable")

type variable struct{ value *evaluator }

func newVariable(_ *Engine, n *node) (operator, error) {
	n.varName = n.plan.Node.VarName
	return &variable{value: n.program("value")}, nil
}

func (o *variable) process(e *Engine, n *node, ev *event, _ string) {
	v, err := o.value.eval(ev)
	if err != nil {
		e.fail(n, "value", err)
		return
	}
	n.counts.Out++
	e.forward(n, n.with(ev, v), "")
}
