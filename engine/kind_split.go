package engine

import (
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// splitKind is Split: it sends every event down each of its edges.
func splitKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "Split", NodeType: scenario.TypeSplit, Group: nodes.GroupBase, Label: "Split",
		Description: "Sends every event down each of its edges.",
		Parameters:  []nodes.ParamSpec{},
		Validate:    func(*nodes.Check) {}, // the scope below is its input's
		Runtime:     builder(newSplit),
	}
}

type split struct{}

func newSplit(*Engine, *node) (operator, error) { return split{}, nil }

func (split) process(e *Engine, n *node, ev *event, _ string) {
	n.counts.Out++
	e.forward(n, ev, "")
}
