package nodes

import (
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// Sources (Source/file, Source/http, Source/kafka): where events enter, with their event time
// and watermark (docs/semantics.md §1). A deployment reads them through its input connectors.

// Default durations.
const (
	DefaultMaxOutOfOrderness = 60 * time.Second
	DefaultIdleTimeout       = 3 * time.Minute
	// DefaultMaxFutureSkew is how far ahead of the wall clock a live source's event time may
	// be (docs/semantics.md §1).
	DefaultMaxFutureSkew = time.Hour
)

// fileSourceKind is the file source.
func fileSourceKind() *Kind {
	return sourceKind("file", "File source",
		"Reads events, one JSON object per line, from a file. A run or test replays the file once, in file order, as a bounded input; a deployment follows the file as lines are appended (tail -F).",
		true, ParamSpec{Name: "path", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Path",
			Description: "Path of the file, one JSON object per line; deployed, relative to the server's source directory (--source-dir)."})
}

// httpSourceKind is the HTTP source.
func httpSourceKind() *Kind {
	return sourceKind("http", "HTTP source",
		"Receives events POSTed to the server's ingestion endpoint for this scenario and source.",
		false)
}

// kafkaSourceKind is the Kafka source.
func kafkaSourceKind() *Kind {
	return sourceKind("kafka", "Kafka source",
		"Reads events, JSON objects (the records' values), from every partition of a Kafka topic, on the brokers the server was started with (--kafka-brokers).",
		false, ParamSpec{Name: "topic", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Topic",
			Description: "The Kafka topic to read.", Aliases: []string{"Topic"}})
}

func sourceKind(typ, label, desc string, bounded bool, extra ...ParamSpec) *Kind {
	params := append([]ParamSpec{}, extra...)
	tsDesc := "Event time: epoch milliseconds or an RFC 3339 string, e.g. #input.ts or parseTime(#input.date, \"yyyy/MM/dd HH:mm\")."
	switch typ {
	case "http":
		tsDesc += " Without it, the time the server accepted the event is used."
	case "kafka":
		tsDesc += " Without it, the record's timestamp is used."
	}
	params = append(params,
		ParamSpec{Name: "timestamp", In: InParameters, Editor: EditorExpression, Type: "timestamp", Required: bounded, Label: "Timestamp", Description: tsDesc},
		ParamSpec{Name: "maxOutOfOrderness", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "60s", Label: "Max out-of-orderness",
			Description: "How late an event may come: the watermark is the largest event time seen less this (0 allowed)."},
		ParamSpec{Name: "schema", In: InParameters, Editor: EditorJSONSchema, Type: "object", Label: "JSON Schema",
			Description: "Optional JSON Schema of the events; #input is typed from it (dynamic without it)."},
		ParamSpec{Name: "enforceSchema", In: InParameters, Editor: EditorBoolean, Type: "boolean", Default: false, Label: "Enforce schema",
			Description: "Check each event against the JSON Schema: an event that does not fit is an error at the source (field schema, saying where and why, e.g. /amount: got string, want number) and goes no further; deployed, it goes to the dead letters. Needs a schema."},
		ParamSpec{Name: "maxFutureSkew", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "1h", Label: "Max future skew",
			Description: "Deployed: an event whose time is further ahead of the server's clock than this is refused, as an error at the source that does not move the watermark, so one mistyped timestamp cannot make every later event late. Tests and runs have no such bound."},
	)
	if !bounded {
		params = append(params, ParamSpec{Name: "idleTimeout", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "3m", Label: "Idle timeout",
			Description: "A source silent this long stops holding back the watermark of the nodes it feeds."})
	}
	return &Kind{
		ID: "Source/" + typ, NodeType: scenario.TypeSource, Subtype: typ, Group: GroupSources, Label: label, Description: desc, Role: RoleSource,
		Parameters: params,
		check:      func(c *nodeCheck) { checkSource(c, bounded) },
		typed:      typedSource,
	}
}

func checkSource(c *nodeCheck, bounded bool) {
	inputType := expression.Unknown
	enforce, _ := c.boolParam("enforceSchema")
	raw := c.literal("schema")
	if enforce && raw == nil {
		c.errorf("enforceSchema", CodeInvalidParameter, "enforceSchema needs a JSON Schema in parameter \"schema\"")
	}
	if raw == nil {
		raw = c.sourceSchema() // a schema registry's, if any
	}
	if raw != nil {
		t, err := expression.TypeFromJSONSchema(raw)
		switch {
		case err != nil:
			c.errorf("schema", CodeInvalidSchema, "%v", err)
		case t.Kind != expression.KindRecord && t.Kind != expression.KindUnknown:
			c.errorf("schema", CodeInvalidSchema, "the schema describes %s values, but events are JSON objects (\"type\": \"object\")", t.Kind)
		default:
			t.Nullable = false // an event is never null
			inputType = t
			if enforce {
				if s, err := compileEventSchema(raw); err != nil {
					c.errorf("schema", CodeInvalidSchema, "the schema cannot be enforced: %v", err)
				} else {
					c.record("schema", s)
				}
			}
		}
	}
	c.durationParam("maxOutOfOrderness", false)
	c.durationParam("maxFutureSkew", false)
	if !bounded {
		c.durationParam("idleTimeout", true)
	}
	for _, name := range []string{"path", "topic"} {
		if _, ok := c.k.Param(name); ok && c.given(name) {
			if s, ok := c.stringParam(name); ok && s == "" {
				c.errorf(name, CodeInvalidParameter, "parameter %q must not be empty", name)
			}
		}
	}
	env := scope{VarInput: {t: inputType, by: c.n.ID}}
	if e := c.expressionParam("timestamp"); e != nil {
		if prog := c.compile("timestamp", e, env.env(), expression.Unknown); prog != nil {
			switch t := prog.Result(); t.Kind {
			case expression.KindInteger, expression.KindFloat, expression.KindNumber, expression.KindString, expression.KindUnknown:
			default:
				c.resultProblem("timestamp", e, "the timestamp must be epoch milliseconds (an integer) or an RFC 3339 string, but it is %s", t)
			}
		}
	}
	c.visible = env
	c.out = env.with(VarMeta, MetaType, c.n.ID)
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
	// Schema is the compiled schema each event is checked against (enforceSchema); nil:
	// events are not checked.
	Schema *EventSchema
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
	p.Schema, _ = c.plan.Params["schema"].(*EventSchema)
	return p
}
