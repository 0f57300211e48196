package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/scenario"
)

// A Switch (choice) sends each event down the first NextSwitch edge whose condition is true,
// in edge order, or else down its SwitchDefault edge when it has one.

var _ = builtIn(newSwitch, "Switch")

type choice struct{}

func newSwitch(*Engine, *node) (operator, error) { return choice{}, nil }

// wire attaches each NextSwitch edge's compiled condition.
func (choice) wire(e *Engine, n *node, s *scenario.Scenario) {
	k := 0
	for ei, ed := range s.Edges {
		if ed.From != n.id {
			continue
		}
		field := fmt.Sprintf("edges[%d].edgeType.condition", ei)
		for ; k < len(n.out); k++ {
			if n.out[k].to.id == ed.To {
				n.out[k].cond = e.lay.newEvaluator(n.plan.Programs[field])
				n.out[k].condField = field
				k++
				break
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
