package engine

import (
	"errors"
	"fmt"

	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/value"
)

// externalOperator runs a node kind registered with its own operator (nodes.Kind.NewOperator)
// through nodes.Operator: the event is read through nodes.Event, and Send passes it on.

type externalOperator struct {
	op    nodes.Operator
	progs map[string]*evaluator
	// in and out are handed to every Process call (valid during it only).
	in  externalEvent
	out externalSender
}

func newExternal(e *Engine, n *node) (operator, error) {
	op, err := n.plan.Kind.NewOperator(n.plan)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, fmt.Errorf("node kind %q made no operator", n.plan.Kind.ID)
	}
	x := &externalOperator{op: op, progs: map[string]*evaluator{}}
	for field, prog := range n.plan.Programs {
		x.progs[field] = e.lay.newEvaluator(prog)
	}
	x.in.x, x.out.n = x, n
	return x, nil
}

func (x *externalOperator) process(e *Engine, n *node, ev *event, _ string) {
	x.in.ev, x.out.ev, x.out.e = ev, ev, e
	// What its expressions make counts against the event's bound (event.held) until Process
	// returns: each Eval runs with what the ones before left, and the events it sends on
	// hold all of it (which of the values it passes on is not known: counted high, not
	// low). Before, a kind evaluating a field a hundred times held 100 × 16 MiB.
	held := ev.held
	err := x.op.Process(&x.in, &x.out)
	ev.held = held
	x.in.ev, x.out.ev = nil, nil
	if err == nil {
		return
	}
	var fe *nodes.FieldError
	if errors.As(err, &fe) {
		e.fail(n, fe.Field, fe.Err)
		return
	}
	e.fail(n, "", err)
}

// externalEvent is nodes.Event over an engine event.
type externalEvent struct {
	x  *externalOperator
	ev *event
}

func (in *externalEvent) Var(name string) (value.Value, bool) { return in.ev.Var(name) }

func (in *externalEvent) Time() int64 { return in.ev.time }

func (in *externalEvent) Eval(field string) (value.Value, error) {
	prog := in.x.progs[field]
	if prog == nil {
		return value.Null(), fmt.Errorf("the node has no expression %q", field)
	}
	v, err := prog.eval(in.ev)
	if err == nil {
		in.ev.held += prog.made
	}
	return v, err
}

// externalSender is nodes.Sender over the engine.
type externalSender struct {
	n  *node
	e  *Engine
	ev *event
}

func (out *externalSender) Send(edgeType string, set map[string]value.Value) {
	if out.ev == nil { // outside Process: the Sender is valid only during the call
		return
	}
	n, c := out.n, out.ev
	if len(set) > 0 {
		c = &n.scratch
		c.copyFrom(out.ev)
		for name, v := range set {
			if slot, ok := c.lay.slotOf[name]; ok {
				c.set(slot, v)
			}
		}
	}
	n.counts.Out++
	if p := out.e.probe; p != nil && len(set) > 0 {
		p.set = set
		defer func() { p.set = nil }()
	}
	out.e.forward(n, c, edgeType)
}

// Write hands v to the engine's Output, as the built-in sinks do. Outside Process (the
// Sender is valid only during the call) it does nothing.
func (out *externalSender) Write(v value.Value) {
	if out.ev == nil {
		return
	}
	out.n.counts.Out++
	if out.e.opts.Output != nil {
		out.e.opts.Output(out.n.id, v, out.ev.time)
	}
}
