package engine

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
)

// Sinks (Sink/collect, Sink/file, Sink/stdout, Sink/dead-end): where values leave. A sink
// writes its value expression to the engine's Output; where the value goes is the caller's (a
// deployment's output connectors, a test run's listing). Sink/dead-end takes events and
// writes nothing. (The Kafka sink is kind_kafka_sink.go.)

// The subtypes of the sinks (Sink/collect, ...; the Kafka sink's is SinkKafka).
const (
	SinkCollect = "collect"
	SinkFile    = "file"
	SinkStdout  = "stdout"
	SinkDeadEnd = "dead-end"
)

// The kind IDs of the sinks, for the connectors (nodes.Kind.ID).
const (
	SinkCollectKind = "Sink/" + SinkCollect
	SinkFileKind    = "Sink/" + SinkFile
	SinkStdoutKind  = "Sink/" + SinkStdout
	SinkKafkaKind   = "Sink/" + SinkKafka
)

// collectSinkKind is the collect sink.
func collectSinkKind() *nodes.Kind {
	return sinkKind(SinkCollect, "Collect", "Keeps the value of each event in the server's store, read back through the API with a cursor or as a stream of server-sent events.",
		valueSpec)
}

// fileSinkKind is the file sink.
func fileSinkKind() *nodes.Kind {
	return sinkKind(SinkFile, "File sink", "Appends the value of each event, as one JSON line, to a file.",
		nodes.ParamSpec{Name: "path", In: nodes.InParameters, Editor: nodes.EditorString, Type: "string", Required: true, Label: "Path",
			Description: "Path of the file to append to."},
		valueSpec)
}

// stdoutSinkKind is the standard output sink.
func stdoutSinkKind() *nodes.Kind {
	return sinkKind(SinkStdout, "Standard output", "Writes the value of each event as one JSON line to the server's standard output.", valueSpec)
}

// deadEndKind is the dead end.
func deadEndKind() *nodes.Kind {
	return sinkKind(SinkDeadEnd, "Dead end", "Drops the events that reach it; ends a path that needs no output.")
}

var valueSpec = nodes.ParamSpec{Name: "value", In: nodes.InParameters, Editor: nodes.EditorExpression, Required: true, Default: "#input", Label: "Value",
	Description: "The expression whose value is written, as JSON."}

func sinkKind(typ, label, desc string, params ...nodes.ParamSpec) *nodes.Kind {
	role, op := nodes.RoleSink, builder(newSink)
	if params == nil {
		params = []nodes.ParamSpec{}
		role, op = nodes.RoleTransform, newDeadEnd // writes nothing (the dead end)
	}
	return &nodes.Kind{
		ID: "Sink/" + typ, NodeType: scenario.TypeSink, Subtype: typ, Group: nodes.GroupSinks, Label: label, Description: desc, Role: role,
		Parameters: params,
		Validate:   checkSink,
		Typed:      typedSink,
		Runtime:    op,
	}
}

func checkSink(c *nodes.Check) {
	if s, ok := c.String("path"); ok && c.Given("path") && s == "" {
		c.Errorf("path", nodes.CodeInvalidParameter, "parameter \"path\" must not be empty")
	}
	if e := c.ExpressionParam("value"); e != nil {
		c.Compile("value", e, c.In().Env(), expression.Unknown)
	}
	c.SetOut(nodes.Scope{})
}

// SinkPlan is a sink's plan: the Value it writes; Path for a file sink; Topic, Key and
// Headers for a Kafka sink (Key and Headers have a nil Program when not given).
type SinkPlan struct {
	Value        nodes.Expr
	Path         string
	Topic        string
	Key, Headers nodes.Expr
	// ValueSubject is a Kafka sink's schema registry subject of its values ("": none).
	ValueSubject string
}

func typedSink(c *nodes.Check) any {
	p := &SinkPlan{Value: c.Expr("value"), Key: c.Expr("key"), Headers: c.Expr("headers")}
	p.Path, _ = c.Plan().Params["path"].(string)
	p.Topic, _ = c.Plan().Params["topic"].(string)
	p.ValueSubject, _ = c.Plan().Params["valueSubject"].(string)
	return p
}

type sink struct {
	field string
	value *evaluator
}

func newSink(_ *Engine, n *node) (operator, error) {
	p := n.plan.Typed.(*SinkPlan)
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
