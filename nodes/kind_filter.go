package nodes

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// filterKind is Filter.
func filterKind() *Kind {
	return &Kind{
		ID: "Filter", NodeType: scenario.TypeFilter, Group: GroupBase, Label: "Filter",
		Description: "Passes the events for which the expression is true on its FilterTrue edge, the others on its optional FilterFalse edge.",
		Parameters: []ParamSpec{{Name: "expression", In: InNode, Editor: EditorExpression, Type: "boolean", Required: true, Default: "true",
			Label: "Expression", Description: "A boolean expression."}},
		check: checkFilter,
		typed: typedFilter,
	}
}

func checkFilter(c *nodeCheck) {
	if c.n.Expression == nil {
		c.errorf("expression", CodeMissingParameter, "the filter needs an expression, true for the events to pass")
	} else {
		c.compile("expression", c.n.Expression, c.in.env(), expression.Boolean.OrNull())
	}
	c.out = c.in
}

// FilterPlan is a Filter's plan.
type FilterPlan struct{ Expression Expr }

func typedFilter(c *nodeCheck) any { return &FilterPlan{Expression: c.expr("expression")} }
