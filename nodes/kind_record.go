package nodes

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// recordVariableKind is VariableBuilder, the record variable.
func recordVariableKind() *Kind {
	return &Kind{
		ID: "VariableBuilder", NodeType: scenario.TypeVariableBuilder, Group: GroupBase, Label: "Record variable",
		Description: "Defines a record variable, one expression per field.",
		Parameters: []ParamSpec{
			{Name: "varName", In: InNode, Editor: EditorVariableName, Type: "string", Required: true, Default: "record",
				Label: "Name", Description: "The variable's name, used as #name below."},
			{Name: "fields", In: InNode, Editor: EditorRecordFields, Required: true, Label: "Fields",
				Description: "The record's fields: [{\"name\": ..., \"expression\": {...}}], names unique."},
		},
		check: checkVariableBuilder,
		typed: typedRecord,
	}
}

func checkVariableBuilder(c *nodeCheck) {
	name, ok := c.defineName("varName", c.n.VarName)
	if len(c.n.Fields) == 0 {
		c.errorf("fields", CodeMissingParameter, "the record variable needs at least one field")
	}
	env := c.in.env()
	seen := map[string]int{}
	var fields []expression.Field
	for i, f := range c.n.Fields {
		field := fmt.Sprintf("fields[%d]", i)
		if f.Name == "" {
			c.errorf(field+".name", CodeMissingParameter, "field %d has no name", i)
		} else if prev, dup := seen[f.Name]; dup {
			c.errorf(field+".name", CodeDuplicateName, "fields %d and %d are both named %q", prev, i, f.Name)
		} else {
			seen[f.Name] = i
		}
		t := expression.Unknown
		if f.Expression == nil {
			c.errorf(field+".expression", CodeMissingParameter, "field %q has no expression", f.Name)
		} else if prog := c.compile(field+".expression", f.Expression, env, expression.Unknown); prog != nil {
			t = expression.Boundary(prog.Result())
		}
		if f.Name != "" {
			fields = append(fields, expression.Field{Name: f.Name, Type: t})
		}
	}
	c.out = c.in
	if ok {
		c.out = c.in.with(name, expression.RecordOf(fields...), c.n.ID)
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
	Value Expr
}

func typedRecord(c *nodeCheck) any {
	p := &RecordPlan{Name: c.n.VarName}
	for i, f := range c.n.Fields {
		p.Fields = append(p.Fields, RecordField{Name: f.Name, Value: c.expr(fmt.Sprintf("fields[%d].expression", i))})
	}
	return p
}
