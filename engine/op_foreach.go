package engine

import "github.com/scenario-server/scenario-server/nodes"

// A CustomNode "for-each" sends one event per element of a list, with the element in its
// outputVar.

var _ = builtIn(newForEach, "CustomNode/for-each")

type forEach struct {
	field    string
	elements *evaluator
}

func newForEach(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.ForEachPlan)
	n.varName = p.OutputVar
	return &forEach{field: p.Elements.Field, elements: n.evaluator(p.Elements)}, nil
}

func (f *forEach) process(e *Engine, n *node, ev *event, _ string) {
	v, err := f.elements.eval(ev)
	if err != nil {
		e.fail(n, f.field, err)
		return
	}
	for _, item := range v.List() {
		n.counts.Out++
		e.forward(n, n.with(ev, item), "")
	}
}
