package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Switch (choice) sends each event down the first NextSwitch edge whose condition is true,
// in edge order, or else down its SwitchDefault edge when it has one.

// switchKind is Switch, the choice.
func switchKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "Switch", NodeType: scenario.TypeSwitch, Group: nodes.GroupBase, Label: "Choice",
		Description: "Sends each event down the first NextSwitch edge whose condition is true, in edge order, or else down the SwitchDefault edge if there is one.",
		Parameters:  []nodes.ParamSpec{},
		Validate:    checkSwitch,
		Typed:       typedSwitch,
		Runtime:     builder(newSwitch),
	}
}

func checkSwitch(c *nodes.Check) {
	env := c.In().Env()
	for _, e := range c.OutEdges() {
		edge := &c.Scenario().Edges[e]
		if edge.EdgeType == nil || edge.EdgeType.Type != scenario.EdgeNextSwitch || edge.EdgeType.Condition == nil {
			continue
		}
		c.Compile(fmt.Sprintf("edges[%d].edgeType.condition", e), edge.EdgeType.Condition, env, expression.Boolean.OrNull())
	}
	c.SetOut(c.In())
}

// SwitchPlan is a Switch's plan: the conditions of its NextSwitch edges, in edge order.
type SwitchPlan struct{ Cases []SwitchCase }

// SwitchCase is one NextSwitch edge: its index in the scenario's edges, the node it leads
// to, its condition.
type SwitchCase struct {
	Edge      int
	To        string
	Condition nodes.Expr
}

func typedSwitch(c *nodes.Check) any {
	p := &SwitchPlan{}
	for _, e := range c.OutEdges() {
		edge := &c.Scenario().Edges[e]
		if edge.EdgeType != nil && edge.EdgeType.Type == scenario.EdgeNextSwitch {
			p.Cases = append(p.Cases, SwitchCase{Edge: e, To: edge.To, Condition: c.Expr(fmt.Sprintf("edges[%d].edgeType.condition", e))})
		}
	}
	return p
}

type choice struct{}

func newSwitch(*Engine, *node) (operator, error) { return choice{}, nil }

// wire attaches each NextSwitch edge's compiled condition.
func (choice) wire(_ *Engine, n *node) {
	for _, c := range n.plan.Typed.(*SwitchPlan).Cases {
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
		if i > 0 && e.haltedAt(n, true) { // between conditions, as between nodes
			return
		}
		v, err := out.cond.eval(ev)
		var pass bool
		if err == nil {
			pass, err = truth(v)
		}
		if err != nil {
			e.failExpr(n, "condition", out.condField, err)
			return
		}
		if pass {
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
