package engine

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// The aggregates of docs/semantics.md §4 (CustomNode aggregate-sliding, -tumbling, -hopping,
// -session, -count) keep windows per key in an aggregate.Operator: each event's groupBy and
// aggregateBy values are added, and the engine's watermark steps (Engine.step) close windows,
// whose results the operator emits (aggregator.emit).

// aggregateOutput is what a window check decides about the events an
// aggregate emits.
type aggregateOutput struct {
	// enrich: the incoming events go on, enriched; their upstream variables
	// stay in scope.
	enrich bool
	// creates: the node also (or only) emits new events, which carry
	// #window.
	creates bool
}

// checkAggregate checks what all aggregates share (groupBy, aggregations,
// outputVar), then the window parameters with window, and sets the scope
// below the node.
func checkAggregate(c *nodes.Check, window func(*nodes.Check, *aggregateOutput)) {
	env := c.In().Env()
	keyElem := expression.Unknown
	if exprs, _ := c.ExpressionList("groupBy"); len(exprs) > 0 {
		for i, e := range exprs {
			t := expression.Unknown
			if prog := c.Compile(fmt.Sprintf("groupBy[%d]", i), e, env, expression.Unknown); prog != nil {
				t = expression.Boundary(prog.Result())
			}
			if i == 0 {
				keyElem = t
			} else {
				keyElem = expression.Join(keyElem, t)
			}
		}
	}
	var fields []expression.Field
	for i, a := range c.Aggregations("aggregations") {
		agg, known := c.Registry().Aggregator(a.Aggregator)
		result := expression.Unknown
		if known {
			in := expression.Unknown
			if a.AggregateBy != nil {
				in = aggregateInput(c, fmt.Sprintf("aggregations[%d].aggregateBy", i), a.AggregateBy, env, agg)
			}
			result = agg.ResultType(in)
		}
		if a.Name != "" {
			fields = append(fields, expression.Field{Name: a.Name, Type: result})
		}
	}
	name, nameOK := c.DefineName("outputVar", c.Node().OutputVar)

	var out aggregateOutput
	window(c, &out)

	in := c.In()
	if !in.Known() {
		c.SetOut(nodes.Scope{})
		return
	}
	var below nodes.Scope
	switch {
	case out.enrich && !out.creates:
		below = in
	case out.enrich && out.creates:
		below = in.Keep(nodes.VarMeta)
	default:
		below = c.With(in.Keep(nodes.VarMeta), nodes.VarWindow, nodes.WindowType)
	}
	below = c.With(below, nodes.VarKey, expression.ListOf(keyElem))
	if nameOK {
		below = c.With(below, name, expression.RecordOf(fields...))
	}
	c.SetOut(below)
}

// aggregateInput compiles an aggregateBy expression and checks its type
// against what the aggregator takes. It returns the input type.
func aggregateInput(c *nodes.Check, field string, e *scenario.Expression, env expression.TypeEnv, agg *nodes.Aggregator) expression.Type {
	want := expression.Unknown
	switch agg.Input {
	case nodes.InputBoolean:
		want = expression.Boolean.OrNull()
	case nodes.InputNumber:
		want = expression.Number.OrNull()
	}
	prog := c.Compile(field, e, env, want)
	if prog == nil {
		return expression.Unknown
	}
	t := expression.Boundary(prog.Result())
	if agg.Input == nodes.InputNumberOrString {
		switch t.Kind {
		case expression.KindInteger, expression.KindFloat, expression.KindNumber, expression.KindString, expression.KindUnknown:
		default:
			c.ResultProblem(field, e, "%s takes numbers or strings, but the expression is %s", agg.Name, t)
		}
	}
	return t
}

// defaultPrecision is docs/semantics.md §3's for sliding windows and sessions: 60 s,
// or 1 s when the length is not a whole number of minutes. (Tumbling windows
// use their length, hopping windows their slide.)
func defaultPrecision(length time.Duration) time.Duration {
	if length%time.Minute != 0 {
		return time.Second
	}
	return time.Minute
}

// precision returns the node's precision: the explicit parameter, or def.
// Either way the plan records it as Params["precision"], so the runtime
// slices by exactly the precision validated here.
func precision(c *nodes.Check, def time.Duration) (p time.Duration, explicit, ok bool) {
	if c.Given("precision") {
		p, ok = c.Duration("precision", true)
		return p, true, ok
	}
	c.Record("precision", def)
	return def, false, true
}

// checkMultiple reports a length (windowLength, sessionTimeout, slide) that
// is shorter than the precision or not a whole multiple of it.
func checkMultiple(c *nodes.Check, field string, length, p time.Duration, explicit bool, code string) {
	which := "the precision " + nodes.FormatDuration(p)
	hint := ""
	if !explicit {
		which += " (the default)"
		hint = "; set \"precision\" to a duration that divides it"
	}
	switch {
	case length < p && code == nodes.CodeNotMultipleOfPrec:
		c.Errorf(field, nodes.CodeShorterThanPrecision, "%s %s is shorter than %s%s", field, nodes.FormatDuration(length), which, hint)
	case length%p != 0:
		c.Errorf(field, code, "%s %s is not a whole multiple of %s%s", field, nodes.FormatDuration(length), which, hint)
	}
}

