package engine

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// A Variable defines its varName from an expression, for the nodes below.

// variableKind is Variable.
func variableKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "Variable", NodeType: scenario.TypeVariable, Group: nodes.GroupBase, Label: "Variable",
		Description: "Defines a variable from an expression, for the nodes below.",
		Parameters: []nodes.ParamSpec{
			{Name: "varName", In: nodes.InNode, Editor: nodes.EditorVariableName, Type: "string", Required: true, Default: "var",
				Label: "Name", Description: "The variable's name, used as #name below."},
			{Name: "value", In: nodes.InNode, Editor: nodes.EditorExpression, Required: true, Label: "Value",
				Description: "The expression whose value the variable holds."},
		},
		Validate: checkVariable,
		Typed:    typedVariable,
		Runtime:  builder(newVariable),
	}
}

func checkVariable(c *nodes.Check) {
	name, ok := c.DefineName("varName", c.Node().VarName)
	t := expression.Unknown
	if c.Node().Value == nil {
		c.Errorf("value", nodes.CodeMissingParameter, "the variable needs a value expression")
	} else if prog := c.Compile("value", c.Node().Value, c.In().Env(), expression.Unknown); prog != nil {
		t = expression.Boundary(prog.Result())
	}
	c.SetOut(c.In())
	if ok {
		c.SetOut(c.With(c.In(), name, t))
	}
}

// VariablePlan is a Variable's plan: it defines Name as Value.
type VariablePlan struct {
	Name  string
	Value nodes.Expr
}

func typedVariable(c *nodes.Check) any {
	return &VariablePlan{Name: c.Node().VarName, Value: c.Expr("value")}
}

type variable struct {
	field string
	value *evaluator
}

func newVariable(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*VariablePlan)
	n.varName = p.Name
	return &variable{field: p.Value.Field, value: n.evaluator(p.Value)}, nil
}

func (o *variable) process(e *Engine, n *node, ev *event, _ string) {
	v, err := o.value.eval(ev)
	if err != nil {
		e.fail(n, o.field, err)
		return
	}
	n.counts.Out++
	e.forward(n, n.withMade(ev, v, o.value.made), "")
}
