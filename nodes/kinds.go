package nodes

import (
	"fmt"
	stdslices "slices"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

// Emission modes of emitWhen.
const (
	EmitOnEvent              = "OnEvent"
	EmitOnEnd                = "OnEnd"
	EmitOnEndWithExtraWindow = "OnEndWithExtraWindow"
)

// Kind ids of the aggregates.
const (
	AggregateSliding  = "aggregate-sliding"
	AggregateTumbling = "aggregate-tumbling"
	AggregateHopping  = "aggregate-hopping"
	AggregateSession  = "aggregate-session"
	AggregateCount    = "aggregate-count"
)

// Default durations.
const (
	DefaultMaxOutOfOrderness = 60 * time.Second
	DefaultIdleTimeout       = 3 * time.Minute
	// DefaultMaxFutureSkew is how far ahead of the wall clock a live source's event time may
	// be (docs/semantics.md §1).
	DefaultMaxFutureSkew = time.Hour
)

func builtinKinds() []*Kind {
	kinds := []*Kind{
		sourceKind("file", "File source",
			"Reads events, one JSON object per line, from a file. A run or test replays the file once, in file order, as a bounded input; a deployment follows the file as lines are appended (tail -F).",
			true, ParamSpec{Name: "path", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Path",
				Description: "Path of the file, one JSON object per line; deployed, relative to the server's source directory (--source-dir)."}),
		sourceKind("http", "HTTP source",
			"Receives events POSTed to the server's ingestion endpoint for this scenario and source.",
			false),
		sourceKind("kafka", "Kafka source",
			"Reads events, JSON objects (the records' values), from every partition of a Kafka topic, on the brokers the server was started with (--kafka-brokers).",
			false, ParamSpec{Name: "topic", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Topic",
				Description: "The Kafka topic to read.", Aliases: []string{"Topic"}}),
		{
			ID: "Filter", NodeType: scenario.TypeFilter, Group: GroupBase, Label: "Filter",
			Description: "Passes the events for which the expression is true on its FilterTrue edge, the others on its optional FilterFalse edge.",
			Parameters: []ParamSpec{{Name: "expression", In: InNode, Editor: EditorExpression, Type: "boolean", Required: true, Default: "true",
				Label: "Expression", Description: "A boolean expression."}},
			check: checkFilter,
		},
		{
			ID: "Variable", NodeType: scenario.TypeVariable, Group: GroupBase, Label: "Variable",
			Description: "Defines a variable from an expression, for the nodes below.",
			Parameters: []ParamSpec{
				{Name: "varName", In: InNode, Editor: EditorVariableName, Type: "string", Required: true, Default: "var",
					Label: "Name", Description: "The variable's name, used as #name below."},
				{Name: "value", In: InNode, Editor: EditorExpression, Required: true, Label: "Value",
					Description: "The expression whose value the variable holds."},
			},
			check: checkVariable,
		},
		{
			ID: "VariableBuilder", NodeType: scenario.TypeVariableBuilder, Group: GroupBase, Label: "Record variable",
			Description: "Defines a record variable, one expression per field.",
			Parameters: []ParamSpec{
				{Name: "varName", In: InNode, Editor: EditorVariableName, Type: "string", Required: true, Default: "record",
					Label: "Name", Description: "The variable's name, used as #name below."},
				{Name: "fields", In: InNode, Editor: EditorRecordFields, Required: true, Label: "Fields",
					Description: "The record's fields: [{\"name\": ..., \"expression\": {...}}], names unique."},
			},
			check: checkVariableBuilder,
		},
		{
			ID: "Switch", NodeType: scenario.TypeSwitch, Group: GroupBase, Label: "Choice",
			Description: "Sends each event down the first NextSwitch edge whose condition is true, in edge order, or else down the SwitchDefault edge if there is one.",
			Parameters:  []ParamSpec{},
			check:       checkSwitch,
		},
		{
			ID: "Split", NodeType: scenario.TypeSplit, Group: GroupBase, Label: "Split",
			Description: "Sends every event down each of its edges.",
			Parameters:  []ParamSpec{},
			check:       passThrough,
		},
		{
			ID: "Join/union", NodeType: scenario.TypeJoin, Subtype: "union", Group: GroupBase, Label: "Union",
			Description: "Merges the events of its branches. Below it, the variables every branch has stay in scope; with outputVar, each branch's output expression is stored in it.",
			Parameters: []ParamSpec{
				{Name: "outputVar", In: InNode, Editor: EditorVariableName, Type: "string", Label: "Output variable",
					Description: "Optional: a variable holding, for each event, its branch's output expression."},
				{Name: "Output expression", In: InBranchParameters, Editor: EditorExpression, Label: "Output expression",
					Description: "Per branch (branchId: the node the branch comes from), the value of outputVar; needed for every branch when outputVar is set."},
			},
			check: checkUnion,
		},
		{
			ID: "CustomNode/for-each", NodeType: scenario.TypeCustomNode, Subtype: "for-each", Group: GroupBase, Label: "For each",
			Description: "Sends one event per element of a list, with the element in outputVar.",
			Parameters: []ParamSpec{
				outputVarSpec("element", "The variable holding the current element."),
				{Name: "Elements", In: InParameters, Editor: EditorExpression, Type: "list", Required: true, Label: "Elements",
					Description: "An expression giving a list."},
			},
			check: checkForEach,
		},
		aggregateKind(AggregateSliding, "Sliding window",
			"Enriches each event with the aggregate of its key's events in the windowLength before it (docs/semantics.md §4).",
			checkSliding,
			windowLengthSpec("Length of the window ending at each event; a whole multiple of the precision."),
			ParamSpec{Name: "emitWhenEventLeft", In: InParameters, Editor: EditorBoolean, Type: "boolean", Default: false, Label: "Emit when event left",
				Description: "Also emit a new event whenever a slice leaves the window of the key's latest event, including the final empty result."},
			precisionSpec),
		aggregateKind(AggregateTumbling, "Tumbling window",
			"Aggregates per key over back-to-back windows [k·windowLength + offset, (k+1)·windowLength + offset), aligned to the Unix epoch (docs/semantics.md §4).",
			checkTumbling,
			windowLengthSpec("Length of each window; also the precision."),
			ParamSpec{Name: "emitWhen", In: InParameters, Editor: EditorEnum, Type: "string",
				Options: []string{EmitOnEvent, EmitOnEnd, EmitOnEndWithExtraWindow}, Default: EmitOnEnd, Label: "Emit when",
				Description: "OnEvent: every event, enriched with its window's running value. OnEnd: one new event per key and window when the watermark passes its end. OnEndWithExtraWindow: as OnEnd, plus one empty window after a key's last non-empty one."},
			ParamSpec{Name: "offset", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "0s", Label: "Offset",
				Description: "Shift of the windows from the epoch alignment, 0 ≤ offset < windowLength."},
			ParamSpec{Name: "timeZone", In: InParameters, Editor: EditorString, Type: "string", Label: "Time zone",
				Description: "Optional IANA time zone (\"Europe/Warsaw\") in which day-based windows follow local calendar days; UTC when absent."}),
		aggregateKind(AggregateHopping, "Hopping window",
			"Aggregates per key over windows [k·slide, k·slide + windowLength), emitting one new event per key and window when the watermark passes its end (docs/semantics.md §4).",
			checkHopping,
			windowLengthSpec("Length of each window; a whole multiple of slide."),
			ParamSpec{Name: "slide", In: InParameters, Editor: EditorDuration, Type: "duration", Required: true, Label: "Slide",
				Description: "How far apart windows start; a whole multiple of the precision."},
			precisionSpec),
		aggregateKind(AggregateSession, "Session window",
			"Aggregates per key over sessions: events at most sessionTimeout apart share a session, which ends sessionTimeout after its last event (docs/semantics.md §4).",
			checkSession,
			ParamSpec{Name: "sessionTimeout", In: InParameters, Editor: EditorDuration, Type: "duration", Required: true, Label: "Session timeout",
				Description: "A gap longer than this between a key's events starts a new session (a gap of exactly this joins them); a whole multiple of the precision."},
			ParamSpec{Name: "emitWhen", In: InParameters, Editor: EditorEnum, Type: "string",
				Options: []string{EmitOnEvent, EmitOnEnd}, Default: EmitOnEnd, Label: "Emit when",
				Description: "OnEvent: every event, enriched with its session's running value. OnEnd: one new event per session when it ends."},
			ParamSpec{Name: "endSessionCondition", In: InParameters, Editor: EditorExpression, Type: "boolean", Label: "End session condition",
				Description: "Optional: when true for an event, its session ends with it, and the key's next event starts a new one."},
			precisionSpec),
		aggregateKind(AggregateCount, "Count window",
			"Aggregates per key over every windowLength events, optionally sliding by slide events; one new event per full window.",
			checkCount,
			ParamSpec{Name: "windowLength", In: InParameters, Editor: EditorInteger, Type: "integer", Required: true, Min: ptr(1), Label: "Window length (events)",
				Description: "Number of events per window."},
			ParamSpec{Name: "slide", In: InParameters, Editor: EditorInteger, Type: "integer", Min: ptr(1), Label: "Slide (events)",
				Description: "Optional: a new window starts every slide events (1 ≤ slide ≤ windowLength); windowLength when absent."}),
		sinkKind("collect", "Collect", "Keeps the value of each event in the server's store, read back through the API with a cursor or as a stream of server-sent events.",
			valueSpec),
		sinkKind("file", "File sink", "Appends the value of each event, as one JSON line, to a file.",
			ParamSpec{Name: "path", In: InParameters, Editor: EditorString, Type: "string", Required: true, Label: "Path",
				Description: "Path of the file to append to."},
			valueSpec),
		kafkaSinkKind(),
		sinkKind("stdout", "Standard output", "Writes the value of each event as one JSON line to the server's standard output.", valueSpec),
		sinkKind("dead-end", "Dead end", "Drops the events that reach it; ends a path that needs no output."),
	}
	for _, k := range kinds {
		k.Edges = scenario.RulesFor(k.NodeType)
		if k.NodeType == scenario.TypeCustomNode && !hasLateOutput(k.Subtype) {
			k.Edges.Outputs = stdslices.DeleteFunc(stdslices.Clone(k.Edges.Outputs), func(r scenario.OutputRule) bool {
				return r.EdgeType == scenario.EdgeLate
			})
		}
	}
	return kinds
}

// hasLateOutput says whether custom node kind subtype may have a Late edge: the time-window
// aggregates do (docs/semantics.md §2); count windows have no lateness, for-each no windows.
func hasLateOutput(subtype string) bool {
	switch subtype {
	case AggregateSliding, AggregateTumbling, AggregateHopping, AggregateSession:
		return true
	}
	return false
}

var valueSpec = ParamSpec{Name: "value", In: InParameters, Editor: EditorExpression, Required: true, Default: "#input", Label: "Value",
	Description: "The expression whose value is written, as JSON."}

var precisionSpec = ParamSpec{Name: "precision", In: InParameters, Editor: EditorDuration, Type: "duration", Label: "Precision",
	Description: "Optional slice length: events are kept per key and slice of this length. Default: the slide for a hopping window; otherwise 60s, or 1s when the window (or session timeout) is not a whole number of minutes."}

func windowLengthSpec(desc string) ParamSpec {
	return ParamSpec{Name: "windowLength", In: InParameters, Editor: EditorDuration, Type: "duration", Required: true, Label: "Window length", Description: desc}
}

func outputVarSpec(def, desc string) ParamSpec {
	return ParamSpec{Name: "outputVar", In: InNode, Editor: EditorVariableName, Type: "string", Required: true, Default: def, Label: "Output variable", Description: desc}
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
		ParamSpec{Name: "maxFutureSkew", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "1h", Label: "Max future skew",
			Description: "Deployed: an event whose time is further ahead of the server's clock than this is refused, as an error at the source that does not move the watermark, so one mistyped timestamp cannot make every later event late. Tests and runs have no such bound."},
	)
	if !bounded {
		params = append(params, ParamSpec{Name: "idleTimeout", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "3m", Label: "Idle timeout",
			Description: "A source silent this long stops holding back the watermark of the nodes it feeds."})
	}
	return &Kind{
		ID: "Source/" + typ, NodeType: scenario.TypeSource, Subtype: typ, Group: GroupSources, Label: label, Description: desc,
		Parameters: params,
		check:      func(c *nodeCheck) { checkSource(c, bounded) },
	}
}

