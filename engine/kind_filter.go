package engine

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Filter passes the events for which its expression is true on its FilterTrue edge, the
// others on its FilterFalse edge when it has one.

// filterKind is Filter.
func filterKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "Filter", NodeType: scenario.TypeFilter, Group: nodes.GroupBase, Label: "Filter",
		Description: "Passes the events for which the expression is true on its FilterTrue edge, the others on its optional FilterFalse edge.",
		Parameters: []nodes.ParamSpec{{Name: "expression", In: nodes.InNode, Editor: nodes.EditorExpression, Type: "boolean", Required: true, Default: "true",
			Label: "Expression", Description: "A boolean expression."}},
		Validate: checkFilter,
		Typed:    typedFilter,
		Runtime:  builder(newFilter),
	}
}

func checkFilter(c *nodes.Check) {
	if c.Node().Expression == nil {
		c.Errorf("expression", nodes.CodeMissingParameter, "the filter needs an expression, true for the events to pass")
	} else {
		c.Compile("expression", c.Node().Expression, c.In().Env(), expression.Boolean.OrNull())
	}
	c.SetOut(c.In())
}

// FilterPlan is a Filter's plan.
type FilterPlan struct{ Expression nodes.Expr }

func typedFilter(c *nodes.Check) any { return &FilterPlan{Expression: c.Expr("expression")} }

type filter struct {
	field string
	expr  *evaluator
}

func newFilter(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*FilterPlan)
	return &filter{field: p.Expression.Field, expr: n.evaluator(p.Expression)}, nil
}

func (f *filter) process(e *Engine, n *node, ev *event, _ string) {
	v, err := f.expr.eval(ev)
	if err != nil {
		e.fail(n, f.field, err)
		return
	}
	pass, err := truth(v)
	if err != nil {
		e.fail(n, f.field, err)
		return
	}
	typ := scenario.EdgeFilterFalse
	if pass {
		typ = scenario.EdgeFilterTrue
	}
	if typ == scenario.EdgeFilterTrue || n.hasEdge(typ) {
		n.counts.Out++
	}
	e.forward(n, ev, typ)
}
