package nodes

import (
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// Typed plans: what a built-in kind's checks leave for the runtime, decoded once (Plan.Typed)
// so that the engine and the deployments read Go fields, not maps keyed by field paths. A
// field path is kept beside each expression, for the messages of its per-event errors.

// Expr is a node's compiled expression and the field it is given in ("expression",
// "groupBy[0]", "edges[3].edgeType.condition"). Program is nil when the node has none.
type Expr struct {
	Field   string
	Program *expression.Program
}

// SourcePlan is a source's plan (Source/file, Source/http, Source/kafka).
type SourcePlan struct {
	Timestamp Expr // nil Program: no timestamp expression
	// MaxOutOfOrderness and MaxFutureSkew, defaults applied.
	MaxOutOfOrderness, MaxFutureSkew time.Duration
	// Live: the source follows an unbounded input and has an IdleTimeout (default
	// applied); a file source has neither.
	Live        bool
	IdleTimeout time.Duration
	Topic, Path string // Kafka's topic, a file's path ("" for the others)
}

// FilterPlan is a Filter's plan.
type FilterPlan struct{ Expression Expr }

// VariablePlan is a Variable's plan: it defines Name as Value.
type VariablePlan struct {
	Name  string
	Value Expr
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

// SwitchPlan is a Switch's plan: the conditions of its NextSwitch edges, in edge order.
type SwitchPlan struct{ Cases []SwitchCase }

// SwitchCase is one NextSwitch edge: its index in the scenario's edges, the node it leads
// to, its condition.
type SwitchCase struct {
	Edge      int
	To        string
	Condition Expr
}

// UnionPlan is a Join union's plan: OutputVar ("" for none) holds, for an event from
// branch From, that branch's Value.
type UnionPlan struct {
	OutputVar string
	Branches  []UnionBranch
}

// UnionBranch is one branch's output expression.
type UnionBranch struct {
	From  string
	Value Expr
}

// ForEachPlan is a for-each's plan: one event per element of Elements, in OutputVar.
type ForEachPlan struct {
	OutputVar string
	Elements  Expr
}

// AggregatePlan is an aggregate's plan (docs/semantics.md §4): per key (GroupBy's values)
// the Aggregations over the window the kind and its parameters say.
type AggregatePlan struct {
	OutputVar    string
	GroupBy      []Expr
	Aggregations []Aggregation
	AggregateBy  []Expr // per aggregation; nil Program for Count
	// The window's parameters, as given or defaulted (zero when the kind has none).
	WindowLength, Slide, Precision, Offset, SessionTimeout time.Duration
	Count, CountSlide                                      int64 // aggregate-count, in events
	EmitWhen                                               string
	EmitWhenEventLeft                                      bool
	TimeZone                                               string
	EndSession                                             Expr
}

// SinkPlan is a sink's plan: the Value it writes; Path for a file sink.
type SinkPlan struct {
	Value Expr
	Path  string
}

// expr is the Expr of the node's field.
func (c *nodeCheck) expr(field string) Expr {
	return Expr{Field: field, Program: c.plan.Programs[field]}
}

// durationOr is a parsed duration parameter, def when absent.
func (c *nodeCheck) durationOr(name string, def time.Duration) time.Duration {
	if d, ok := c.plan.Params[name].(time.Duration); ok {
		return d
	}
	return def
}

func typedSource(c *nodeCheck) any {
	p := &SourcePlan{
		Timestamp:         c.expr("timestamp"),
		MaxOutOfOrderness: c.durationOr("maxOutOfOrderness", DefaultMaxOutOfOrderness),
		MaxFutureSkew:     c.durationOr("maxFutureSkew", DefaultMaxFutureSkew),
	}
	if _, live := c.k.Param("idleTimeout"); live {
		p.Live, p.IdleTimeout = true, c.durationOr("idleTimeout", DefaultIdleTimeout)
	}
	p.Topic, _ = c.plan.Params["topic"].(string)
	p.Path, _ = c.plan.Params["path"].(string)
	return p
}

func typedFilter(c *nodeCheck) any { return &FilterPlan{Expression: c.expr("expression")} }

func typedVariable(c *nodeCheck) any {
	return &VariablePlan{Name: c.n.VarName, Value: c.expr("value")}
}

func typedRecord(c *nodeCheck) any {
	p := &RecordPlan{Name: c.n.VarName}
	for i, f := range c.n.Fields {
		p.Fields = append(p.Fields, RecordField{Name: f.Name, Value: c.expr(fmt.Sprintf("fields[%d].expression", i))})
	}
	return p
}

func typedSwitch(c *nodeCheck) any {
	p := &SwitchPlan{}
	for _, e := range c.v.g.Out[c.i] {
		edge := &c.v.s.Edges[e]
		if edge.EdgeType != nil && edge.EdgeType.Type == scenario.EdgeNextSwitch {
			p.Cases = append(p.Cases, SwitchCase{Edge: e, To: edge.To, Condition: c.expr(fmt.Sprintf("edges[%d].edgeType.condition", e))})
		}
	}
	return p
}

func typedUnion(c *nodeCheck) any {
	p := &UnionPlan{OutputVar: c.n.OutputVar}
	for k, bp := range c.n.BranchParameters {
		for pi, prm := range bp.Parameters {
			if x := c.expr(fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)); x.Program != nil && prm.Expression != nil {
				p.Branches = append(p.Branches, UnionBranch{From: bp.BranchID, Value: x})
			}
		}
	}
	return p
}

func typedForEach(c *nodeCheck) any {
	return &ForEachPlan{OutputVar: c.n.OutputVar, Elements: c.expr("Elements")}
}

func typedAggregate(c *nodeCheck) any {
	p := &AggregatePlan{OutputVar: c.n.OutputVar, Aggregations: c.plan.Aggregations}
	for i := 0; ; i++ {
		x := c.expr(fmt.Sprintf("groupBy[%d]", i))
		if x.Program == nil {
			break
		}
		p.GroupBy = append(p.GroupBy, x)
	}
	for i := range p.Aggregations {
		p.AggregateBy = append(p.AggregateBy, c.expr(fmt.Sprintf("aggregations[%d].aggregateBy", i)))
	}
	p.WindowLength = c.durationOr("windowLength", 0)
	p.Slide = c.durationOr("slide", 0)
	p.Precision = c.durationOr("precision", 0)
	p.Offset = c.durationOr("offset", 0)
	p.SessionTimeout = c.durationOr("sessionTimeout", 0)
	p.Count, _ = c.plan.Params["windowLength"].(int64)
	p.CountSlide, _ = c.plan.Params["slide"].(int64)
	p.EmitWhen, _ = c.plan.Params["emitWhen"].(string)
	p.EmitWhenEventLeft, _ = c.plan.Params["emitWhenEventLeft"].(bool)
	p.TimeZone, _ = c.plan.Params["timeZone"].(string)
	p.EndSession = c.expr("endSessionCondition")
	return p
}

func typedSink(c *nodeCheck) any {
	p := &SinkPlan{Value: c.expr("value")}
	p.Path, _ = c.plan.Params["path"].(string)
	return p
}