// The window shapes a time-window aggregate may have. Its state and work grow with them, not
// with the events: a sliding or hopping window keeps, per key, one partial aggregate per slice
// of its window (windowLength / precision slices), and a hopping window's event is counted in
// windowLength / slide windows, each fired on its own. So a hopping window of 1d sliding every
// 1ms would hold 86,400,000 slices per key and fire as many windows per event: such shapes are
// validation errors (nodes.CodeTooManySlices, nodes.CodeTooManyWindows), checked before anything runs;
// so is a count window of more than MaxSlicesPerWindow count-slices per key (checkCount).
// Tumbling windows have one slice per window and sessions one cell per session (its bounds
// exact to the millisecond, whatever the precision), so neither has a shape limit.
const (
	// MaxSlicesPerWindow is the most slices (windowLength / precision) a sliding or hopping
	// window may have, and the most count-slices a count window may keep per key (see
	// checkCount).
	MaxSlicesPerWindow = 10_000
	// MaxCountCellsPerKey is the most cells (count-slices × aggregations) a count window may
	// take for a key (see checkCount): with 9 to 51 bytes a cell (Count to Average) and 24 a
	// count-slice, at most about 13 MiB.
	MaxCountCellsPerKey = 1 << 18
	// MaxWindowsPerEvent is the most windows (windowLength / slide) a hopping window may count
	// one event in: a window of a day sliding every minute is the longest.
	MaxWindowsPerEvent = 1_440
)

// checkSlices reports a window of more than MaxSlicesPerWindow slices of precision p. slide is
// a hopping window's slide (0 for a sliding window), which the precision must divide.
func checkSlices(c *nodes.Check, length, p time.Duration, explicit bool, slide time.Duration) {
	if p <= 0 || length/p <= MaxSlicesPerWindow {
		return
	}
	which, hint := "precision", "; set a coarser \"precision\" that divides it"
	switch {
	case slide > 0 && p < slide:
		hint = "; set a coarser \"precision\" that divides the slide " + nodes.FormatDuration(slide)
	case slide > 0:
		hint = "; the precision must divide the slide " + nodes.FormatDuration(slide) + ": set a longer slide"
	}
	if !explicit {
		which = "the default precision"
	}
	c.Errorf("windowLength", nodes.CodeTooManySlices, "windowLength %s at %s %s is %s slices; at most %s%s",
		nodes.FormatDuration(length), which, nodes.FormatDuration(p), groupDigits(int64(length/p)), groupDigits(MaxSlicesPerWindow), hint)
}

