package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

type nodeKind int

const (
	kindSource nodeKind = iota
	kindFilter
	kindVariable
	kindRecord
	kindSwitch
	kindSplit
	kindUnion
	kindForEach
	kindAggregate
	kindSink
	kindDeadEnd
)

type edge struct {
	to   *node
	from string
	typ  string // FilterTrue, FilterFalse, NextSwitch, SwitchDefault or ""
	cond *evaluator
}

// node is one operator of the running scenario.
type node struct {
	id      string
	kind    nodeKind
	subtype string
	plan    *nodes.Plan
	out     []edge
	counts  Counts

	upstream []*node // sources whose watermark this node uses

	// source
	ctx        ctx // reused for each event of the source
	timestamp  *evaluator
	outOfOrder int64 // ms
	seen       bool
	maxTime    int64
	// live sources: the idle timeout (ms, 0: none), the wall-clock time of
	// the last arrival (ms), and the watermark floor an idle step gave.
	idleTimeout int64
	lastArrival int64
	idleW       int64
	// maxFutureSkew (ms, 0: none) bounds how far ahead of the wall clock a live source's
	// event time may be.
	maxFutureSkew int64
	// parts: a live source whose events come with input partitions (Kafka; see
	// Engine.SetInputPartition) keeps per partition what its watermark needs; maxTime is
	// then the partitions' floor (partitionFloor), not the largest event time.
	parts      map[int32]*partState
	decoder    value.Decoder
	wantFields *value.FieldSet // top-level #input fields the scenario reads; nil: all
	// The record being pushed: its wanted fields (by position in
	// wantFields) when fields is not nil, and otherwise input.
	fields    []value.Value
	present   uint64 // bit k: the record has field k
	input     value.Value
	lazyInput bool // #input is made from fields when needed
	// filter, variable, sink, for-each
	prog    *evaluator
	kafka   *kafkaSink // a Kafka sink's key and headers
	varName string
	varSlot int // varName's slot
	// record variable
	fieldNames []string
	fieldProgs []*evaluator
	// union: output expression per branch (by upstream node id)
	branchProgs map[string]*evaluator
	// aggregate
	op       aggregate.Operator
	groupBy  []*evaluator
	aggBy    []*evaluator // nil for Count
	aggNames []string
	endCond  *evaluator
	cur      *aggregate.Result // the result being emitted
	keyBuf   []value.Value
	inBuf    []value.Value
	ev       aggregate.Event // reused for every Add
	engine   *Engine
	// lateOut: the aggregate has a Late edge; lateCtx is the context it sends late events on.
	lateOut bool
	lateCtx ctx
	// scratch is the context this node sends on, reused for every output:
	// a context is dead once the push that carries it returns (the graph
	// has no cycles, and nothing downstream keeps a context).
	scratch ctx
	// scratchFresh: an aggregate's scratch holds only what its last new
	// event set (so the next one need not clear it).
	scratchFresh bool
}

// partState is what a partitioned source keeps per input partition.
type partState struct {
	seen    bool
	max     int64 // the largest event time of the partition's events
	arrival int64 // wall-clock ms of its last event (of the restore, after one)
	pending bool  // records wait to be read (Engine.SetPartitionsPending)
}

func (n *node) part(p int32) *partState {
	if n.parts == nil {
		n.parts = map[int32]*partState{}
	}
	ps := n.parts[p]
	if ps == nil {
		ps = &partState{}
		n.parts[p] = ps
	}
	return ps
}

// partitionFloor is the event time a partitioned source's watermark follows at wall-clock
// time now (ms), as with Flink's per-split watermarks and idleness: the least largest event
// time over the partitions that hold it back. A partition holds it back while records of it
// wait (entirely, when it has had no event yet) and until it has been silent for the idle
// timeout, as docs/semantics.md §1 has a source do. When none holds it back, the largest event time
// of all. ok is false while no partition has had an event.
func (n *node) partitionFloor(now int64) (floor int64, ok bool) {
	floor, active, any := int64(math.MaxInt64), false, false
	latest := int64(math.MinInt64)
	for _, ps := range n.parts {
		if ps.seen {
			any = true
			latest = max(latest, ps.max)
		}
		if !ps.pending && !(ps.seen && now-ps.arrival < n.idleTimeout) {
			continue
		}
		active = true
		if !ps.seen {
			floor = math.MinInt64
		} else {
			floor = min(floor, ps.max)
		}
	}
	if !any {
		return 0, false
	}
	if !active {
		return latest, true
	}
	return floor, true
}

