package engine

// A CustomNode "for-each" sends one event per element of a list, with the element in its
// outputVar.

var _ = builtIn(newForEach, "CustomNode/for-each")

type forEach struct{ elements *evaluator }

func newForEach(_ *Engine, n *node) (operator, error) {
	n.varName = n.plan.Node.OutputVar
	return &forEach{elements: n.program("Elements")}, nil
}

func (f *forEach) process(e *Engine, n *node, ev *event, _ string) {
	v, err := f.elements.eval(ev)
	if err != nil {
		e.fail(n, "Elements", err)
		return
	}
	for _, item := range v.List() {
		n.counts.Out++
		e.forward(n, n.with(ev, item), "")
	}
}
