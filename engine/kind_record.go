package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A VariableBuilder (record variable) defines its varName as a record, one expression per
// field.

// recordVariableKind is VariableBuilder, the record variable.
func recordVariableKind() *nodes.Kind {
	return &nodes.Kind{
		ID: "VariableBuilder", NodeType: scenario.TypeVariableBuilder, Group: nodes.GroupBase, Label: "Record variable",
		Description: "Defines a record variable, one expression per field.",
		Parameters: []nodes.ParamSpec{
			{Name: "varName", In: nodes.InNode, Editor: nodes.EditorVariableName, Type: "string", Required: true, Default: "record",
				Label: "Name", Description: "The variable's name, used as #name below."},
			{Name: "fields", In: nodes.InNode, Editor: nodes.EditorRecordFields, Required: true, Label: "Fields",
				Description: "The record's fields: [{\"name\": ..., \"expression\": {...}}], names unique."},
		},
		Validate: checkVariableBuilder,
		Typed:    typedRecord,
		Runtime:  builder(newRecordVariable),
	}
}

func checkVariableBuilder(c *nodes.Check) {
	name, ok := c.DefineName("varName", c.Node().VarName)
	if len(c.Node().Fields) == 0 {
		c.Errorf("fields", nodes.CodeMissingParameter, "the record variable needs at least one field")
	}
	env := c.In().Env()
	seen := map[string]int{}
	var fields []expression.Field
	for i, f := range c.Node().Fields {
		field := fmt.Sprintf("fields[%d]", i)
		if f.Name == "" {
			c.Errorf(field+".name", nodes.CodeMissingParameter, "field %d has no name", i)
		} else if prev, dup := seen[f.Name]; dup {
			c.Errorf(field+".name", nodes.CodeDuplicateName, "fields %d and %d are both named %q", prev, i, f.Name)
		} else {
			seen[f.Name] = i
		}
		t := expression.Unknown
		if f.Expression == nil {
			c.Errorf(field+".expression", nodes.CodeMissingParameter, "field %q has no expression", f.Name)
		} else if prog := c.Compile(field+".expression", f.Expression, env, expression.Unknown); prog != nil {
			t = expression.Boundary(prog.Result())
		}
		if f.Name != "" {
			fields = append(fields, expression.Field{Name: f.Name, Type: t})
		}
	}
	c.SetOut(c.In())
	if ok {
		c.SetOut(c.With(c.In(), name, expression.RecordOf(fields...)))
	}
}

// RecordPlan is a VariableBuilder's plan: it defines Name as a record of Fields.
type RecordPlan struct {
	Name   string
	Fields []RecordField
}

// RecordField is one field of a record variable.
type RecordField struct {
	Name  string
	Value nodes.Expr
}

func typedRecord(c *nodes.Check) any {
	p := &RecordPlan{Name: c.Node().VarName}
	for i, f := range c.Node().Fields {
		p.Fields = append(p.Fields, RecordField{Name: f.Name, Value: c.Expr(fmt.Sprintf("fields[%d].expression", i))})
	}
	return p
}

type recordVariable struct {
	names      []string
	fieldPaths []string
	fields     []*evaluator
}

func newRecordVariable(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*RecordPlan)
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
	held := ev.held // each field runs with what the fields before it left of the event's bound
	defer func() { ev.held = held }()
	for i, p := range r.fields {
		if i > 0 && e.haltedAt(n, true) { // between fields: a thousand slow ones are one node
			return
		}
		v, err := p.eval(ev)
		if err != nil {
			e.fail(n, r.fieldPaths[i], err)
			return
		}
		vals[i] = v
		ev.held += p.made
	}
	made := ev.held - held
	ev.held = held
	n.counts.Out++
	e.forward(n, n.withMade(ev, value.NewRecord(r.names, vals), made), "")
}