func sinkKind(typ, label, desc string, params ...ParamSpec) *Kind {
	if params == nil {
		params = []ParamSpec{}
	}
	return &Kind{
		ID: "Sink/" + typ, NodeType: scenario.TypeSink, Subtype: typ, Group: GroupSinks, Label: label, Description: desc,
		Parameters: params,
		check:      checkSink,
	}
}

func aggregateKind(subtype, label, desc string, check func(*nodeCheck, *aggregateOutput), window ...ParamSpec) *Kind {
	params := []ParamSpec{
		outputVarSpec("agg", "The record variable holding the aggregations' results, {name: value}."),
		{Name: "groupBy", In: InParameters, Editor: EditorListOfExpressions, Type: "list", Default: []any{}, Label: "Group by",
			Description: "Expressions whose values, in order, form the key #key; windows are kept per key. Empty: one key for all events."},
		{Name: "aggregations", In: InParameters, Editor: EditorAggregations, Required: true, Label: "Aggregations",
			Description: "What to compute: [{\"name\", \"aggregator\", \"aggregateBy\"}], names unique."},
	}
	params = append(params, window...)
	return &Kind{
		ID: "CustomNode/" + subtype, NodeType: scenario.TypeCustomNode, Subtype: subtype, Group: GroupAggregates, Label: label, Description: desc,
		Parameters: params,
		check:      func(c *nodeCheck) { checkAggregate(c, check) },
	}
}

