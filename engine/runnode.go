package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	stdslices "slices"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// NodeRun is what RunNode saw one node do with one event.
type NodeRun struct {
	// Expressions holds the value of each of the node's expressions on the variables given
	// (all of them, also those the node would not reach; for a Join run from one branch, the
	// other branches' are left out), by field.
	Expressions map[string]ExpressionValue
	// Outputs are the events leaving the node, in order: empty when it goes no further.
	Outputs []NodeOutput
	// Error is why the event went no further: "field: message" of the first per-event error
	// (as a test run reports it, with the field of the very expression that failed); "" when
	// nothing failed.
	Error string
}

// ExpressionValue is an expression's value, or its error's message.
type ExpressionValue struct {
	Value value.Value
	Err   string
}

// NodeOutput is one event leaving a node in RunNode.
type NodeOutput struct {
	EdgeType  string // the edge's type ("" for untyped edges)
	Condition string // a Switch's NextSwitch edge: the field of the condition that held
	To        string // the node the edge leads to; "" when no edge of EdgeType is connected
	From      string // a Join: the branch whose expression made the output variable
	// Variables are the variables the node defines, with their values (Variable,
	// VariableBuilder, for-each, Join with outputVar, what a registered kind sends); nil when
	// none.
	Variables map[string]value.Value
	// EventTime is a source's event time from its timestamp expression (nil: none).
	EventTime *int64
	// Written is a sink's value (Sink is true).
	Sink    bool
	Written value.Value
	// Key and Inputs are an aggregate's #key and aggregateBy values by aggregation name (null
	// for Count); Aggregate is true for them. The window itself is not run.
	Aggregate bool
	Key       []value.Value
	Inputs    []NamedValue
}

// NamedValue is an aggregation's input.
type NamedValue struct {
	Name  string
	Value value.Value
}

// RunNode runs node id of s, as a test run would run it, on one event whose variables are
// vars (a variable the node reads and that is absent is null), and tells what leaves the
// node: the edges taken, the variable it defines, a sink's value, an aggregate's key and
// inputs (its windows keep nothing: no state is kept between calls). For a Join, branch is
// the upstream node the event comes from; "" runs every branch's output expression in turn.
// v is s's validation by the registry of the node's kind; the node's plan must be in it
// (the node has no errors of its own and its scope is known), else RunNode returns an error.
// ctx bounds the run (a for-each over a long list).
func RunNode(ctx context.Context, s *scenario.Scenario, v *nodes.Validation, id string, vars map[string]value.Value, branch string) (NodeRun, error) {
	plan := v.Plans[id]
	if plan == nil {
		return NodeRun{}, fmt.Errorf("engine: node %q has no plan", id)
	}
	e := newEngine(Options{Bounded: true, MaxErrors: 1}, v)
	if ctx.Done() != nil {
		e.ctx = ctx
	}
	for name := range vars {
		e.lay.slot(name)
	}
	e.planSlots(plan)
	n, err := e.build(plan)
	if err != nil {
		return NodeRun{}, fmt.Errorf("building node %q: %w", id, err)
	}
	// Its edges lead to nodes that take nothing: the probe records what would go there.
	for i, ed := range s.Edges {
		if ed.From != id {
			continue
		}
		out := edge{to: &node{id: ed.To, op: deadEnd{}, varSlot: -1, engine: e}, from: id, index: i}
		if ed.EdgeType != nil {
			out.typ = ed.EdgeType.Type
		}
		n.addEdge(out)
	}
	if w, ok := n.op.(wired); ok {
		w.wire(e, n)
	}
	n.scratch = e.lay.newEvent()
	in := e.lay.newEvent()
	for name, x := range vars {
		in.set(e.lay.slotOf[name], x)
	}
	run := NodeRun{Expressions: map[string]ExpressionValue{}, Outputs: []NodeOutput{}}
	pr := &probe{run: &run}
	e.probe = pr
	e.opts.Output = func(_ string, x value.Value, _ int64) {
		// x lives only during the call (see Output): kept as a copy. (Through JSON it was
		// null past value.MaxValues, without a word.)
		run.Outputs = append(run.Outputs, NodeOutput{Sink: true, Written: value.Clone(x)})
	}
	e.onError = func(x EventError) {
		if run.Error == "" {
			field := x.Field
			if x.exprField != "" {
				field = x.exprField
			}
			run.Error = x.Message
			if field != "" {
				run.Error = field + ": " + x.Message
			}
		}
	}
	// Every expression, as the node's own expressions read the event, in field order; their
	// values together hold at most what an event's variables may (Options.MaxEventBytes):
	// a hundred fields of 16 MiB each held 1.6 GB.
	branches := plan.Node.BranchParameters
	bound := e.lay.maxEventBytes
	held := 0
	for _, field := range stdslices.Sorted(maps.Keys(plan.Programs)) {
		if err := ctx.Err(); err != nil {
			return run, err // between expressions: a thousand slow ones are one node
		}
		prog := plan.Programs[field]
		var k int
		if _, err := fmt.Sscanf(field, "branchParameters[%d]", &k); err == nil && k < len(branches) && branch != "" && branches[k].BranchID != branch {
			continue
		}
		var x value.Value
		var err error
		switch {
		case bound <= 0:
			x, err = expression.Run(prog, vars)
		case held >= bound:
			err = fmt.Errorf("%w: not evaluated: the node's expressions made %d bytes of values, all of the %d an event's may", expression.ErrBudgetExceeded, held, bound)
		default:
			var size int
			x, size, err = expression.RunVarsWithin(prog, expression.Map(vars), bound-held)
			held += size
		}
		if err != nil {
			run.Expressions[field] = ExpressionValue{Err: names.Cut(err.Error(), MaxErrorMessage)}
		} else {
			run.Expressions[field] = ExpressionValue{Value: x}
		}
	}
	union, _ := plan.Typed.(*UnionPlan)
	switch {
	case n.src != nil:
		src := n.src
		src.ev = in
		src.input = vars[nodes.VarInput]
		_ = e.pushValue(src, math.MinInt64)
	case union != nil && branch == "":
		// A Join from every branch in turn: each branch's expression makes an output.
		for _, b := range union.Branches {
			pr.from = b.From
			n.op.process(e, n, &in, b.From)
		}
		if len(union.Branches) == 0 {
			n.op.process(e, n, &in, "")
		}
	default:
		pr.from = branch
		n.op.process(e, n, &in, branch)
	}
	if e.stopped {
		return NodeRun{}, ctx.Err()
	}
	return run, nil
}

