package nodes

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// variableKind is Variable.
func variableKind() *Kind {
	return &Kind{
		ID: "Variable", NodeType: scenario.TypeVariable, Group: GroupBase, Label: "Variable",
		Description: "Defines a variable from an expression, for the nodes below.",
		Parameters: []ParamSpec{
			{Name: "varName", In: InNode, Editor: EditorVariableName, Type: "string", Required: true, Default: "var",
				Label: "Name", Description: "The variable's name, used as #name below."},
			{Name: "value", In: InNode, Editor: EditorExpression, Required: true, Label: "Value",
				Description: "The expression whose value the variable holds."},
		},
		check: checkVariable,
		typed: typedVariable,
	}
}

func checkVariable(c *nodeCheck) {
	name, ok := c.defineName("varName", c.n.VarName)
	t := expression.Unknown
	if c.n.Value == nil {
		c.errorf("value", CodeMissingParameter, "the variable needs a value expression")
	} else if prog := c.compile("value", c.n.Value, c.in.env(), expression.Unknown); prog != nil {
		t = expression.Boundary(prog.Result())
	}
	c.out = c.in
	if ok {
		c.out = c.in.with(name, t, c.n.ID)
	}
}

// VariablePlan is a Variable's plan: it defines Name as Value.
type VariablePlan struct {
	Name  string
	Value Expr
}

func typedVariable(c *nodeCheck) any {
	return &VariablePlan{Name: c.n.VarName, Value: c.expr("value")}
}