// groupDigits writes n with a comma every three digits: 86,400,000.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := 0
	if n < 0 {
		start = 1
	}
	out := []byte(s[:start])
	for i := start; i < len(s); i++ {
		if i > start && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func checkSliding(c *nodes.Check, out *aggregateOutput) {
	length, okL := c.Duration("windowLength", true)
	p, explicit, okP := precision(c, defaultPrecision(length))
	if okL && okP {
		checkMultiple(c, "windowLength", length, p, explicit, nodes.CodeNotMultipleOfPrec)
		checkSlices(c, length, p, explicit, 0)
	}
	left, _ := c.Bool("emitWhenEventLeft")
	out.enrich = true
	out.creates = left
}

func checkTumbling(c *nodes.Check, out *aggregateOutput) {
	length, okL := c.Duration("windowLength", true)
	if offset, ok := c.Duration("offset", false); ok && okL && offset >= length {
		c.Errorf("offset", nodes.CodeOffsetOutOfRange, "offset %s must be shorter than windowLength %s", nodes.FormatDuration(offset), nodes.FormatDuration(length))
	}
	if zone, ok := c.String("timeZone"); ok {
		if _, err := expression.LoadZone(zone); err != nil {
			c.Errorf("timeZone", nodes.CodeInvalidTimeZone, "%v", err)
		} else if okL && length%(24*time.Hour) != 0 {
			c.Errorf("windowLength", nodes.CodeZoneNeedsWholeDays, "windowLength %s is not a whole number of days; with a timeZone, windows follow local calendar days (e.g. \"1d\")", nodes.FormatDuration(length))
		}
	}
	emit, ok := c.Enum("emitWhen")
	out.enrich = ok && emit == EmitOnEvent
}

func checkHopping(c *nodes.Check, out *aggregateOutput) {
	length, okL := c.Duration("windowLength", true)
	slide, okS := c.Duration("slide", true)
	if okS {
		// The default precision is the slide itself (docs/semantics.md §3).
		if p, explicit, okP := precision(c, slide); okP {
			checkMultiple(c, "slide", slide, p, explicit, nodes.CodeSlideNotMultiple)
			if okL {
				checkSlices(c, length, p, explicit, slide)
			}
		}
	}
	if okL && okS && length%slide != 0 {
		c.Errorf("windowLength", nodes.CodeNotMultipleOfSlide, "windowLength %s is not a whole multiple of slide %s", nodes.FormatDuration(length), nodes.FormatDuration(slide))
	}
	if okL && okS && slide > 0 && length/slide > MaxWindowsPerEvent {
		c.Errorf("slide", nodes.CodeTooManyWindows, "windowLength %s sliding every %s puts each event in %s windows; at most %s: set a longer slide",
			nodes.FormatDuration(length), nodes.FormatDuration(slide), groupDigits(int64(length/slide)), groupDigits(MaxWindowsPerEvent))
	}
}

func checkSession(c *nodes.Check, out *aggregateOutput) {
	timeout, okT := c.Duration("sessionTimeout", true)
	p, explicit, okP := precision(c, defaultPrecision(timeout))
	if okT && okP {
		checkMultiple(c, "sessionTimeout", timeout, p, explicit, nodes.CodeNotMultipleOfPrec)
	}
	if e := c.ExpressionParam("endSessionCondition"); e != nil {
		c.Compile("endSessionCondition", e, c.In().Env(), expression.Boolean.OrNull())
	}
	emit, ok := c.Enum("emitWhen")
	out.enrich = ok && emit == EmitOnEvent
}

// checkCount checks a count window's shape. Its state is, per key, windowLength /
// gcd(windowLength, slide) count-slices (aggregate-count cuts a key's events into slices of
// gcd events and keeps a window's worth of them), allocated when the key's first event
// arrives: more than MaxSlicesPerWindow is a validation error (nodes.CodeTooManySlices), as it
// is for a time window.
func checkCount(c *nodes.Check, out *aggregateOutput) {
	length, okL := c.Int("windowLength")
	slide, okS := length, okL
	if c.Given("slide") {
		slide, okS = c.Int("slide")
		if okS && okL && slide > length {
			c.Errorf("slide", nodes.CodeSlideOutOfRange, "slide %d is more than windowLength %d: events between windows would be skipped", slide, length)
			return
		}
	}
	if !okL || !okS || length <= 0 || slide <= 0 {
		return
	}
	n := aggregate.CountSlices(length, slide)
	if n > MaxSlicesPerWindow {
		c.Errorf("windowLength", nodes.CodeTooManySlices, "windowLength %s events sliding by %s are kept per key as %s count-slices (windowLength / gcd(windowLength, slide)); at most %s: set a slide that divides windowLength into at most %s parts",
			groupDigits(length), groupDigits(slide), groupDigits(n), groupDigits(MaxSlicesPerWindow), groupDigits(MaxSlicesPerWindow))
		return
	}
	// Each count-slice holds a cell of each aggregation, all taken with the key's first event.
	if aggs := int64(len(c.Aggregations("aggregations"))); n*aggs > MaxCountCellsPerKey {
		c.Errorf("aggregations", nodes.CodeTooManySlices, "%s count-slices (windowLength %s / gcd(windowLength, slide %s)) of %d aggregations are %s cells per key, taken with its first event; at most %s: fewer aggregations, or a slide that divides windowLength into fewer parts",
			groupDigits(n), groupDigits(length), groupDigits(slide), aggs, groupDigits(n*aggs), groupDigits(MaxCountCellsPerKey))
	}
}

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

// slidingKind is the sliding window (docs/semantics.md §4).
func slidingKind() *nodes.Kind {
	return aggregateKind(AggregateSliding, "Sliding window",
		"Enriches each event with the aggregate of its key's events in the windowLength before it (docs/semantics.md §4).",
		checkSliding, slidingWindow,
		windowLengthSpec("Length of the window ending at each event; a whole multiple of the precision."),
		nodes.ParamSpec{Name: "emitWhenEventLeft", In: nodes.InParameters, Editor: nodes.EditorBoolean, Type: "boolean", Default: false, Label: "Emit when event left",
			Description: "Also emit a new event whenever a slice leaves the window of the key's latest event, including the final empty result."},
		precisionSpec)
}

// tumblingKind is the tumbling window.
func tumblingKind() *nodes.Kind {
	return aggregateKind(AggregateTumbling, "Tumbling window",
		"Aggregates per key over back-to-back windows [k·windowLength + offset, (k+1)·windowLength + offset), aligned to the Unix epoch (docs/semantics.md §4).",
		checkTumbling, tumblingWindow,
		windowLengthSpec("Length of each window; also the precision."),
		nodes.ParamSpec{Name: "emitWhen", In: nodes.InParameters, Editor: nodes.EditorEnum, Type: "string",
			Options: []string{EmitOnEvent, EmitOnEnd, EmitOnEndWithExtraWindow}, Default: EmitOnEnd, Label: "Emit when",
			Description: "OnEvent: every event, enriched with its window's running value. OnEnd: one new event per key and window when the watermark passes its end. OnEndWithExtraWindow: as OnEnd, plus one empty window after a key's last non-empty one."},
		nodes.ParamSpec{Name: "offset", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Default: "0s", Label: "Offset",
			Description: "Shift of the windows from the epoch alignment, 0 ≤ offset < windowLength."},
		nodes.ParamSpec{Name: "timeZone", In: nodes.InParameters, Editor: nodes.EditorString, Type: "string", Label: "Time zone",
			Description: "Optional IANA time zone (\"Europe/Warsaw\") in which day-based windows follow local calendar days; UTC when absent."})
}

// hoppingKind is the hopping window.
func hoppingKind() *nodes.Kind {
	return aggregateKind(AggregateHopping, "Hopping window",
		"Aggregates per key over windows [k·slide, k·slide + windowLength), emitting one new event per key and window when the watermark passes its end (docs/semantics.md §4).",
		checkHopping, hoppingWindow,
		windowLengthSpec("Length of each window; a whole multiple of slide."),
		nodes.ParamSpec{Name: "slide", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Required: true, Label: "Slide",
			Description: "How far apart windows start; a whole multiple of the precision."},
		precisionSpec)
}

// sessionKind is the session window.
func sessionKind() *nodes.Kind {
	return aggregateKind(AggregateSession, "Session window",
		"Aggregates per key over sessions: events at most sessionTimeout apart share a session, which ends sessionTimeout after its last event (docs/semantics.md §4).",
		checkSession, sessionWindow,
		nodes.ParamSpec{Name: "sessionTimeout", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Required: true, Label: "Session timeout",
			Description: "A gap longer than this between a key's events starts a new session (a gap of exactly this joins them); a whole multiple of the precision."},
		nodes.ParamSpec{Name: "emitWhen", In: nodes.InParameters, Editor: nodes.EditorEnum, Type: "string",
			Options: []string{EmitOnEvent, EmitOnEnd}, Default: EmitOnEnd, Label: "Emit when",
			Description: "OnEvent: every event, enriched with its session's running value. OnEnd: one new event per session when it ends."},
		nodes.ParamSpec{Name: "endSessionCondition", In: nodes.InParameters, Editor: nodes.EditorExpression, Type: "boolean", Label: "End session condition",
			Description: "Optional: when true for an event, its session ends with it, and the key's next event starts a new one."},
		precisionSpec)
}

// countKind is the count window.
func countKind() *nodes.Kind {
	k := aggregateKind(AggregateCount, "Count window",
		"Aggregates per key over every windowLength events, optionally sliding by slide events; one new event per full window.",
		checkCount, countWindow,
		nodes.ParamSpec{Name: "windowLength", In: nodes.InParameters, Editor: nodes.EditorInteger, Type: "integer", Required: true, Min: ptr(1), Label: "Window length (events)",
			Description: "Number of events per window."},
		nodes.ParamSpec{Name: "slide", In: nodes.InParameters, Editor: nodes.EditorInteger, Type: "integer", Min: ptr(1), Label: "Slide (events)",
			Description: "Optional: a new window starts every slide events (1 ≤ slide ≤ windowLength); windowLength when absent."})
	k.Edges = nodes.EdgeRulesOf(scenario.TypeCustomNode) // no lateness: no Late output
	return k
}

// aggregateKind is an aggregate whose window check checks its window parameters and shape
// makes the window of a node's plan.
func aggregateKind(subtype, label, desc string, check func(*nodes.Check, *aggregateOutput), shape func(*AggregatePlan, *aggregate.WindowSpec), window ...nodes.ParamSpec) *nodes.Kind {
	params := []nodes.ParamSpec{
		outputVarSpec("agg", "The record variable holding the aggregations' results, {name: value}."),
		{Name: "groupBy", In: nodes.InParameters, Editor: nodes.EditorListOfExpressions, Type: "list", Default: []any{}, Label: "Group by",
			Description: "Expressions whose values, in order, form the key #key; windows are kept per key. Empty: one key for all events."},
		{Name: "aggregations", In: nodes.InParameters, Editor: nodes.EditorAggregations, Required: true, Label: "Aggregations",
			Description: "What to compute: [{\"name\", \"aggregator\", \"aggregateBy\"}], names unique."},
	}
	params = append(params, window...)
	return &nodes.Kind{
		ID: "CustomNode/" + subtype, NodeType: scenario.TypeCustomNode, Subtype: subtype, Group: nodes.GroupAggregates, Label: label, Description: desc, Role: nodes.RoleAggregate,
		Parameters: params,
		// A time-window aggregate has a Late output (docs/semantics.md §2); countKind has none.
		Edges:    scenario.RulesFor(scenario.TypeCustomNode),
		Validate: func(c *nodes.Check) { checkAggregate(c, check) },
		Typed:    typedAggregate,
		Runtime:  windowOf(shape),
	}
}

func ptr(f float64) *float64 { return &f }

var precisionSpec = nodes.ParamSpec{Name: "precision", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Label: "Precision",
	Description: "Optional slice length: events are kept per key and slice of this length. Default: the slide for a hopping window; otherwise 60s, or 1s when the window (or session timeout) is not a whole number of minutes."}

func windowLengthSpec(desc string) nodes.ParamSpec {
	return nodes.ParamSpec{Name: "windowLength", In: nodes.InParameters, Editor: nodes.EditorDuration, Type: "duration", Required: true, Label: "Window length", Description: desc}
}

// AggregatePlan is an aggregate's plan (docs/semantics.md §4): per key (GroupBy's values)
// the Aggregations over the window the kind and its parameters say.
type AggregatePlan struct {
	OutputVar    string
	GroupBy      []nodes.Expr
	Aggregations []nodes.Aggregation
	AggregateBy  []nodes.Expr // per aggregation; nil Program for Count
	// The window's parameters, as given or defaulted (zero when the kind has none).
	WindowLength, Slide, Precision, Offset, SessionTimeout time.Duration
	Count, CountSlide                                      int64 // aggregate-count, in events
	EmitWhen                                               string
	EmitWhenEventLeft                                      bool
	TimeZone                                               string
	EndSession                                             nodes.Expr
}

func typedAggregate(c *nodes.Check) any {
	p := &AggregatePlan{OutputVar: c.Node().OutputVar, Aggregations: c.Plan().Aggregations}
	for i := 0; ; i++ {
		x := c.Expr(fmt.Sprintf("groupBy[%d]", i))
		if x.Program == nil {
			break
		}
		p.GroupBy = append(p.GroupBy, x)
	}
	for i := range p.Aggregations {
		p.AggregateBy = append(p.AggregateBy, c.Expr(fmt.Sprintf("aggregations[%d].aggregateBy", i)))
	}
	p.WindowLength = c.DurationOr("windowLength", 0)
	p.Slide = c.DurationOr("slide", 0)
	p.Precision = c.DurationOr("precision", 0)
	p.Offset = c.DurationOr("offset", 0)
	p.SessionTimeout = c.DurationOr("sessionTimeout", 0)
	p.Count, _ = c.Plan().Params["windowLength"].(int64)
	p.CountSlide, _ = c.Plan().Params["slide"].(int64)
	p.EmitWhen, _ = c.Plan().Params["emitWhen"].(string)
	p.EmitWhenEventLeft, _ = c.Plan().Params["emitWhenEventLeft"].(bool)
	p.TimeZone, _ = c.Plan().Params["timeZone"].(string)
	p.EndSession = c.Expr("endSessionCondition")
	return p
}

// emitModes maps emitWhen's values to the operator's.
var emitModes = map[string]aggregate.EmitWhen{
	EmitOnEvent:              aggregate.OnEvent,
	EmitOnEnd:                aggregate.OnEnd,
	EmitOnEndWithExtraWindow: aggregate.OnEndWithExtraWindow,
}

// emitMode is the plan's emitWhen, OnEnd by default.
func emitMode(p *AggregatePlan) aggregate.EmitWhen {
	if m, ok := emitModes[p.EmitWhen]; ok {
		return m
	}
	return aggregate.OnEnd
}

func slidingWindow(p *AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Sliding
	spec.Length = p.WindowLength.Milliseconds()
	spec.EmitWhenEventLeft = p.EmitWhenEventLeft
}

func tumblingWindow(p *AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Tumbling
	spec.Length = p.WindowLength.Milliseconds()
	spec.EmitWhen = emitMode(p)
	spec.TimeZone = p.TimeZone
}

func hoppingWindow(p *AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Hopping
	spec.Length = p.WindowLength.Milliseconds()
	spec.Slide = p.Slide.Milliseconds()
}

func sessionWindow(p *AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Session
	spec.SessionTimeout = p.SessionTimeout.Milliseconds()
	spec.EmitWhen = emitMode(p)
}

func countWindow(p *AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.CountWindow
	spec.Count = p.Count
	spec.CountSlide = p.CountSlide
}

// aggregator is an aggregate node's running state.
type aggregator struct {
	*node
	window   aggregate.Operator
	groupBy  []*evaluator
	aggBy    []*evaluator // nil for Count
	aggNames []string
	// numeric: every aggregation's result is a number or null (NumericResult), so a result's
	// values make nothing an event would hold (madeByResult).
	numeric bool
	endCond *evaluator
	// The fields of groupBy's and aggBy's expressions, for their errors.
	groupByFields, aggByFields []string
	cur                        *aggregate.Result // the result being emitted
	keyBuf                     []value.Value
	inBuf                      []value.Value
	ev                         aggregate.Event // reused for every Add
	// lateOut: the aggregate has a Late edge; lateEv is the event it sends late events on.
	lateOut bool
	lateEv  event
	// scratchFresh: the scratch event holds only what the last new event set (so the
	// next one need not clear it).
	scratchFresh bool
	// direct, when not nil, writes new results straight into the value of the one sink
	// they go to (see wire).
	direct *directSink
}

// directSink is an aggregate's results projected straight into its sink's value: the sink
// is the aggregate's one output, and its value is a record literal whose every field reads
// one step of a result variable ({key: #key[0], start: #window.start, n: #agg.n}), so a
// result needs no event, no edge and no event reads: each field is read where the result is
// (resultField, as an event's read through lazyField would) into the record Output gets. It
// does what forward to that sink would do (the sink's counts, the run's context), and gives
// Output the same value.
type directSink struct {
	sink   *node
	fields []resultRef  // where each of the sink value's paths is in a result
	convs  []conversion // the number conversion of each field's declared type
	rec    value.Value
	vals   []value.Value
}

// wire sets a.direct when the aggregate's results can go straight into its sink's value.
func (a *aggregator) wire(e *Engine, n *node) {
	if len(n.main) != 1 || e.opts.Observe != nil {
		return
	}
	to := n.main[0]
	sk, ok := to.op.(*sink)
	if !ok || sk.value == nil || sk.value.keys == nil {
		return
	}
	d := &directSink{sink: to, convs: sk.value.types}
	for _, p := range sk.value.paths {
		// The steps lazyField answers: an index of #key within the key, a field of #window
		// or of the output variable.
		if len(p.steps) != 1 {
			return
		}
		f := a.fieldOf(p.slot, p.steps[0])
		if f.what == notInResult || f.what == resultKey && f.index >= len(a.groupBy) {
			return
		}
		d.fields = append(d.fields, f)
	}
	d.rec, d.vals = value.MakeRecord(sk.value.keys)
	a.direct = d
}

// emitDirect is emit through a.direct, for a new result (r.Event nil).
func (a *aggregator) emitDirect(e *Engine, r *aggregate.Result) {
	a.counts.Out++
	d := a.direct
	if !e.enter(d.sink) {
		return
	}
	a.cur = r
	for i, f := range d.fields {
		v, _ := a.resultField(f)
		d.vals[i] = conform(v, d.convs[i])
	}
	a.cur = nil
	d.sink.counts.Out++
	if e.opts.Output != nil {
		e.opts.Output(d.sink.id, d.rec, r.Time)
	}
}

// windowOf is the builder of an aggregate whose window shape shape sets.
func windowOf(shape func(*AggregatePlan, *aggregate.WindowSpec)) builder {
	return func(e *Engine, n *node) (operator, error) {
		p := n.plan.Typed.(*AggregatePlan)
		a := &aggregator{node: n}
		spec := aggregate.WindowSpec{Precision: p.Precision.Milliseconds(), Offset: p.Offset.Milliseconds()}
		shape(p, &spec)
		spec.Reserve = func(bytes int64) error { return e.reserveState(n.id, bytes) }
		a.endCond = n.evaluator(p.EndSession)
		for _, x := range p.GroupBy {
			a.groupBy = append(a.groupBy, n.evaluator(x))
			a.groupByFields = append(a.groupByFields, x.Field)
		}
		var named []aggregate.Named
		for i, ag := range p.Aggregations {
			fn, err := aggregate.New(aggregate.Spec{Func: ag.Aggregator, Quantile: ag.Quantile, Precision: int(ag.Precision)})
			if err != nil {
				return nil, err
			}
			named = append(named, aggregate.Named{Name: ag.Name, Aggregator: fn})
			a.numeric = (i == 0 || a.numeric) && fn.NumericResult()
			a.aggNames = append(a.aggNames, ag.Name)
			a.aggBy = append(a.aggBy, n.evaluator(p.AggregateBy[i]))
			a.aggByFields = append(a.aggByFields, p.AggregateBy[i].Field)
		}
		n.varName = p.OutputVar
		op, err := aggregate.NewOperator(spec, named, a.emit)
		if err != nil {
			return nil, err
		}
		a.window = op
		a.keyBuf = make([]value.Value, len(a.groupBy))
		a.inBuf = make([]value.Value, len(named)) // null where aggBy is nil (Count)
		a.ev = aggregate.Event{Key: a.keyBuf, Inputs: a.inBuf}
		n.agg = a
		e.aggregates = append(e.aggregates, a)
		return a, nil
	}
}

func (a *aggregator) appendState(b []byte) []byte {
	return slices.AppendSized(b, a.window.AppendSnapshot)
}

func (a *aggregator) skipState(r *slices.Reader) { r.View() }

func (a *aggregator) restoreState(_ *Engine, r *slices.Reader) error {
	snap := r.View() // the window keeps none of it
	if r.Err() != nil {
		return nil // reported by the caller
	}
	if err := a.window.Restore(snap); err != nil {
		return fmt.Errorf("restoring node %q: %w", a.id, err)
	}
	return nil
}

// inputs evaluates the aggregate's groupBy and aggregateBy expressions for ev into keyBuf
// and inBuf; false when one failed (reported), or the state passed its budget before. src,
// when not nil, is the source that feeds the aggregate (source.wire), where each
// expression's one field of #input is read.
func (a *aggregator) inputs(e *Engine, src *source, ev *event) bool {
	if e.stateErr != nil {
		// Past the state budget the run ends (the caller stops it): the other branches of
		// the event in flight need not make their inputs.
		return false
	}
	// Between the expressions that run a program, the event's stop is looked at, as between
	// nodes (a VariableBuilder's fields, a Switch's conditions): 400 aggregations of half a
	// second each held a test run for 159 s past its 30 s (hostile round). A field read
	// (#input.amount) needs no look.
	for i, p := range a.groupBy {
		if i > 0 && p.runs() && e.haltedAt(a.node, true) {
			return false
		}
		v, err := p.evalFrom(src, ev)
		if err != nil {
			e.fail(a.node, a.groupByFields[i], err)
			return false
		}
		a.keyBuf[i] = v
	}
	for i, p := range a.aggBy {
		if p == nil {
			continue
		}
		if (i > 0 || len(a.groupBy) > 0) && p.runs() && e.haltedAt(a.node, true) {
			return false
		}
		v, err := p.evalFrom(src, ev)
		if err != nil {
			e.fail(a.node, a.aggByFields[i], err)
			return false
		}
		a.inBuf[i] = v
	}
	return true
}

// releaseEvent drops the last event's key, inputs and variables (eventHolder): what the window
// keeps of them it has copied (aggregate.owned).
func (a *aggregator) releaseEvent() {
	clear(a.keyBuf)
	clear(a.inBuf)
	a.ev.Payload = nil
	a.cur = nil
	if a.direct != nil {
		clear(a.direct.vals) // the last result's values, handed to the sink
	}
	a.scratchFresh = false // the engine clears the scratch event
	clear(a.lateEv.slots)
}

// process evaluates the aggregate's expressions for ev and adds the event.
func (a *aggregator) process(e *Engine, _ *node, ev *event, _ string) {
	if a.inputs(e, nil, ev) {
		a.add(e, ev)
	}
}

// add adds ev, whose key and inputs are in keyBuf and inBuf, to the window.
func (a *aggregator) add(e *Engine, ev *event) {
	in := &a.ev // its Key and Inputs are keyBuf and inBuf
	in.Time, in.Payload = ev.time, ev
	if a.endCond != nil {
		if a.endCond.runs() && e.haltedAt(a.node, true) {
			return
		}
		v, err := a.endCond.eval(ev)
		if err == nil {
			in.EndSession, err = truth(v)
		}
		if err != nil {
			e.fail(a.node, "endSessionCondition", err)
			return
		}
	}
	if e.probe != nil {
		e.probe.aggregated(a)
		return
	}
	if err := a.reserveInputs(e); err != nil {
		e.fail(a.node, "aggregations", err)
		return
	}
	err := a.window.Add(in)
	switch {
	case err == nil:
	case errors.Is(err, aggregate.ErrLate):
		a.counts.Late++
		var le *aggregate.LateError
		if errors.As(err, &le) && (a.lateOut || e.observeLate != nil) {
			a.late(e, ev, le)
		}
	default:
		e.fail(a.node, "aggregations", err)
	}
}

// largeInputBytes is the bytes of an event's group key and inputs, as aggregate.HeldBytes
// counts them, from which the aggregate reserves them in the state budget before it adds the
// event (reserveInputs). The state watcher's looks between events assume that one event adds
// little; an input may be a list of a million records (round 26: a test run of 3 records
// through 8 branches of 4 List aggregations over such lists held 5.8 GB against 64 MiB).
const largeInputBytes = 4 << 10

// reserveInputs reserves, when the state has a budget, the bytes of the event's group key and
// inputs (keyBuf, inBuf) that are strings, lists or records, when they come to
// largeInputBytes or more: an aggregator may keep a copy of each (List, Set, First, Max, ...).
// It returns the state error when they do not fit (Engine.reserveState).
func (a *aggregator) reserveInputs(e *Engine) error {
	w := &e.stateWatch
	if w.Max <= 0 && w.Shared == nil {
		return nil
	}
	n := aggregate.HeldBytesOf(a.keyBuf, math.MaxInt) + aggregate.HeldBytesOf(a.inBuf, math.MaxInt)
	if n < largeInputBytes {
		return nil
	}
	return e.reserveState(a.id, int64(n))
}

// late sends a late event down the node's Late edge (and to ObserveLate): its variables,
// unchanged, with #late, the first window it missed (docs/semantics.md §2).
func (a *aggregator) late(e *Engine, ev *event, le *aggregate.LateError) {
	rec, vals := value.MakeRecord(lateFields)
	vals[0], vals[1], vals[2] = value.Int(le.WindowStart), value.Int(le.WindowEnd), value.Int(le.Watermark)
	out := &a.lateEv
	out.copyFrom(ev)
	out.set(e.lateSlot, rec)
	if e.observeLate != nil {
		e.observeLate(a.id, out.varsMap(), out.time, *le)
	}
	if a.lateOut {
		e.forward(a.node, out, scenario.EdgeLate)
	}
}

var lateFields = []string{"windowStart", "windowEnd", "watermark"}

var windowFields = []string{"start", "end"}

// emit sends an aggregate result on, as an event whose result variables (the output
// variable, #key, and #window for new events) are lazy: read from r where they are (see
// lazyField), made whole only when needed.
func (a *aggregator) emit(r *aggregate.Result) {
	e := a.engine
	for _, ae := range r.Errs {
		// Reported with the line being processed, whose watermark closed the window (line 0
		// at the end of input), one error for each aggregation that failed: the message
		// names the window, the key and the aggregation (at field "aggregations" alone, the
		// first only, it did not say which: a hostile round).
		field, which := "aggregations", ""
		if ae.Index >= 0 && ae.Index < len(a.aggNames) {
			field, which = fmt.Sprintf("aggregations[%d]", ae.Index), fmt.Sprintf(" aggregation %q:", a.aggNames[ae.Index])
		}
		e.fail(a.node, field, fmt.Errorf("window [%d, %d) of key %s:%s %w",
			r.Start, r.End, value.AppendJSON(nil, value.List(r.Key)), which, ae.Err))
	}
	madeByResult(e, r, a.numeric)
	if a.direct != nil && r.Event == nil && e.probe == nil {
		a.emitDirect(e, r)
		return
	}
	a.cur = r
	c := &a.scratch
	if r.Event != nil {
		c.copyFrom(r.Event.Payload.(*event))
		a.scratchFresh = false
	} else {
		// A new event has the result variables (set below) and #meta.
		if !a.scratchFresh {
			c.reset()
			a.scratchFresh = true
		}
		c.time = r.Time
		c.setLazy(e.windowSlot, a.node)
		if e.needsMeta {
			c.set(e.metaSlot, e.meta(r.Time))
		}
	}
	if a.varSlot >= 0 {
		c.setLazy(a.varSlot, a.node)
	}
	c.setLazy(e.keySlot, a.node)
	a.counts.Out++
	e.forward(a.node, c, "")
	a.cur = nil
}

// madeByResult counts a result's key and values that are strings, lists or records in what
// the event made (layout.made), until that reaches ReleaseAfterBytes; numeric says the values
// are all numbers (aggregator.numeric), and only the key is looked at. The result goes on to
// variables and sinks that keep it until the engine lets go of the event (releaseIfMade): a
// closed window's List of 20 MB, or its key of 20 MB, was held by the aggregate's scratch
// event, its sink and the expressions that read it, after a small event had closed it, until
// the next large one.
func madeByResult(e *Engine, r *aggregate.Result, numeric bool) {
	madeBy(e, r.Key)
	if !numeric {
		madeBy(e, r.Values)
	}
}

// madeBy counts vals' strings, lists and records in layout.made (madeByResult), until it
// reaches ReleaseAfterBytes.
func madeBy(e *Engine, vals []value.Value) {
	if left := ReleaseAfterBytes - e.lay.made; left > 0 {
		e.lay.made += aggregate.HeldBytesOf(vals, left)
	}
}

// materialize makes a result variable whole from the result being emitted.
func (a *aggregator) materialize(slot int) value.Value {
	e := a.engine
	switch {
	case a.cur == nil:
		return value.Null()
	case slot == a.varSlot:
		rec, vals := value.MakeRecord(a.aggNames)
		copy(vals, a.cur.Values)
		return rec
	case slot == e.keySlot:
		return value.List(a.cur.Key)
	case slot == e.windowSlot:
		rec, vals := value.MakeRecord(windowFields)
		vals[0], vals[1] = value.Int(a.cur.Start), value.Int(a.cur.End)
		return rec
	}
	return value.Null()
}

// lazyField reads one step of a result variable from the result being emitted.
func (a *aggregator) lazyField(slot int, step pathStep) (value.Value, bool) {
	if a.cur == nil {
		return value.Null(), false
	}
	return a.resultField(a.fieldOf(slot, step))
}

// A resultRef is where a step of a result variable is in the result being emitted (fieldOf).
type resultRef struct {
	what  resultPart
	index int // of the key's values, or of the aggregations
}

type resultPart uint8

const (
	notInResult resultPart = iota // not a step lazyField answers
	resultNull                    // a step that reads null (a field the variable lacks)
	resultKey                     // #key[index]
	resultStart                   // #window.start
	resultEnd                     // #window.end
	resultAgg                     // the output variable's field of aggregation index
)

// fieldOf finds where step of the result variable in slot is.
func (a *aggregator) fieldOf(slot int, step pathStep) resultRef {
	e := a.engine
	switch {
	case slot == a.varSlot:
		if step.index < 0 {
			if i := a.aggIndex(step.name); i >= 0 {
				return resultRef{resultAgg, i}
			}
			return resultRef{what: resultNull}
		}
	case slot == e.keySlot:
		if step.index >= 0 {
			return resultRef{resultKey, step.index}
		}
	case slot == e.windowSlot:
		switch {
		case step.index >= 0:
		case step.name == "start":
			return resultRef{what: resultStart}
		case step.name == "end":
			return resultRef{what: resultEnd}
		default:
			return resultRef{what: resultNull}
		}
	}
	return resultRef{}
}

// resultField reads f of the result being emitted (a.cur, not nil).
func (a *aggregator) resultField(f resultRef) (value.Value, bool) {
	switch r := a.cur; f.what {
	case resultNull:
		return value.Null(), true
	case resultKey:
		if f.index < len(r.Key) {
			return r.Key[f.index], true
		}
	case resultStart:
		return value.Int(r.Start), true
	case resultEnd:
		return value.Int(r.End), true
	case resultAgg:
		return r.Values[f.index], true
	}
	return value.Null(), false
}

// aggIndex returns the position of aggregation name, or -1.
func (a *aggregator) aggIndex(name string) int {
	for i, n := range a.aggNames {
		if n == name {
			return i
		}
	}
	return -1
}
