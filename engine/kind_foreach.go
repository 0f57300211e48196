package engine

import (
	"errors"
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A CustomNode "for-each" sends one event per element of a list, with the element in its
// outputVar.

// forEachKind is CustomNode "for-each".
func forEachKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "CustomNode/for-each", NodeType: scenario.TypeCustomNode, Subtype: "for-each", Group: nodes.GroupBase, Label: "For each",
		Description: "Sends one event per element of a list, with the element in outputVar.",
		Parameters: []nodes.ParamSpec{
			outputVarSpec("element", "The variable holding the current element."),
			{Name: "Elements", In: nodes.InParameters, Editor: nodes.EditorExpression, Type: "list", Required: true, Label: "Elements",
				Description: "An expression giving a list."},
		},
		Validate: checkForEach,
		Typed:    typedForEach,
		Runtime:  builder(newForEach),
	}
}

func checkForEach(c *nodes.Check) {
	name, ok := c.DefineName("outputVar", c.Node().OutputVar)
	elem := expression.Unknown
	if e := c.ExpressionParam("Elements"); e != nil {
		if prog := c.Compile("Elements", e, c.In().Env(), expression.ListOf(expression.Unknown).OrNull()); prog != nil {
			if t := expression.Boundary(prog.Result()); t.Kind == expression.KindList && t.Elem != nil {
				elem = *t.Elem
			}
		}
	}
	c.SetOut(c.In())
	if ok {
		c.SetOut(c.With(c.In(), name, elem))
	}
}

// ForEachPlan is a for-each's plan: one event per element of Elements, in OutputVar.
type ForEachPlan struct {
	OutputVar string
	Elements  nodes.Expr
}

func typedForEach(c *nodes.Check) any {
	return &ForEachPlan{OutputVar: c.Node().OutputVar, Elements: c.Expr("Elements")}
}

type forEach struct {
	field    string
	elements *evaluator
}

func newForEach(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*ForEachPlan)
	n.varName = p.OutputVar
	return &forEach{field: p.Elements.Field, elements: n.evaluator(p.Elements)}, nil
}

// MaxForEachEvents is the most events the for-each nodes may send for one input event (one
// record pushed, or one Tick or Flush), all of them together: nested for-each nodes multiply
// (1..100000 inside 1..100000 is 10^10 events), and the engine takes an input event whole
// before the next, a cancel included. The event past it is a per-event error at the for-each
// node that reached it (field Elements, wrapping ErrTooManyEvents); the rest of the input
// event's elements are not sent, by any for-each node.
const MaxForEachEvents = 100_000

// ErrTooManyEvents is the error of a for-each past MaxForEachEvents.
var ErrTooManyEvents = errors.New("too many events")

// ErrNotAList is the per-event error of a for-each whose Elements gave a value other than a
// list or null (null sends no event): a string, number, boolean or record was dropped
// without a word (a new user's round), where a filter's or a switch's value of the wrong
// type is an error.
var ErrNotAList = errors.New("not a list")

func (f *forEach) process(e *Engine, n *node, ev *event, _ string) {
	v, err := f.elements.eval(ev)
	if err != nil {
		e.fail(n, f.field, err)
		return
	}
	if k := v.Kind(); k != value.KindList {
		if k != value.KindNull { // null (a field the event does not have): no elements
			e.fail(n, f.field, fmt.Errorf("%w: Elements gave %s %s, not a list", ErrNotAList, article(k), k))
		}
		return
	}
	made := f.elements.made // the list is held while its elements go
	for _, item := range v.List() {
		if e.CheckState() {
			return // the state passed Options.MaxStateBytes: the caller stops the run
		}
		if e.forEachSent >= MaxForEachEvents || e.stopped || e.abandoned {
			if !e.forEachOver && !e.stopped && !e.abandoned {
				e.forEachOver = true
				e.fail(n, f.field, fmt.Errorf("%w: the for-each nodes would send more than %d events for one input event; the rest are not sent", ErrTooManyEvents, MaxForEachEvents))
			}
			return
		}
		e.forEachSent++
		n.counts.Out++
		e.forward(n, n.withMade(ev, item, made), "")
	}
}
