package engine

import (
	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/value"
)

// What test runs ("test with sample records") need beyond Options.Observe:
// the input line being processed, and the contexts that sources and
// aggregates emit (a source's decoded and timed records, an aggregate's
// window results), which enter no node when nothing is connected below.

// Line returns the input line (1-based) of the event being processed: the
// line given to PushJSON or PushValue, or read by Replay. While Flush runs it
// is 0, so contexts made at the end of input (window results) have line 0.
// An Observe or Output callback calls it to tell which line a context came
// from; for a window result it is the line whose watermark step closed the
// window.
func (e *Engine) Line() int64 { return e.line }

// EmitObserver is called with the id of a source or an aggregate and a
// context it emits: the variables (which it must not keep) and event time.
type EmitObserver func(nodeID string, vars map[string]value.Value, eventTime int64)

// emitProbePrefix starts the ids of the probes ObserveEmitted attaches; a
// scenario's node ids have no NUL.
const emitProbePrefix = "\x00emitted:"

// ObserveEmitted calls f for every context that a source or an aggregate
// sends on: each record a source decoded and timed (#input, and #meta when
// read), and each result an aggregate emits (enriched events, or new events
// with the output variable, #key and #window), after the nodes below have
// had it. Call it once, before the first event.
//
// It attaches to each such node one more outgoing edge, to a probe that does
// nothing and whose arrivals Observe reports under the probe's id; the
// probes are not in Counts, and they change no count (a node counts what it
// emits once, whatever its edges).
func (e *Engine) ObserveEmitted(f EmitObserver) {
	probes := map[string]string{} // probe id -> the node it observes
	for _, n := range e.order {
		if n.src == nil && n.agg == nil {
			continue
		}
		id := emitProbePrefix + n.id
		probes[id] = n.id
		n.addEdge(edge{to: &node{id: id, op: deadEnd{}, varSlot: -1, engine: e}, from: n.id})
		if n.agg != nil {
			n.agg.direct = nil // its results go to the probe too
		}
		if n.src != nil {
			n.src.feeds = nil // its records go to the probe too
		}
	}
	// Observers see each record whole, as the source read it.
	for _, src := range e.sources {
		src.wantFields, src.fields = nil, nil
	}
	inner := e.opts.Observe
	e.opts.Observe = func(nodeID string, vars map[string]value.Value, eventTime int64) {
		if of, ok := probes[nodeID]; ok {
			f(of, vars, eventTime)
			return
		}
		if inner != nil {
			inner(nodeID, vars, eventTime)
		}
	}
}

// LateObserver is called with the id of a time-window aggregate and an event that came too
// late for every window it belongs to: the event's variables with #late (which it must not
// keep), its event time, and the first window it missed.
type LateObserver func(nodeID string, vars map[string]value.Value, eventTime int64, late aggregate.LateError)

// ObserveLate calls f for every late event of every aggregate, whether or not the aggregate
// has a Late edge (before the event goes down that edge). Call it before the first event.
func (e *Engine) ObserveLate(f LateObserver) { e.observeLate = f }
