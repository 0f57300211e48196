package nodes

import (
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// Sinks (Sink/collect, Sink/file, Sink/stdout, Sink/dead-end): where values leave. A deployment
// writes them through its output connectors.

// collectSinkKind is the collect sink.
func collectSinkKind() *Kind {
	return sinkKind("collect", "Collect", "Keeps the value of each event in the server's store, read back through the API with a cursor or as a stream of server-sent events.",
		valueSpec)
}

// fileSinkKind is the file sink.
func fileSinkKind() *Kind {
	return sinkKind("file", "File sink", "Appends the value of each event, as one JSON line, to a file.",
		ParamSpec{Name: "path", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Path",
			Description: "Path of the file to append to."},
		valueSpec)
}

// stdoutSinkKind is the standard output sink.
func stdoutSinkKind() *Kind {
	return sinkKind("stdout", "Standard output", "Writes the value of each event as one JSON line to the server's standard output.", valueSpec)
}

// deadEndKind is the dead end.
func deadEndKind() *Kind {
	return sinkKind("dead-end", "Dead end", "Drops the events that reach it; ends a path that needs no output.")
}

var valueSpec = ParamSpec{Name: "value", In: InParameters, Editor: EditorExpression, Required: true, Default: "#input", Label: "Value",
	Description: "The expression whose value is written, as JSON."}

func sinkKind(typ, label, desc string, params ...ParamSpec) *Kind {
	role := RoleSink
	if params == nil {
		params = []ParamSpec{}
		role = RoleTransform // writes nothing (the dead end)
	}
	return &Kind{
		ID: "Sink/" + typ, NodeType: scenario.TypeSink, Subtype: typ, Group: GroupSinks, Label: label, Description: desc, Role: role,
		Parameters: params,
		check:      checkSink,
		typed:      typedSink,
	}
}

func checkSink(c *nodeCheck) {
	if s, ok := c.stringParam("path"); ok && c.given("path") && s == "" {
		c.errorf("path", CodeInvalidParameter, "parameter \"path\" must not be empty")
	}
	if e := c.expressionParam("value"); e != nil {
		c.compile("value", e, c.in.env(), expression.Unknown)
	}
	c.out = nil
}

// SinkPlan is a sink's plan: the Value it writes; Path for a file sink; Topic, Key and
// Headers for a Kafka sink (Key and Headers have a nil Program when not given).
type SinkPlan struct {
	Value        Expr
	Path         string
	Topic        string
	Key, Headers Expr
	// ValueSubject is a Kafka sink's schema registry subject of its values ("": none).
	ValueSubject string
}

func typedSink(c *nodeCheck) any {
	p := &SinkPlan{Value: c.expr("value"), Key: c.expr("key"), Headers: c.expr("headers")}
	p.Path, _ = c.plan.Params["path"].(string)
	p.Topic, _ = c.plan.Params["topic"].(string)
	p.ValueSubject, _ = c.plan.Params["valueSubject"].(string)
	return p
}
