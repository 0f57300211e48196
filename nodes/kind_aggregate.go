package nodes

import (
	"fmt"
	"strconv"
	"time"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/scenario"
)

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
func checkAggregate(c *nodeCheck, window func(*nodeCheck, *aggregateOutput)) {
	env := c.in.env()
	keyElem := expression.Unknown
	if exprs, _ := c.expressionListParam("groupBy"); len(exprs) > 0 {
		for i, e := range exprs {
			t := expression.Unknown
			if prog := c.compile(fmt.Sprintf("groupBy[%d]", i), e, env, expression.Unknown); prog != nil {
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
	for i, a := range c.aggregationsParam("aggregations") {
		agg, known := c.v.reg.Aggregator(a.Aggregator)
		result := expression.Unknown
		if known {
			in := expression.Unknown
			if a.AggregateBy != nil {
				in = c.aggregateInput(fmt.Sprintf("aggregations[%d].aggregateBy", i), a.AggregateBy, env, agg)
			}
			result = agg.ResultType(in)
		}
		if a.Name != "" {
			fields = append(fields, expression.Field{Name: a.Name, Type: result})
		}
	}
	name, nameOK := c.defineName("outputVar", c.n.OutputVar)

	var out aggregateOutput
	window(c, &out)

	if c.in == nil {
		c.out = nil
		return
	}
	var below scope
	switch {
	case out.enrich && !out.creates:
		below = c.in
	case out.enrich && out.creates:
		below = keep(c.in, VarMeta)
	default:
		below = keep(c.in, VarMeta).with(VarWindow, WindowType, c.n.ID)
	}
	below = below.with(VarKey, expression.ListOf(keyElem), c.n.ID)
	if nameOK {
		below = below.with(name, expression.RecordOf(fields...), c.n.ID)
	}
	c.out = below
}

// aggregateInput compiles an aggregateBy expression and checks its type
// against what the aggregator takes. It returns the input type.
func (c *nodeCheck) aggregateInput(field string, e *scenario.Expression, env expression.TypeEnv, agg *Aggregator) expression.Type {
	want := expression.Unknown
	switch agg.Input {
	case InputBoolean:
		want = expression.Boolean.OrNull()
	case InputNumber:
		want = expression.Number.OrNull()
	}
	prog := c.compile(field, e, env, want)
	if prog == nil {
		return expression.Unknown
	}
	t := expression.Boundary(prog.Result())
	if agg.Input == InputNumberOrString {
		switch t.Kind {
		case expression.KindInteger, expression.KindFloat, expression.KindNumber, expression.KindString, expression.KindUnknown:
		default:
			c.resultProblem(field, e, "%s takes numbers or strings, but the expression is %s", agg.Name, t)
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
func (c *nodeCheck) precision(def time.Duration) (p time.Duration, explicit, ok bool) {
	if c.given("precision") {
		p, ok = c.durationParam("precision", true)
		return p, true, ok
	}
	c.record("precision", def)
	return def, false, true
}

// checkMultiple reports a length (windowLength, sessionTimeout, slide) that
// is shorter than the precision or not a whole multiple of it.
func (c *nodeCheck) checkMultiple(field string, length, p time.Duration, explicit bool, code string) {
	which := "the precision " + formatDuration(p)
	hint := ""
	if !explicit {
		which += " (the default)"
		hint = "; set \"precision\" to a duration that divides it"
	}
	switch {
	case length < p && code == CodeNotMultipleOfPrec:
		c.errorf(field, CodeShorterThanPrecision, "%s %s is shorter than %s%s", field, formatDuration(length), which, hint)
	case length%p != 0:
		c.errorf(field, code, "%s %s is not a whole multiple of %s%s", field, formatDuration(length), which, hint)
	}
}

// The window shapes a time-window aggregate may have. Its state and work grow with them, not
// with the events: a sliding or hopping window keeps, per key, one partial aggregate per slice
// of its window (windowLength / precision slices), and a hopping window's event is counted in
// windowLength / slide windows, each fired on its own. So a hopping window of 1d sliding every
// 1ms would hold 86,400,000 slices per key and fire as many windows per event: such shapes are
// validation errors (CodeTooManySlices, CodeTooManyWindows), checked before anything runs.
// Tumbling windows have one slice per window and sessions one cell per session (its bounds
// exact to the millisecond, whatever the precision), so neither has a shape limit.
const (
	// MaxSlicesPerWindow is the most slices (windowLength / precision) a sliding or hopping
	// window may have.
	MaxSlicesPerWindow = 10_000
	// MaxWindowsPerEvent is the most windows (windowLength / slide) a hopping window may count
	// one event in: a window of a day sliding every minute is the longest.
	MaxWindowsPerEvent = 1_440
)

// checkSlices reports a window of more than MaxSlicesPerWindow slices of precision p. slide is
// a hopping window's slide (0 for a sliding window), which the precision must divide.
func (c *nodeCheck) checkSlices(length, p time.Duration, explicit bool, slide time.Duration) {
	if p <= 0 || length/p <= MaxSlicesPerWindow {
		return
	}
	which, hint := "precision", "; set a coarser \"precision\" that divides it"
	switch {
	case slide > 0 && p < slide:
		hint = "; set a coarser \"precision\" that divides the slide " + formatDuration(slide)
	case slide > 0:
		hint = "; the precision must divide the slide " + formatDuration(slide) + ": set a longer slide"
	}
	if !explicit {
		which = "the default precision"
	}
	c.errorf("windowLength", CodeTooManySlices, "windowLength %s at %s %s is %s slices; at most %s%s",
		formatDuration(length), which, formatDuration(p), groupDigits(int64(length/p)), groupDigits(MaxSlicesPerWindow), hint)
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

func checkSliding(c *nodeCheck, out *aggregateOutput) {
	length, okL := c.durationParam("windowLength", true)
	p, explicit, okP := c.precision(defaultPrecision(length))
	if okL && okP {
		c.checkMultiple("windowLength", length, p, explicit, CodeNotMultipleOfPrec)
		c.checkSlices(length, p, explicit, 0)
	}
	left, _ := c.boolParam("emitWhenEventLeft")
	out.enrich = true
	out.creates = left
}

func checkTumbling(c *nodeCheck, out *aggregateOutput) {
	length, okL := c.durationParam("windowLength", true)
	if offset, ok := c.durationParam("offset", false); ok && okL && offset >= length {
		c.errorf("offset", CodeOffsetOutOfRange, "offset %s must be shorter than windowLength %s", formatDuration(offset), formatDuration(length))
	}
	if zone, ok := c.stringParam("timeZone"); ok {
		if _, err := expression.LoadZone(zone); err != nil {
			c.errorf("timeZone", CodeInvalidTimeZone, "%v", err)
		} else if okL && length%(24*time.Hour) != 0 {
			c.errorf("windowLength", CodeZoneNeedsWholeDays, "windowLength %s is not a whole number of days; with a timeZone, windows follow local calendar days (e.g. \"1d\")", formatDuration(length))
		}
	}
	emit, ok := c.enumParam("emitWhen")
	out.enrich = ok && emit == EmitOnEvent
}

func checkHopping(c *nodeCheck, out *aggregateOutput) {
	length, okL := c.durationParam("windowLength", true)
	slide, okS := c.durationParam("slide", true)
	if okS {
		// The default precision is the slide itself (docs/semantics.md §3).
		if p, explicit, okP := c.precision(slide); okP {
			c.checkMultiple("slide", slide, p, explicit, CodeSlideNotMultiple)
			if okL {
				c.checkSlices(length, p, explicit, slide)
			}
		}
	}
	if okL && okS && length%slide != 0 {
		c.errorf("windowLength", CodeNotMultipleOfSlide, "windowLength %s is not a whole multiple of slide %s", formatDuration(length), formatDuration(slide))
	}
	if okL && okS && slide > 0 && length/slide > MaxWindowsPerEvent {
		c.errorf("slide", CodeTooManyWindows, "windowLength %s sliding every %s puts each event in %s windows; at most %s: set a longer slide",
			formatDuration(length), formatDuration(slide), groupDigits(int64(length/slide)), groupDigits(MaxWindowsPerEvent))
	}
}

func checkSession(c *nodeCheck, out *aggregateOutput) {
	timeout, okT := c.durationParam("sessionTimeout", true)
	p, explicit, okP := c.precision(defaultPrecision(timeout))
	if okT && okP {
		c.checkMultiple("sessionTimeout", timeout, p, explicit, CodeNotMultipleOfPrec)
	}
	if e := c.expressionParam("endSessionCondition"); e != nil {
		c.compile("endSessionCondition", e, c.in.env(), expression.Boolean.OrNull())
	}
	emit, ok := c.enumParam("emitWhen")
	out.enrich = ok && emit == EmitOnEvent
}

func checkCount(c *nodeCheck, out *aggregateOutput) {
	length, okL := c.intParam("windowLength")
	if c.given("slide") {
		if slide, ok := c.intParam("slide"); ok && okL && slide > length {
			c.errorf("slide", CodeSlideOutOfRange, "slide %d is more than windowLength %d: events between windows would be skipped", slide, length)
		}
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
func slidingKind() *Kind {
	return aggregateKind(AggregateSliding, "Sliding window",
		"Enriches each event with the aggregate of its key's events in the windowLength before it (docs/semantics.md §4).",
		checkSliding,
		windowLengthSpec("Length of the window ending at each event; a whole multiple of the precision."),
		ParamSpec{Name: "emitWhenEventLeft", In: InParameters, Editor: EditorBoolean, Type: "boolean", Default: false, Label: "Emit when event left",
			Description: "Also emit a new event whenever a slice leaves the window of the key's latest event, including the final empty result."},
		precisionSpec)
}

// tumblingKind is the tumbling window.
func tumblingKind() *Kind {
	return aggregateKind(AggregateTumbling, "Tumbling window",
		"Aggregates per key over back-to-back windows [k·windowLength + offset, (k+1)·windowLength + offset), aligned to the Unix epoch (docs/semantics.md §4).",
		checkTumbling,
		windowLengthSpec("Length of each window; also the precision."),
		ParamSpec{Name: "emitWhen", In: InParameters, Editor: EditorEnum, Type: "string",
			Options: []string{EmitOnEvent, EmitOnEnd, EmitOnEndWithExtraWindow}, Default: EmitOnEnd, Label: "Emit when",
			Description: "OnEvent: every event, enriched with its window's running value. OnEnd: one new event per key and window when the watermark passes its end. OnEndWithExtraWindow: as OnEnd, plus one empty window after a key's last non-empty one."},
		ParamSpec{Name: "offset", In: InParameters, Editor: EditorDuration, Type: "duration", Default: "0s", Label: "Offset",
			Description: "Shift of the windows from the epoch alignment, 0 ≤ offset < windowLength."},
		ParamSpec{Name: "timeZone", In: InParameters, Editor: EditorString, Type: "string", Label: "Time zone",
			Description: "Optional IANA time zone (\"Europe/Warsaw\") in which day-based windows follow local calendar days; UTC when absent."})
}

// hoppingKind is the hopping window.
func hoppingKind() *Kind {
	return aggregateKind(AggregateHopping, "Hopping window",
		"Aggregates per key over windows [k·slide, k·slide + windowLength), emitting one new event per key and window when the watermark passes its end (docs/semantics.md §4).",
		checkHopping,
		windowLengthSpec("Length of each window; a whole multiple of slide."),
		ParamSpec{Name: "slide", In: InParameters, Editor: EditorDuration, Type: "duration", Required: true, Label: "Slide",
			Description: "How far apart windows start; a whole multiple of the precision."},
		precisionSpec)
}

// sessionKind is the session window.
func sessionKind() *Kind {
	return aggregateKind(AggregateSession, "Session window",
		"Aggregates per key over sessions: events at most sessionTimeout apart share a session, which ends sessionTimeout after its last event (docs/semantics.md §4).",
		checkSession,
		ParamSpec{Name: "sessionTimeout", In: InParameters, Editor: EditorDuration, Type: "duration", Required: true, Label: "Session timeout",
			Description: "A gap longer than this between a key's events starts a new session (a gap of exactly this joins them); a whole multiple of the precision."},
		ParamSpec{Name: "emitWhen", In: InParameters, Editor: EditorEnum, Type: "string",
			Options: []string{EmitOnEvent, EmitOnEnd}, Default: EmitOnEnd, Label: "Emit when",
			Description: "OnEvent: every event, enriched with its session's running value. OnEnd: one new event per session when it ends."},
		ParamSpec{Name: "endSessionCondition", In: InParameters, Editor: EditorExpression, Type: "boolean", Label: "End session condition",
			Description: "Optional: when true for an event, its session ends with it, and the key's next event starts a new one."},
		precisionSpec)
}

// countKind is the count window.
func countKind() *Kind {
	return aggregateKind(AggregateCount, "Count window",
		"Aggregates per key over every windowLength events, optionally sliding by slide events; one new event per full window.",
		checkCount,
		ParamSpec{Name: "windowLength", In: InParameters, Editor: EditorInteger, Type: "integer", Required: true, Min: ptr(1), Label: "Window length (events)",
			Description: "Number of events per window."},
		ParamSpec{Name: "slide", In: InParameters, Editor: EditorInteger, Type: "integer", Min: ptr(1), Label: "Slide (events)",
			Description: "Optional: a new window starts every slide events (1 ≤ slide ≤ windowLength); windowLength when absent."})
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
		ID: "CustomNode/" + subtype, NodeType: scenario.TypeCustomNode, Subtype: subtype, Group: GroupAggregates, Label: label, Description: desc, Role: RoleAggregate,
		Parameters: params,
		check:      func(c *nodeCheck) { checkAggregate(c, check) },
		typed:      typedAggregate,
	}
}

var precisionSpec = ParamSpec{Name: "precision", In: InParameters, Editor: EditorDuration, Type: "duration", Label: "Precision",
	Description: "Optional slice length: events are kept per key and slice of this length. Default: the slide for a hopping window; otherwise 60s, or 1s when the window (or session timeout) is not a whole number of minutes."}

func windowLengthSpec(desc string) ParamSpec {
	return ParamSpec{Name: "windowLength", In: InParameters, Editor: EditorDuration, Type: "duration", Required: true, Label: "Window length", Description: desc}
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

// AggregatePlan is an aggregate's plan (docs/semantics.md §4): per key (GroupBy's values)
// the Aggregations over the window the kind and its parameters say.
type AggregatePlan struct {
	OutputVar    string
	GroupBy      []Expr
	Aggregations []Aggregation
	AggregateBy  []Expr // per aggregation; nil Program for Count
	// The window's parameters, as given or defaulted (zero when the kind has none).
	WindowLength, Slide, Precision, Offset, SessionTimeout time.Duration
	Count, CountSlide                                      int64 // aggregate-count, in events
	EmitWhen                                               string
	EmitWhenEventLeft                                      bool
	TimeZone                                               string
	EndSession                                             Expr
}

func typedAggregate(c *nodeCheck) any {
	p := &AggregatePlan{OutputVar: c.n.OutputVar, Aggregations: c.plan.Aggregations}
	for i := 0; ; i++ {
		x := c.expr(fmt.Sprintf("groupBy[%d]", i))
		if x.Program == nil {
			break
		}
		p.GroupBy = append(p.GroupBy, x)
	}
	for i := range p.Aggregations {
		p.AggregateBy = append(p.AggregateBy, c.expr(fmt.Sprintf("aggregations[%d].aggregateBy", i)))
	}
	p.WindowLength = c.durationOr("windowLength", 0)
	p.Slide = c.durationOr("slide", 0)
	p.Precision = c.durationOr("precision", 0)
	p.Offset = c.durationOr("offset", 0)
	p.SessionTimeout = c.durationOr("sessionTimeout", 0)
	p.Count, _ = c.plan.Params["windowLength"].(int64)
	p.CountSlide, _ = c.plan.Params["slide"].(int64)
	p.EmitWhen, _ = c.plan.Params["emitWhen"].(string)
	p.EmitWhenEventLeft, _ = c.plan.Params["emitWhenEventLeft"].(bool)
	p.TimeZone, _ = c.plan.Params["timeZone"].(string)
	p.EndSession = c.expr("endSessionCondition")
	return p
}