// raiseFloor moves a partitioned source's maxTime up to its partition floor at now; it says
// whether it moved.
func (n *node) raiseFloor(now int64) bool {
	floor, ok := n.partitionFloor(now)
	if !ok || (n.seen && floor <= n.maxTime) {
		return false
	}
	n.maxTime, n.seen = floor, true
	return true
}

func (n *node) watermark() int64 {
	w := int64(math.MinInt64)
	if n.maxTime >= math.MinInt64+n.outOfOrder {
		w = n.maxTime - n.outOfOrder
	}
	return max(w, n.idleW)
}

func (e *Engine) build(p *nodes.Plan) (*node, error) {
	sn := p.Node
	n := &node{id: sn.ID, plan: p, subtype: sn.Subtype(), engine: e}
	defer func() {
		n.varSlot = -1 // no variable (validation requires one where it is set)
		if n.varName != "" {
			n.varSlot = e.lay.slot(n.varName)
		}
	}()
	switch sn.Type {
	case scenario.TypeSource:
		n.kind = kindSource
		n.timestamp = e.lay.newEvaluator(p.Programs["timestamp"])
		n.outOfOrder = durationMS(p, "maxOutOfOrderness", 60*time.Second)
		n.idleW = idleFloorUnset
		if n.subtype != "file" {
			n.idleTimeout = durationMS(p, "idleTimeout", nodes.DefaultIdleTimeout)
		}
		n.maxFutureSkew = durationMS(p, "maxFutureSkew", nodes.DefaultMaxFutureSkew)
		e.sources[n.id] = n
	case scenario.TypeFilter:
		n.kind = kindFilter
		n.prog = e.lay.newEvaluator(p.Programs["expression"])
	case scenario.TypeVariable:
		n.kind = kindVariable
		n.varName = sn.VarName
		n.prog = e.lay.newEvaluator(p.Programs["value"])
	case scenario.TypeVariableBuilder:
		n.kind = kindRecord
		n.varName = sn.VarName
		for i, f := range sn.Fields {
			n.fieldNames = append(n.fieldNames, f.Name)
			n.fieldProgs = append(n.fieldProgs, e.lay.newEvaluator(p.Programs[fmt.Sprintf("fields[%d].expression", i)]))
		}
	case scenario.TypeSwitch:
		n.kind = kindSwitch
	case scenario.TypeSplit:
		n.kind = kindSplit
	case scenario.TypeJoin:
		n.kind = kindUnion
		n.varName = sn.OutputVar
		n.branchProgs = map[string]*evaluator{}
		for k, bp := range sn.BranchParameters {
			for pi, prm := range bp.Parameters {
				if prog := p.Programs[fmt.Sprintf("branchParameters[%d].parameters[%d].expression", k, pi)]; prog != nil && prm.Expression != nil {
					n.branchProgs[bp.BranchID] = e.lay.newEvaluator(prog)
				}
			}
		}
	case scenario.TypeCustomNode:
		if sn.NodeType == "for-each" {
			n.kind = kindForEach
			n.varName = sn.OutputVar
			n.prog = e.lay.newEvaluator(p.Programs["Elements"])
			break
		}
		n.kind = kindAggregate
		if err := n.buildAggregate(e, p); err != nil {
			return nil, err
		}
	case scenario.TypeSink:
		n.kind = kindSink
		if n.subtype == "dead-end" {
			n.kind = kindDeadEnd
		}
		n.prog = e.lay.newEvaluator(p.Programs["value"])
		if n.subtype == nodes.SinkKafka {
			n.kafka = newKafkaSink(e, p)
		}
	default:
		return nil, fmt.Errorf("node type %q has no operator", sn.Type)
	}
	return n, nil
}

// compileSwitch attaches each NextSwitch edge's compiled condition.
func (n *node) compileSwitch(s *scenario.Scenario) {
	k := 0
	for ei, ed := range s.Edges {
		if ed.From != n.id {
			continue
		}
		prog := n.plan.Programs[fmt.Sprintf("edges[%d].edgeType.condition", ei)]
		for ; k < len(n.out); k++ {
			if n.out[k].to.id == ed.To {
				n.out[k].cond = n.engine.lay.newEvaluator(prog)
				k++
				break
			}
		}
	}
}

