package engine

// A Split sends every event down each of its edges.

var _ = builtIn(newSplit, "Split")

type split struct{}

func newSplit(*Engine, *node) (operator, error) { return split{}, nil }

func (split) process(e *Engine, n *node, ev *event, _ string) {
	n.counts.Out++
	e.forward(n, ev, "")
}