// probe captures what RunNode's node sends, in place of its edges.
type probe struct {
	run  *NodeRun
	from string // the branch being run (a Join)
	// set is what a registered kind's operator is sending (nodes.Sender's set).
	set map[string]value.Value
}

// output is one event leaving n along edge type typ to node to.
func (p *probe) output(n *node, c *event, typ, to string) NodeOutput {
	o := NodeOutput{EdgeType: typ, To: to, From: p.from}
	if n.varSlot >= 0 {
		x, _ := c.get(n.varSlot)
		o.Variables = map[string]value.Value{n.varName: x}
	}
	if p.set != nil {
		o.Variables = p.set
	}
	if n.src != nil && n.src.timestamp != nil {
		t := c.time
		o.EventTime = &t
	}
	return o
}

// forwarded records Engine.forward: the edges of onlyType it would take, or, when none is
// connected, the edge type alone.
func (p *probe) forwarded(n *node, c *event, onlyType string) {
	sent := false
	for _, out := range n.out {
		if onlyType != out.typ && (onlyType != "" || out.typ == scenario.EdgeLate) {
			continue
		}
		p.run.Outputs = append(p.run.Outputs, p.output(n, c, out.typ, out.to.id))
		sent = true
	}
	if !sent {
		p.run.Outputs = append(p.run.Outputs, p.output(n, c, onlyType, ""))
	}
}

// sent records Engine.send: a Switch's choice.
func (p *probe) sent(n *node, out *edge, c *event) {
	o := p.output(n, c, out.typ, out.to.id)
	if out.typ == scenario.EdgeNextSwitch {
		o.Condition = out.condField
	}
	p.run.Outputs = append(p.run.Outputs, o)
}

// aggregated records the key and inputs an aggregate would add to its windows; the event
// goes on (in a test run, as a result) to the node's first edge.
func (p *probe) aggregated(a *aggregator) {
	o := NodeOutput{Aggregate: true, Key: make([]value.Value, len(a.keyBuf))}
	for i, k := range a.keyBuf {
		o.Key[i] = k
	}
	for i, name := range a.aggNames {
		x := value.Null()
		if a.aggBy[i] != nil {
			x = a.inBuf[i]
		}
		o.Inputs = append(o.Inputs, NamedValue{Name: name, Value: x})
	}
	if len(a.out) > 0 {
		o.To = a.out[0].to.id
	}
	p.run.Outputs = append(p.run.Outputs, o)
}
