package nodes

import (
	"fmt"
	"slices"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// A component is one registered Kind: its spec (what the palette and forms render), its
// validation (Kind.Validate, through Check), the typed plan its validation leaves
// (Kind.Typed) and the operator the engine runs. This package is the framework: it holds
// no kind. The built-in kinds live in the engine, one file each (engine/kind_*.go, whose
// operators are the engine's own: Kind.Runtime); a kind registered from elsewhere brings its
// operator through Kind.NewOperator, and needs no other package edited. Both are checked
// through the same Check. Its lifecycle, as Caddy's modules have theirs:
//
//  1. Registry.Register checks the spec once (its ID, its checks, its operator).
//  2. Validate calls Kind.Validate for every node of the kind, in graph order, with the
//     variables in scope; what it compiles goes into the node's Plan, and Kind.Typed makes
//     Plan.Typed from it.
//  3. The engine calls Kind.NewOperator (or builds its own, Kind.Runtime) once per node,
//     with the Plan, when it builds a scenario (a run, a test run, a node test, a
//     deployment's start or restart).
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
	// are ignored. A variable the node defines but does not set reads as null below it, and a
	// field of it (#v.f) is a per-event error there. Send returns once the nodes below have
	// had the event.
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

// prepare completes a kind being registered: it needs Validate and an operator (NewOperator,
// or the engine's own, Runtime); when it says none, it takes the edges of its node type
// (without a Late output for a CustomNode: EdgeRulesOf).
func prepare(k *Kind) error {
	if k.Validate == nil {
		return fmt.Errorf("registering node kind %q: it has no checks", k.ID)
	}
	if k.NewOperator == nil && k.Runtime == nil {
		return fmt.Errorf("registering node kind %q: it has Validate but no NewOperator", k.ID)
	}
	if k.Edges.Outputs == nil && k.Edges.MinInputs == 0 && k.Edges.MaxInputs == 0 {
		k.Edges = EdgeRulesOf(k.NodeType)
	}
	return nil
}

// EdgeRulesOf is the edges a kind of node type t takes and gives when it says none: its node
// type's (scenario.RulesFor), without a Late output for a CustomNode (a kind with late events
// gives its edges itself).
func EdgeRulesOf(t scenario.NodeType) scenario.EdgeRules {
	r := scenario.RulesFor(t)
	if t == scenario.TypeCustomNode {
		r.Outputs = slices.DeleteFunc(slices.Clone(r.Outputs), func(r scenario.OutputRule) bool {
			return r.EdgeType == scenario.EdgeLate
		})
	}
	return r
}

// hasLateOutput says whether kind k gives a Late edge (its Edges have a Late output).
func hasLateOutput(k *Kind) bool {
	for _, o := range k.Edges.Outputs {
		if o.EdgeType == scenario.EdgeLate {
			return true
		}
	}
	return false
}
