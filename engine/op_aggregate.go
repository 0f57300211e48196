package engine

import (
	"errors"
	"fmt"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// The aggregates of docs/semantics.md §4 (CustomNode aggregate-sliding, -tumbling, -hopping,
// -session, -count) keep windows per key in an aggregate.Operator: each event's groupBy and
// aggregateBy values are added, and the engine's watermark steps (Engine.step) close windows,
// whose results the operator emits (aggregator.emit).

var (
	_ = builtIn(windowOf(slidingWindow), "CustomNode/"+nodes.AggregateSliding)
	_ = builtIn(windowOf(tumblingWindow), "CustomNode/"+nodes.AggregateTumbling)
	_ = builtIn(windowOf(hoppingWindow), "CustomNode/"+nodes.AggregateHopping)
	_ = builtIn(windowOf(sessionWindow), "CustomNode/"+nodes.AggregateSession)
	_ = builtIn(windowOf(countWindow), "CustomNode/"+nodes.AggregateCount)
)

// emitModes maps emitWhen's values to the operator's.
var emitModes = map[string]aggregate.EmitWhen{
	nodes.EmitOnEvent:              aggregate.OnEvent,
	nodes.EmitOnEnd:                aggregate.OnEnd,
	nodes.EmitOnEndWithExtraWindow: aggregate.OnEndWithExtraWindow,
}

// emitMode is the plan's emitWhen, OnEnd by default.
func emitMode(p *nodes.AggregatePlan) aggregate.EmitWhen {
	if m, ok := emitModes[p.EmitWhen]; ok {
		return m
	}
	return aggregate.OnEnd
}

func slidingWindow(p *nodes.AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Sliding
	spec.Length = p.WindowLength.Milliseconds()
	spec.EmitWhenEventLeft = p.EmitWhenEventLeft
}

func tumblingWindow(p *nodes.AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Tumbling
	spec.Length = p.WindowLength.Milliseconds()
	spec.EmitWhen = emitMode(p)
	spec.TimeZone = p.TimeZone
}

func hoppingWindow(p *nodes.AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Hopping
	spec.Length = p.WindowLength.Milliseconds()
	spec.Slide = p.Slide.Milliseconds()
}

func sessionWindow(p *nodes.AggregatePlan, spec *aggregate.WindowSpec) {
	spec.Kind = aggregate.Session
	spec.SessionTimeout = p.SessionTimeout.Milliseconds()
	spec.EmitWhen = emitMode(p)
}

func countWindow(p *nodes.AggregatePlan, spec *aggregate.WindowSpec) {
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
	endCond  *evaluator
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
}

// windowOf is the builder of an aggregate whose window shape shape sets.
func windowOf(shape func(*nodes.AggregatePlan, *aggregate.WindowSpec)) builder {
	return func(e *Engine, n *node) (operator, error) {
		p := n.plan.Typed.(*nodes.AggregatePlan)
		a := &aggregator{node: n}
		spec := aggregate.WindowSpec{Precision: p.Precision.Milliseconds(), Offset: p.Offset.Milliseconds()}
		shape(p, &spec)
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
	return slices.AppendBytes(b, a.window.AppendSnapshot(nil))
}

func (a *aggregator) restoreState(_ *Engine, r *slices.Reader) error {
	snap := r.Bytes()
	if r.Err() != nil {
		return nil // reported by the caller
	}
	if err := a.window.Restore(snap); err != nil {
		return fmt.Errorf("restoring node %q: %w", a.id, err)
	}
	return nil
}

// inputs evaluates the aggregate's groupBy and aggregateBy expressions for ev into keyBuf
// and inBuf; false when one failed (reported).
func (a *aggregator) inputs(e *Engine, ev *event) bool {
	for i, p := range a.groupBy {
		v, err := p.eval(ev)
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
		v, err := p.eval(ev)
		if err != nil {
			e.fail(a.node, a.aggByFields[i], err)
			return false
		}
		a.inBuf[i] = v
	}
	return true
}

// process evaluates the aggregate's expressions for ev and adds the event.
func (a *aggregator) process(e *Engine, _ *node, ev *event, _ string) {
	if !a.inputs(e, ev) {
		return
	}
	in := &a.ev // its Key and Inputs are keyBuf and inBuf
	in.Time, in.Payload = ev.time, ev
	if a.endCond != nil {
		v, err := a.endCond.eval(ev)
		if err != nil {
			e.fail(a.node, "endSessionCondition", err)
			return
		}
		in.EndSession = v.Bool()
	}
	if e.probe != nil {
		e.probe.aggregated(a)
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
	if r.Err != nil {
		// Reported with the line being processed, whose watermark closed the window (line 0
		// at the end of input): the message names the window and key.
		e.fail(a.node, "aggregations", fmt.Errorf("window [%d, %d) of key %s: %w",
			r.Start, r.End, value.AppendJSON(nil, value.List(r.Key)), r.Err))
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
	e := a.engine
	switch {
	case a.cur == nil:
	case slot == a.varSlot:
		if step.index < 0 {
			if i := a.aggIndex(step.name); i >= 0 {
				return a.cur.Values[i], true
			}
			return value.Null(), true
		}
	case slot == e.keySlot:
		if step.index >= 0 && step.index < len(a.cur.Key) {
			return a.cur.Key[step.index], true
		}
	case slot == e.windowSlot:
		switch {
		case step.index >= 0:
		case step.name == "start":
			return value.Int(a.cur.Start), true
		case step.name == "end":
			return value.Int(a.cur.End), true
		default:
			return value.Null(), true
		}
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