func (n *node) buildAggregate(e *Engine, p *nodes.Plan) error {
	sn := p.Node
	spec := aggregate.WindowSpec{
		Precision: durationMS(p, "precision", 0),
		Offset:    durationMS(p, "offset", 0),
	}
	emitWhen := aggregate.OnEnd
	if s, ok := p.Params["emitWhen"].(string); ok {
		switch s {
		case nodes.EmitOnEvent:
			emitWhen = aggregate.OnEvent
		case nodes.EmitOnEndWithExtraWindow:
			emitWhen = aggregate.OnEndWithExtraWindow
		}
	}
	switch sn.NodeType {
	case "aggregate-sliding":
		spec.Kind = aggregate.Sliding
		spec.Length = durationMS(p, "windowLength", 0)
		spec.EmitWhenEventLeft, _ = p.Params["emitWhenEventLeft"].(bool)
	case "aggregate-tumbling":
		spec.Kind = aggregate.Tumbling
		spec.Length = durationMS(p, "windowLength", 0)
		spec.EmitWhen = emitWhen
		spec.TimeZone, _ = p.Params["timeZone"].(string)
	case "aggregate-hopping":
		spec.Kind = aggregate.Hopping
		spec.Length = durationMS(p, "windowLength", 0)
		spec.Slide = durationMS(p, "slide", 0)
	case "aggregate-session":
		spec.Kind = aggregate.Session
		spec.SessionTimeout = durationMS(p, "sessionTimeout", 0)
		spec.EmitWhen = emitWhen
		n.endCond = e.lay.newEvaluator(p.Programs["endSessionCondition"])
	case "aggregate-count":
		spec.Kind = aggregate.CountWindow
		spec.Count, _ = p.Params["windowLength"].(int64)
		spec.CountSlide, _ = p.Params["slide"].(int64)
	default:
		return fmt.Errorf("unknown aggregate %q", sn.NodeType)
	}
	for i := 0; ; i++ {
		prog, ok := p.Programs[fmt.Sprintf("groupBy[%d]", i)]
		if !ok {
			break
		}
		n.groupBy = append(n.groupBy, e.lay.newEvaluator(prog))
	}
	var named []aggregate.Named
	for i, a := range p.Aggregations {
		agg, err := aggregate.New(aggregate.Spec{Func: a.Aggregator, Quantile: a.Quantile, Precision: int(a.Precision)})
		if err != nil {
			return err
		}
		named = append(named, aggregate.Named{Name: a.Name, Aggregator: agg})
		n.aggNames = append(n.aggNames, a.Name)
		n.aggBy = append(n.aggBy, e.lay.newEvaluator(p.Programs[fmt.Sprintf("aggregations[%d].aggregateBy", i)]))
	}
	n.varName = sn.OutputVar
	op, err := aggregate.NewOperator(spec, named, n.emit)
	if err != nil {
		return err
	}
	n.op = op
	n.keyBuf = make([]value.Value, len(n.groupBy))
	n.inBuf = make([]value.Value, len(named)) // null where aggBy is nil (Count)
	n.ev = aggregate.Event{Key: n.keyBuf, Inputs: n.inBuf}
	return nil
}

// process runs the node on one context.
func (n *node) process(e *Engine, c *ctx, from string) {
	switch n.kind {
	case kindFilter:
		v, err := n.prog.eval(c)
		if err != nil {
			e.fail(n, "expression", err)
			return
		}
		if v.Bool() {
			n.counts.Out++
			e.forward(n, c, scenario.EdgeFilterTrue)
		} else if n.hasEdge(scenario.EdgeFilterFalse) {
			n.counts.Out++
			e.forward(n, c, scenario.EdgeFilterFalse)
		}
	case kindVariable:
		v, err := n.prog.eval(c)
		if err != nil {
			e.fail(n, "value", err)
			return
		}
		n.counts.Out++
		e.forward(n, n.with(c, v), "")
	case kindRecord:
		vals := make([]value.Value, len(n.fieldProgs))
		for i, p := range n.fieldProgs {
			v, err := p.eval(c)
			if err != nil {
				e.fail(n, fmt.Sprintf("fields[%d].expression", i), err)
				return
			}
			vals[i] = v
		}
		n.counts.Out++
		e.forward(n, n.with(c, value.NewRecord(n.fieldNames, vals)), "")
	case kindSwitch:
		for _, out := range n.out {
			if out.typ != scenario.EdgeNextSwitch || out.cond == nil {
				continue
			}
			v, err := out.cond.eval(c)
			if err != nil {
				e.fail(n, "condition", err)
				return
			}
			if v.Bool() {
				n.counts.Out++
				e.push(out.to, c, n.id)
				return
			}
		}
		for _, out := range n.out {
			if out.typ == scenario.EdgeSwitchDefault {
				n.counts.Out++
				e.push(out.to, c, n.id)
				return
			}
		}
	case kindSplit:
		n.counts.Out++
		e.forward(n, c, "")
	case kindUnion:
		if prog := n.branchProgs[from]; prog != nil && n.varName != "" {
			v, err := prog.eval(c)
			if err != nil {
				e.fail(n, "branchParameters", err)
				return
			}
			c = n.with(c, v)
		}
		n.counts.Out++
		e.forward(n, c, "")
	case kindForEach:
		v, err := n.prog.eval(c)
		if err != nil {
			e.fail(n, "Elements", err)
			return
		}
		for _, item := range v.List() {
			n.counts.Out++
			e.forward(n, n.with(c, item), "")
		}
	case kindAggregate:
		n.add(e, c)
	case kindSink:
		v, err := n.prog.evalTransient(c) // Output does not keep it
		if err != nil {
			e.fail(n, "value", err)
			return
		}
		if n.kafka != nil {
			var ok bool
			if v, ok = n.kafka.record(e, n, c, v); !ok {
				return
			}
		}
		n.counts.Out++
		if e.opts.Output != nil {
			e.opts.Output(n.id, v, c.time)
		}
	case kindDeadEnd:
	}
}

