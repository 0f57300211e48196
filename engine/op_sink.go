package engine

import "github.com/scenario-server/scenario-server/nodes"

// A sink (Sink/collect, Sink/file, Sink/stdout) writes its value expression to the engine's
// Output; where the value goes is the caller's (a deployment's sink connectors, a test
// run's listing). Sink/dead-end takes events and writes nothing.

var _ = builtIn(newSink, "Sink/collect", "Sink/file", "Sink/stdout")
var _ = builtIn(newDeadEnd, "Sink/dead-end")

type sink struct {
	field string
	value *evaluator
}

func newSink(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*nodes.SinkPlan)
	return &sink{field: p.Value.Field, value: n.evaluator(p.Value)}, nil
}

func (s *sink) process(e *Engine, n *node, ev *event, _ string) {
	v, err := s.value.evalTransient(ev) // Output does not keep it
	if err != nil {
		e.fail(n, s.field, err)
		return
	}
	n.counts.Out++
	if e.opts.Output != nil {
		e.opts.Output(n.id, v, ev.time)
	}
}

type deadEnd struct{}

func newDeadEnd(*Engine, *node) (operator, error) { return deadEnd{}, nil }

func (deadEnd) process(*Engine, *node, *event, string) {}
