package engine

import (
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Switch (choice) sends each event down the first NextSwitch edge whose condition is true,
// in edge order, or else down its SwitchDefault edge when it has one.

var _ = builtIn(newSwitch, "Switch")

type choice struct{}

func newSwitch(*Engine, *node) (operator, error) { return choice{}, nil }

// wire attaches each NextSwitch edge's compiled condition.
func (choice) wire(_ *Engine, n *node) {
	for _, c := range n.plan.Typed.(*nodes.SwitchPlan).Cases {
		for k := range n.out {
			if n.out[k].index == c.Edge {
				n.out[k].cond, n.out[k].condField = n.evaluator(c.Condition), c.Condition.Field
			}
		}
	}
}

func (choice) process(e *Engine, n *node, ev *event, _ string) {
	for i := range n.out {
		out := &n.out[i]
		if out.typ != scenario.EdgeNextSwitch || out.cond == nil {
			continue
		}
		v, err := out.cond.eval(ev)
		if err != nil {
			e.failExpr(n, "condition", out.condField, err)
			return
		}
		if v.Bool() {
			n.counts.Out++
			e.send(n, out, ev)
			return
		}
	}
	for i := range n.out {
		if n.out[i].typ == scenario.EdgeSwitchDefault {
			n.counts.Out++
			e.send(n, &n.out[i], ev)
			return
		}
	}
}