func (n *node) hasEdge(typ string) bool {
	for _, out := range n.out {
		if out.typ == typ {
			return true
		}
	}
	return false
}

// with returns c with the node's variable set to v, in the node's scratch
// context.
func (n *node) with(c *ctx, v value.Value) *ctx {
	out := &n.scratch
	out.copyFrom(c)
	out.set(n.varSlot, v)
	return out
}

// add evaluates the aggregate's expressions for c and adds the event.
func (n *node) add(e *Engine, c *ctx) {
	for i, p := range n.groupBy {
		v, err := p.eval(c)
		if err != nil {
			e.fail(n, fmt.Sprintf("groupBy[%d]", i), err)
			return
		}
		n.keyBuf[i] = v
	}
	for i, p := range n.aggBy {
		if p == nil {
			continue
		}
		v, err := p.eval(c)
		if err != nil {
			e.fail(n, fmt.Sprintf("aggregations[%d].aggregateBy", i), err)
			return
		}
		n.inBuf[i] = v
	}
	ev := &n.ev // its Key and Inputs are keyBuf and inBuf
	ev.Time, ev.Payload = c.time, c
	if n.endCond != nil {
		v, err := n.endCond.eval(c)
		if err != nil {
			e.fail(n, "endSessionCondition", err)
			return
		}
		ev.EndSession = v.Bool()
	}
	err := n.op.Add(ev)
	switch {
	case err == nil:
	case errors.Is(err, aggregate.ErrLate):
		n.counts.Late++
		var le *aggregate.LateError
		if errors.As(err, &le) && (n.lateOut || e.observeLate != nil) {
			n.late(e, c, le)
		}
	default:
		e.fail(n, "aggregations", err)
	}
}

// late sends a late event down the node's Late edge (and to ObserveLate): its context,
// unchanged, with #late, the first window it missed (docs/semantics.md §2).
func (n *node) late(e *Engine, c *ctx, le *aggregate.LateError) {
	rec, vals := value.MakeRecord(lateFields)
	vals[0], vals[1], vals[2] = value.Int(le.WindowStart), value.Int(le.WindowEnd), value.Int(le.Watermark)
	out := &n.lateCtx
	out.copyFrom(c)
	out.set(e.lateSlot, rec)
	if e.observeLate != nil {
		e.observeLate(n.id, out.varsMap(), out.time, *le)
	}
	if n.lateOut {
		e.forward(n, out, scenario.EdgeLate)
	}
}

var lateFields = []string{"windowStart", "windowEnd", "watermark"}

var windowFields = []string{"start", "end"}

