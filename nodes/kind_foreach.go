package nodes

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// forEachKind is CustomNode "for-each".
func forEachKind() *Kind {
	return &Kind{
		ID: "CustomNode/for-each", NodeType: scenario.TypeCustomNode, Subtype: "for-each", Group: GroupBase, Label: "For each",
		Description: "Sends one event per element of a list, with the element in outputVar.",
		Parameters: []ParamSpec{
			outputVarSpec("element", "The variable holding the current element."),
			{Name: "Elements", In: InParameters, Editor: EditorExpression, Type: "list", Required: true, Label: "Elements",
				Description: "An expression giving a list."},
		},
		check: checkForEach,
		typed: typedForEach,
	}
}

func checkForEach(c *nodeCheck) {
	name, ok := c.defineName("outputVar", c.n.OutputVar)
	elem := expression.Unknown
	if e := c.expressionParam("Elements"); e != nil {
		if prog := c.compile("Elements", e, c.in.env(), expression.ListOf(expression.Unknown).OrNull()); prog != nil {
			if t := expression.Boundary(prog.Result()); t.Kind == expression.KindList && t.Elem != nil {
				elem = *t.Elem
			}
		}
	}
	c.out = c.in
	if ok {
		c.out = c.in.with(name, elem, c.n.ID)
	}
}

// ForEachPlan is a for-each's plan: one event per element of Elements, in OutputVar.
type ForEachPlan struct {
	OutputVar string
	Elements  Expr
}

func typedForEach(c *nodeCheck) any {
	return &ForEachPlan{OutputVar: c.n.OutputVar, Elements: c.expr("Elements")}
}
