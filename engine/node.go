package engine

import (
	"fmt"

	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// operator is the running form of a node kind: what a node does with each event that enters
// it. process is called on the engine's goroutine, once per event reaching the node along
// one of its incoming edges (from is the upstream node's id), and returns once the event and
// everything it caused downstream has gone through: ev is dead after that (see event). It
// reports per-event problems with Engine.fail and passes events on with Engine.forward or
// Engine.send; it never returns an error, since one event's problem must not stop the run.
//
// An operator may also implement stateful (its state goes into engine snapshots) and wired
// (it reads its outgoing edges once they exist).
type operator interface {
	process(e *Engine, n *node, ev *event, from string)
}

// eventHolder is an operator that keeps values of the last event in buffers it reuses
// beyond what the engine clears itself (see Engine.releaseEvent): releaseEvent drops them.
type eventHolder interface {
	releaseEvent()
}

// stateful is an operator with state that must survive a restart (docs/semantics.md §6):
// appendState appends it to a snapshot, restoreState reads it back from a snapshot written
// by the same scenario. restoreState reports bytes that do not decode through r's error, and
// a state that decodes but cannot be taken with an error wrapping slices.ErrCorruptSnapshot.
type stateful interface {
	appendState(b []byte) []byte
	restoreState(e *Engine, r *slices.Reader) error
	// skipState reads past the state appendState wrote (NodeStates).
	skipState(r *slices.Reader)
}

// wired is an operator that needs its node's outgoing edges (a Switch's conditions); wire is
// called once, after every edge of the scenario is attached and before the first event.
type wired interface {
	wire(e *Engine, n *node)
}

// builder makes the operator of node n from its plan (n.plan); n's id, subtype, plan and
// engine are set; n.plan.Typed is the kind's typed plan. A builder may set n.varName (the
// variable the node defines) and, for sources and aggregates, n.src or n.agg. An error stops
// New: the scenario validated, so it is a programming error or a resource the node cannot
// have. A built-in kind (kind_*.go) gives its builder as its nodes.Kind's Runtime; a kind
// registered from outside the server (nodes.Kind.NewOperator) runs through externalOperator.
type builder func(e *Engine, n *node) (operator, error)

type edge struct {
	to   *node
	from string
	typ  string // FilterTrue, FilterFalse, NextSwitch, SwitchDefault, Late or ""
	// index is the edge's index in the scenario's edges.
	index int
	cond  *evaluator
	// condField is a NextSwitch edge's condition field ("edges[3].edgeType.condition").
	condField string
}

// node is one node of the running scenario: what every kind has (its edges, counters, the
// variable it defines), and its operator.
type node struct {
	id      string
	subtype string
	plan    *nodes.Plan
	out     []edge
	// main are the nodes of out's edges that forward(n, c, "") sends to: all but Late
	// edges, in edge order (forward's common case without comparing edge types).
	main   []*node
	counts Counts
	op     operator

	upstream []*source // sources whose watermark this node uses

	// src and agg are set for sources and aggregates, whose state the engine reads (their
	// watermarks, window steps, lazy variables).
	src *source
	agg *aggregator

	varName string // the variable the node defines ("" none)
	varSlot int    // varName's slot, -1 for none
	engine  *Engine
	// scratch is the event this node sends on, reused for every output: an event is dead
	// once the push that carries it returns (the graph has no cycles, and nothing
	// downstream keeps an event).
	scratch event
}

func (e *Engine) build(p *nodes.Plan) (*node, error) {
	sn := p.Node
	n := &node{id: sn.ID, plan: p, subtype: sn.Subtype(), engine: e, varSlot: -1}
	var err error
	switch b, builtIn := p.Kind.Runtime.(builder); {
	case p.Kind.NewOperator != nil:
		n.op, err = newExternal(e, n)
	case builtIn:
		n.op, err = b(e, n)
	default:
		return nil, fmt.Errorf("node kind %q has no operator", p.Kind.ID)
	}
	if err != nil {
		return nil, err
	}
	if n.varName != "" {
		n.varSlot = e.lay.slot(n.varName)
	}
	return n, nil
}

// evaluator returns the evaluator of one of the node's expressions, nil when it has none.
func (n *node) evaluator(x nodes.Expr) *evaluator {
	return n.engine.lay.newEvaluator(x.Program)
}

func (n *node) hasEdge(typ string) bool {
	for _, out := range n.out {
		if out.typ == typ {
			return true
		}
	}
	return false
}

// with returns ev with the node's variable set to v, in the node's scratch event.
func (n *node) with(ev *event, v value.Value) *event {
	out := &n.scratch
	out.copyFrom(ev)
	out.set(n.varSlot, v)
	return out
}

// withMade is with, the event holding made bytes more (event.held): v's, made by the node's
// expression.
func (n *node) withMade(ev *event, v value.Value, made int) *event {
	out := n.with(ev, v)
	out.held += made
	return out
}

// materialize makes the whole value of a lazy variable of a source (#input from its decoded
// fields) or of an aggregate (from the result it is emitting).
func (n *node) materialize(slot int) value.Value {
	if n.src != nil {
		return n.src.materialize()
	}
	return n.agg.materialize(slot)
}

// lazyField returns the field or element step of a lazy variable without making the
// variable whole, and false when it cannot (the caller then walks the whole value).
func (n *node) lazyField(slot int, step pathStep) (value.Value, bool) {
	if n.src != nil {
		return n.src.lazyField(step)
	}
	return n.agg.lazyField(slot, step)
}

// addEdge attaches an outgoing edge to n.
func (n *node) addEdge(out edge) {
	n.out = append(n.out, out)
	if out.typ != scenario.EdgeLate {
		n.main = append(n.main, out.to)
	}
}
