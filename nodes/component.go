package nodes

import (
	"fmt"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A component is one registered Kind: its spec (what the palette and forms render), its
// validation, the Plan its validation leaves, and the operator the engine runs. The built-in
// kinds are checked by this package and run by operators built into the engine (one file per
// kind there, engine/op_*.go); a kind registered from elsewhere brings its own, through
// Kind.Validate and Kind.NewOperator, and needs no other package edited. Its lifecycle, as
// Caddy's modules have theirs:
//
//  1. Registry.Register checks the spec once (its ID, its checks).
//  2. Validate calls Kind.Validate for every node of the kind, in graph order, with the
//     variables in scope; what it compiles goes into the node's Plan.
//  3. The engine calls Kind.NewOperator once per node, with the Plan, when it builds a
//     scenario (a run, a test run, a node test, a deployment's start or restart).
//  4. The engine calls Operator.Process for every event that reaches the node.
//  5. The operator is dropped with its engine; it holds nothing to close.

// Operator runs the nodes of a kind registered from outside the server's built-in kinds
// (Kind.NewOperator).
type Operator interface {
	// Process is called once for every event that reaches the node, on the engine's
	// goroutine, one event at a time; the engine takes the next event only once Process has
	// returned. in and out are valid only during the call. Process passes the event on with
	// out.Send (any number of times, none to drop it). A returned error is a per-event error
	// of the node (a *FieldError names the field; any other error is reported without one):
	// the engine counts and records it, the event goes no further, and the run goes on. An
	// error never stops the run, so Process must not return one for what is not the event's
	// fault.
	Process(in Event, out Sender) error
}

// OperatorFunc is an Operator that is a function.
type OperatorFunc func(in Event, out Sender) error

// Process calls f.
func (f OperatorFunc) Process(in Event, out Sender) error { return f(in, out) }

// Event is the event an Operator is given: its variables and event time.
type Event interface {
	// Var returns variable name (without '#'), and false when it is not set.
	Var(name string) (value.Value, bool)
	// Eval runs the node's expression of field (a key of its Plan's Programs, such as
	// "text" for an expression parameter) on the event. It fails as the expression fails,
	// and for a field the node has no expression for.
	Eval(field string) (value.Value, error)
	// Time is the event time, epoch ms.
	Time() int64
}

// Sender passes events on from an Operator.
type Sender interface {
	// Send passes the event on along the node's outgoing edges of edgeType ("" for every
	// edge but Late edges), with the variables of set set on it (nil or empty: unchanged).
	// A variable set must be one the node defines in Validate (Check.DefineVariable); others
	// are ignored. Send returns once the nodes below have had the event.
	Send(edgeType string, set map[string]value.Value)
	// Write writes v as the node's value for the event, as a sink writes its value: a
	// deployment hands it to the sink's connector.Output (deploy.Config.Connectors), a test
	// run lists it among the sink's outputs. It is for the operators of RoleSink kinds.
	Write(v value.Value)
}

// FieldError is a per-event error of a field of the node (its Field is the field's path, as
// in validation problems: "text", "fields[0].expression").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// Check is what a registered kind's Validate sees of one node: its parameters, the
// variables in scope, and where to report problems. Problems are reported at a field of the
// node; the node's Plan keeps what the checks compiled.
type Check struct{ c *nodeCheck }

// Node returns the node being checked.
func (k *Check) Node() *scenario.Node { return k.c.n }

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

// String returns the string parameter name (reported when it is not a string), and false
// when it is absent or not a string.
func (k *Check) String(name string) (string, bool) { return k.c.stringParam(name) }

// DefineVariable checks the name of a variable the node defines, given in the node's field
// (a name already in scope, reserved or invalid is reported there), and, when it can be
// used, adds it with type t to the scope of the nodes below.
func (k *Check) DefineVariable(field, name string, t expression.Type) {
	if name, ok := k.c.defineName(field, name); ok {
		k.c.out = k.c.out.with(name, t, k.c.n.ID)
	}
}

// Errorf reports an error of the node at field.
func (k *Check) Errorf(field, code, format string, args ...any) {
	k.c.errorf(field, code, format, args...)
}

// checkRegistered runs a registered kind's Validate: the node passes its scope on, plus the
// variables Validate defines.
func checkRegistered(k *Kind) func(c *nodeCheck) {
	return func(c *nodeCheck) {
		c.out = c.in
		k.Validate(&Check{c: c})
	}
}

// prepareRegistered completes a kind registered with Validate: its checks and, when it says
// none, the edges of its node type (without a Late output).
func prepareRegistered(k *Kind) error {
	if k.Validate == nil {
		return nil
	}
	if k.check != nil {
		return fmt.Errorf("registering node kind %q: it has its own checks", k.ID)
	}
	if k.NewOperator == nil {
		return fmt.Errorf("registering node kind %q: it has Validate but no NewOperator", k.ID)
	}
	k.check = checkRegistered(k)
	if k.Edges.Outputs == nil && k.Edges.MinInputs == 0 && k.Edges.MaxInputs == 0 {
		k.Edges = edgeRulesOf(k)
	}
	return nil
}
