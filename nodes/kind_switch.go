package nodes

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// switchKind is Switch, the choice.
func switchKind() *Kind {
	return &Kind{
		ID: "Switch", NodeType: scenario.TypeSwitch, Group: GroupBase, Label: "Choice",
		Description: "Sends each event down the first NextSwitch edge whose condition is true, in edge order, or else down the SwitchDefault edge if there is one.",
		Parameters:  []ParamSpec{},
		check:       checkSwitch,
		typed:       typedSwitch,
	}
}

func checkSwitch(c *nodeCheck) {
	env := c.in.env()
	for _, e := range c.v.g.Out[c.i] {
		edge := &c.v.s.Edges[e]
		if edge.EdgeType == nil || edge.EdgeType.Type != scenario.EdgeNextSwitch || edge.EdgeType.Condition == nil {
			continue
		}
		c.compile(fmt.Sprintf("edges[%d].edgeType.condition", e), edge.EdgeType.Condition, env, expression.Boolean.OrNull())
	}
	c.out = c.in
}

// SwitchPlan is a Switch's plan: the conditions of its NextSwitch edges, in edge order.
type SwitchPlan struct{ Cases []SwitchCase }

// SwitchCase is one NextSwitch edge: its index in the scenario's edges, the node it leads
// to, its condition.
type SwitchCase struct {
	Edge      int
	To        string
	Condition Expr
}

func typedSwitch(c *nodeCheck) any {
	p := &SwitchPlan{}
	for _, e := range c.v.g.Out[c.i] {
		edge := &c.v.s.Edges[e]
		if edge.EdgeType != nil && edge.EdgeType.Type == scenario.EdgeNextSwitch {
			p.Cases = append(p.Cases, SwitchCase{Edge: e, To: edge.To, Condition: c.expr(fmt.Sprintf("edges[%d].edgeType.condition", e))})
		}
	}
	return p
}
