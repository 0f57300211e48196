package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/value"
)

// A VariableBuilder (record variable) defines its varName as a record, one expression per
// field.

var _ = builtIn(newRecordVariable, "VariableBuilder")

type recordVariable struct {
	names  []string
	fields []*evaluator
}

func newRecordVariable(_ *Engine, n *node) (operator, error) {
	n.varName = n.plan.Node.VarName
	r := &recordVariable{}
	for i, f := range n.plan.Node.Fields {
		r.names = append(r.names, f.Name)
		r.fields = append(r.fields, n.program(fmt.Sprintf("fields[%d].expression", i)))
	}
	return r, nil
}

func (r *recordVariable) process(e *Engine, n *node, ev *event, _ string) {
	vals := make([]value.Value, len(r.fields))
	for i, p := range r.fields {
		v, err := p.eval(ev)
		if err != nil {
			e.fail(n, fmt.Sprintf("fields[%d].expression", i), err)
			return
		}
		vals[i] = v
	}
	n.counts.Out++
	e.forward(n, n.with(ev, value.NewRecord(r.names, vals)), "")
}