func passThrough(c *nodeCheck) { c.out = c.in }

func checkSource(c *nodeCheck, bounded bool) {
	inputType := expression.Unknown
	if raw := c.literal("schema"); raw != nil {
		t, err := expression.TypeFromJSONSchema(raw)
		switch {
		case err != nil:
			c.errorf("schema", CodeInvalidSchema, "%v", err)
		case t.Kind != expression.KindRecord && t.Kind != expression.KindUnknown:
			c.errorf("schema", CodeInvalidSchema, "the schema describes %s values, but events are JSON objects (\"type\": \"object\")", t.Kind)
		default:
			t.Nullable = false // an event is never null
			inputType = t
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

func checkFilter(c *nodeCheck) {
	if c.n.Expression == nil {
		c.errorf("expression", CodeMissingParameter, "the filter needs an expression, true for the events to pass")
	} else {
		c.compile("expression", c.n.Expression, c.in.env(), expression.Boolean.OrNull())
	}
	c.out = c.in
}

func checkVariable(c *nodeCheck) {
	name, ok := c.defineName("varName", c.n.VarName)
	t := expression.Unknown
	if c.n.Value == nil {
		c.errorf("value", CodeMissingParameter, "the variable needs a value expression")
	} else if prog := c.compile("value", c.n.Value, c.in.env(), expression.Unknown); prog != nil {
		t = expression.Boundary(prog.Result())
	}
	c.out = c.in
	if ok {
		c.out = c.in.with(name, t, c.n.ID)
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

func checkSwitch(c *nodeCheck) {
	env := c.in.env()
	for _, e := range c.v.g.Out[c.i] {
		edge := &c.v.s.Edges[e]
		if edge.EdgeType == nil || edge.EdgeType.Type != scenario.EdgeNextSwitch || edge.EdgeType.Condition == nil {
			continue
		}
		c.compile(fmt.Sprintf("edges[%d].edgeType.condition", e), edge.EdgeType.Condition, env, expression.Boolean.OrNull())
	}
	c.out = c.in
}

func checkUnion(c *nodeCheck) {
	const param = "Output expression"
	inputs := map[string]int{} // branch id -> edge index
	var order []string
	for _, e := range c.v.g.In[c.i] {
		from := c.v.s.Edges[e].From
		if _, dup := inputs[from]; !dup {
			inputs[from] = e
			order = append(order, from)
		}
	}
	exprs := map[string]*scenario.Expression{}
	for bi, bp := range c.n.BranchParameters {
		field := fmt.Sprintf("branchParameters[%d]", bi)
		if _, ok := inputs[bp.BranchID]; !ok {
			c.errorf(field+".branchId", CodeUnknownBranch, "no edge comes into the union from %q", bp.BranchID)
			continue
		}
		if _, dup := exprs[bp.BranchID]; dup {
			c.errorf(field+".branchId", CodeDuplicateParameter, "branch %q has parameters more than once", bp.BranchID)
			continue
		}
		exprs[bp.BranchID] = nil
		for pi, p := range bp.Parameters {
			pf := fmt.Sprintf("%s.parameters[%d]", field, pi)
			switch {
			case p.Name != param:
				c.errorf(pf+".name", CodeUnknownParameter, "unknown branch parameter %q (branch parameters: %s)", p.Name, param)
			case p.Expression == nil:
				c.errorf(pf, CodeParameterForm, "%q is an expression: give it as \"expression\"", param)
			case exprs[bp.BranchID] != nil:
				c.errorf(pf, CodeDuplicateParameter, "%q is given more than once for branch %q", param, bp.BranchID)
			default:
				exprs[bp.BranchID] = p.Expression
			}
		}
	}
	c.out = c.in
	if c.n.OutputVar == "" {
		if len(c.n.BranchParameters) > 0 {
			c.errorf("outputVar", CodeMissingParameter, "branch output expressions need outputVar, the variable that holds them")
		}
		return
	}
	name, ok := c.defineName("outputVar", c.n.OutputVar)
	var t expression.Type
	first := true
	for bi, from := range order {
		e := exprs[from]
		if e == nil {
			c.errorf("branchParameters", CodeMissingParameter, "branch from %q needs an %q for outputVar", from, param)
			t = expression.Unknown
			first = false
			continue
		}
		field := fmt.Sprintf("branchParameters[%d].parameters", bi)
		for k, bp := range c.n.BranchParameters {
			if bp.BranchID == from {
				for pi, p := range bp.Parameters {
					if p.Name == param {
						field = fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)
						break
					}
				}
				break
			}
		}
		branchScope := c.v.out[c.v.g.ByID[from]]
		bt := expression.Unknown
		if prog := c.compile(field, e, branchScope.env(), expression.Unknown); prog != nil {
			bt = expression.Boundary(prog.Result())
		}
		if first {
			t, first = bt, false
		} else {
			t = expression.Join(t, bt)
		}
	}
	if ok {
		c.out = c.in.with(name, t, c.n.ID)
	}
}

func checkForEach(c *nodeCheck) {
	name, ok := c.defineName("outputVar", c.n.OutputVar)
	elem := expression.Unknown
	if e := c.expressionParam("Elements"); e != nil {
		if prog := c.compile("Elements", e, c.in.env(), expression.ListOf(expression.Unknown).OrNull()); prog != nil {
			if t := expression.Boundary(prog.Result()); t.Kind == expression.KindList && t.Elem != nil {
				elem = *t.Elem
			}
		}
	}
	c.out = c.in
	if ok {
		c.out = c.in.with(name, elem, c.n.ID)
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
