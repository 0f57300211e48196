package nodes

import (
	"encoding/json"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// Check is what a kind's Validate (and Typed) sees of one node: its parameters, the
// variables in scope, and where to report problems. Validate runs once the node's parameters
// were matched against its kind's Parameters (unknown, duplicate and missing required ones
// are reported before it); it reports what else is wrong at a field of the node, and sets the
// scope of the nodes below (by default, the node's own: SetOut). What it compiles and parses
// goes into the node's Plan (Programs, Params, Aggregations); Typed then makes the kind's
// typed plan from it.
//
// The typed parameter readers (String, Duration, Enum, Bool, Int, ExpressionList,
// Aggregations) read an entry of the node's "parameters", or its kind's default when it is
// absent; they report a value of the wrong form at the parameter's name (or at name[i] for an
// item of a list) and then return false, as they do for an absent parameter without a
// default. String, Duration, Enum, Bool and Int record what they parsed in Plan.Params,
// Aggregations in Plan.Aggregations.
type Check struct{ c *nodeCheck }

// Node returns the node being checked.
func (k *Check) Node() *scenario.Node { return k.c.n }

// Kind returns the node's kind.
func (k *Check) Kind() *Kind { return k.c.k }

// Registry returns the registry the scenario is validated with (its aggregators, ...).
func (k *Check) Registry() *Registry { return k.c.v.reg }

// Scenario returns the scenario the node is part of.
func (k *Check) Scenario() *scenario.Scenario { return k.c.v.s }

// InEdges returns the indexes, in Scenario().Edges, of the edges into the node.
func (k *Check) InEdges() []int { return k.c.v.g.In[k.c.i] }

// OutEdges returns the indexes, in Scenario().Edges, of the edges out of the node.
func (k *Check) OutEdges() []int { return k.c.v.g.Out[k.c.i] }

// Plan returns the node's plan so far: what the checks compiled and parsed.
func (k *Check) Plan() *Plan { return k.c.plan }

// Scope is the variables in scope at a point of the graph, with their types and the nodes
// that defined them. The zero Scope is unknown (no source reaches the node, or it lies on a
// cycle): expressions are compiled in it without knowing the variables.
type Scope struct{ s scope }

// EmptyScope returns a known scope without variables.
func EmptyScope() Scope { return Scope{s: scope{}} }

// Known reports whether the scope is known.
func (s Scope) Known() bool { return s.s != nil }

// Env returns the variables and their types, as expressions are compiled with them (nil
// when the scope is unknown).
func (s Scope) Env() expression.TypeEnv { return s.s.env() }

// Keep returns the variables of s named in names (those it has); unknown stays unknown.
func (s Scope) Keep(names ...string) Scope { return Scope{s: keep(s.s, names...)} }

// In returns the scope of the node's input: for a Join, the variables all its branches have.
func (k *Check) In() Scope { return Scope{s: k.c.in} }

// Output returns the scope below node id (its output), as its kind's Validate set it.
func (k *Check) Output(id string) Scope {
	if i, ok := k.c.v.g.ByID[id]; ok {
		return Scope{s: k.c.v.out[i]}
	}
	return Scope{}
}

// With returns s with variable name of type t, defined by the node being checked (unknown
// stays unknown). Use DefineName first to check the name.
func (k *Check) With(s Scope, name string, t expression.Type) Scope {
	return Scope{s: s.s.with(name, k.c.boundType(name, t), k.c.n.ID)}
}

// SetOut sets the scope of the nodes below: In() unless Validate sets another; the zero
// Scope for a node with no output (a sink).
func (k *Check) SetOut(s Scope) { k.c.out = s.s }

// SetVisible sets the scope reported as the node's variables (Validation.Variables): In()
// unless Validate sets another (a source's is its #input).
func (k *Check) SetVisible(s Scope) { k.c.visible = s.s }

// Given reports whether the node sets parameter name (not its default).
func (k *Check) Given(name string) bool { return k.c.given(name) }

// Literal returns the raw JSON value of a literal parameter, or its default encoded as
// JSON, or nil.
func (k *Check) Literal(name string) json.RawMessage { return k.c.literal(name) }

// Record keeps v, the parsed value of parameter name, in Plan.Params.
func (k *Check) Record(name string, v any) { k.c.record(name, v) }

// Expression compiles the expression parameter name (an entry of the node's "parameters"),
// in the node's scope, wanting a result of type want (expression.Unknown for any). Its
// problems are reported at field name; the compiled program goes into Plan.Programs[name].
// It returns nil when the parameter is absent (a required one is reported missing before
// Validate runs) or does not compile.
func (k *Check) Expression(name string, want expression.Type) *expression.Program {
	e := k.c.expressionParam(name)
	if e == nil {
		return nil
	}
	return k.c.compile(name, e, k.c.in.env(), want)
}

// ExpressionParam returns the expression parameter name, or nil when it is absent.
func (k *Check) ExpressionParam(name string) *scenario.Expression { return k.c.expressionParam(name) }

// Compile compiles e (nil: nothing to compile) in env, wanting a result of type want, and
// reports its problems at field (a warning when it reads the wall clock). The program goes
// into Plan.Programs[field]; it returns nil when e does not compile.
func (k *Check) Compile(field string, e *scenario.Expression, env expression.TypeEnv, want expression.Type) *expression.Program {
	return k.c.compile(field, e, env, want)
}

// ResultProblem reports, at field, an expression whose result type the node cannot use
// (code expression.CodeResultType), at the start of its text.
func (k *Check) ResultProblem(field string, e *scenario.Expression, format string, args ...any) {
	k.c.resultProblem(field, e, format, args...)
}

// String returns the string parameter name (reported when it is not a string), and false
// when it is absent or not a string.
func (k *Check) String(name string) (string, bool) { return k.c.stringParam(name) }

// Duration returns the duration parameter name ("60s", "1h", "PT1H": ParseDuration). It
// reports (CodeInvalidDuration) a value that is not a duration or not a whole number of
// milliseconds, and, when positive is set, one that is not longer than 0.
func (k *Check) Duration(name string, positive bool) (time.Duration, bool) {
	return k.c.durationParam(name, positive)
}

// Enum returns the parameter name, one of its spec's Options (else CodeInvalidEnum).
func (k *Check) Enum(name string) (string, bool) { return k.c.enumParam(name) }

// Bool returns the boolean parameter name.
func (k *Check) Bool(name string) (bool, bool) { return k.c.boolParam(name) }

// Int returns the integer parameter name, within its spec's Min and Max.
func (k *Check) Int(name string) (int64, bool) { return k.c.intParam(name) }

// ExpressionList returns the list-of-expressions parameter name, not compiled (items that
// are not expressions are reported at name[i] and left out; ok is then false).
func (k *Check) ExpressionList(name string) (list []*scenario.Expression, ok bool) {
	return k.c.expressionListParam(name)
}

// Aggregations returns the aggregations parameter name (EditorAggregations), checked: at
// least one, names unique and usable as field names, aggregators known, aggregateBy present
// where the aggregator takes an input, the aggregators' own parameters in range (an entry
// with a problem keeps only its Name). aggregateBy is not compiled. The list also goes into
// Plan.Aggregations.
func (k *Check) Aggregations(name string) []Aggregation { return k.c.aggregationsParam(name) }

// SourceSchema returns the JSON Schema of the events of the node, a source with a "topic",
// from the registry's SourceSchemas (WithSourceSchemas), or nil when there is none (a lookup
// that failed is a CodeSourceSchemaUnknown warning at topic).
func (k *Check) SourceSchema() []byte { return k.c.sourceSchema() }

// DefineName checks name, of a variable the node defines, given in the node's field: a
// reserved, invalid or missing name is reported there and not returned; a name already in
// scope is reported (with the node that defined it) and still returned.
func (k *Check) DefineName(field, name string) (string, bool) { return k.c.defineName(field, name) }

// DefineVariable checks the name of a variable the node defines, given in the node's field
// (a name already in scope, reserved or invalid is reported there), and, when it can be
// used, adds it with type t to the scope of the nodes below.
func (k *Check) DefineVariable(field, name string, t expression.Type) {
	if name, ok := k.c.defineName(field, name); ok {
		k.c.out = k.c.out.with(name, k.c.boundType(name, t), k.c.n.ID)
	}
}

// Errorf reports an error of the node at field.
func (k *Check) Errorf(field, code, format string, args ...any) {
	k.c.errorf(field, code, format, args...)
}

// Warnf reports a warning of the node at field.
func (k *Check) Warnf(field, code, format string, args ...any) {
	k.c.warnf(field, code, format, args...)
}

// Expr returns the node's compiled expression of field (Plan.Programs[field], nil when it
// has none), with its field, for a typed plan.
func (k *Check) Expr(field string) Expr {
	return Expr{Field: field, Program: k.c.plan.Programs[field]}
}

// DurationOr returns the duration parameter name as Validate parsed it (Plan.Params), or
// def.
func (k *Check) DurationOr(name string, def time.Duration) time.Duration {
	if d, ok := k.c.plan.Params[name].(time.Duration); ok {
		return d
	}
	return def
}