// emit sends an aggregate result on, as a context whose result variables
// (the output variable, #key, and #window for new events) are lazy: read
// from r where they are (see lazyField), made whole only when needed.
func (n *node) emit(r *aggregate.Result) {
	e := n.engine
	if r.Err != nil {
		// Reported with the line being processed, whose watermark closed the window (line 0
		// at the end of input): the message names the window and key.
		e.fail(n, "aggregations", fmt.Errorf("window [%d, %d) of key %s: %w",
			r.Start, r.End, value.AppendJSON(nil, value.List(r.Key)), r.Err))
	}
	n.cur = r
	c := &n.scratch
	if r.Event != nil {
		c.copyFrom(r.Event.Payload.(*ctx))
		n.scratchFresh = false
	} else {
		// A new event has the result variables (set below) and #meta.
		if !n.scratchFresh {
			c.reset()
			n.scratchFresh = true
		}
		c.time = r.Time
		c.setLazy(e.windowSlot, n)
		if e.needsMeta {
			c.set(e.metaSlot, e.meta(r.Time))
		}
	}
	if n.varSlot >= 0 {
		c.setLazy(n.varSlot, n)
	}
	c.setLazy(e.keySlot, n)
	n.counts.Out++
	e.forward(n, c, "")
	n.cur = nil
}

// materialize makes the whole value of a lazy variable of a source (#input
// from its decoded fields) or of an aggregate (from the result it is
// emitting).
func (n *node) materialize(slot int) value.Value {
	e := n.engine
	switch {
	case n.kind == kindSource:
		var keys []string
		var vals []value.Value
		for k, name := range n.wantFields.Names() {
			if n.present&(1<<k) != 0 {
				keys = append(keys, name)
				vals = append(vals, n.fields[k])
			}
		}
		return value.NewRecord(keys, vals)
	case n.cur == nil:
		return value.Null()
	case slot == n.varSlot:
		rec, vals := value.MakeRecord(n.aggNames)
		copy(vals, n.cur.Values)
		return rec
	case slot == e.keySlot:
		return value.List(n.cur.Key)
	case slot == e.windowSlot:
		rec, vals := value.MakeRecord(windowFields)
		vals[0], vals[1] = value.Int(n.cur.Start), value.Int(n.cur.End)
		return rec
	}
	return value.Null()
}

// lazyField returns the field or element step of a lazy variable without
// making the variable whole, and false when it cannot (the caller then
// walks the whole value).
func (n *node) lazyField(slot int, step pathStep) (value.Value, bool) {
	e := n.engine
	switch {
	case n.kind == kindSource:
		if step.index >= 0 || n.fields == nil {
			break
		}
		k := step.field
		if k < 0 {
			k = n.wantFields.Index(step.name)
		}
		if k >= 0 {
			return n.fields[k], true
		}
	case n.cur == nil:
	case slot == n.varSlot:
		if step.index < 0 {
			if i := n.aggIndex(step.name); i >= 0 {
				return n.cur.Values[i], true
			}
			return value.Null(), true
		}
	case slot == e.keySlot:
		if step.index >= 0 && step.index < len(n.cur.Key) {
			return n.cur.Key[step.index], true
		}
	case slot == e.windowSlot:
		switch {
		case step.index >= 0:
		case step.name == "start":
			return value.Int(n.cur.Start), true
		case step.name == "end":
			return value.Int(n.cur.End), true
		default:
			return value.Null(), true
		}
	}
	return value.Null(), false
}

// aggIndex returns the position of aggregation name, or -1.
func (n *node) aggIndex(name string) int {
	for i, a := range n.aggNames {
		if a == name {
			return i
		}
	}
	return -1
}

// decode decodes a record as the source's next input: only the fields the
// scenario reads when that is known (into fields, or a record of them), and
// otherwise the whole record.
func (n *node) decode(b []byte) error {
	var err error
	switch {
	case n.fields != nil:
		n.present, err = n.decoder.ParseFieldsInto(b, n.wantFields, n.fields)
		n.input, n.lazyInput = value.Null(), true
	case n.wantFields != nil:
		n.input, err = n.decoder.ParseFields(b, n.wantFields)
		n.lazyInput = false
	default:
		// Not only JSON, an object: a bad line reads the same however the
		// source decodes.
		n.input, err = n.decoder.ParseObject(b)
		n.lazyInput = false
	}
	return err
}

// eventTime evaluates the source's timestamp expression on c, which holds
// #input alone.
func (n *node) eventTime(e *Engine, c *ctx) (int64, error) {
	if n.timestamp == nil {
		if e.opts.Bounded {
			// Never the wall clock in a replay or a test (docs/semantics.md §1):
			// without a timestamp given with the record, time 0.
			return 0, nil
		}
		return e.opts.now().UnixMilli(), nil
	}
	tv, err := n.timestamp.eval(c)
	if err != nil {
		return 0, err
	}
	return expression.EventTime(tv)
}
