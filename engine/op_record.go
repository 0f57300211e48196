package engine

import (
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/value"
)

// A VariableBuilder (record variable) defines its varName as a record, one expression per
// field.

var _ = builtIn(newRecordVariable, "VariableBuilder")

type recordVariable struct {
	names      []string
	fieldPaths []string
	fields     []*evaluator
}

func newRecordVariable(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.RecordPlan)
	n.varName = p.Name
	r := &recordVariable{}
	for _, f := range p.Fields {
		r.names = append(r.names, f.Name)
		r.fieldPaths = append(r.fieldPaths, f.Value.Field)
		r.fields = append(r.fields, n.evaluator(f.Value))
	}
	return r, nil
}

func (r *recordVariable) process(e *Engine, n *node, ev *event, _ string) {
	vals := make([]value.Value, len(r.fields))
	for i, p := range r.fields {
		v, err := p.eval(ev)
		if err != nil {
			e.fail(n, r.fieldPaths[i], err)
			return
		}
		vals[i] = v
	}
	n.counts.Out++
	e.forward(n, n.with(ev, value.NewRecord(r.names, vals)), "")
}
