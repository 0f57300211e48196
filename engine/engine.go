// Package engine runs a scenario: it builds an operator per node from a
// validated scenario (nodes.Validation's plans) and pushes events through
// the graph, one at a time, in arrival order.
//
// Time follows docs/semantics.md §1. Each source keeps a watermark, the largest event
// time it has seen less its maxOutOfOrderness, which never decreases. A node
// uses the minimum watermark of the sources that reach it, ignoring sources
// that have produced nothing yet. After every event the engine takes a
// watermark step: it advances every aggregate in topological order, so what
// an aggregate emits reaches the nodes below it (and their aggregates' Add)
// before their own windows are evaluated for the same step. The end of a
// bounded input (Flush) sets every watermark to +infinity.
//
// A per-event error (a line that is not JSON, a timestamp that is missing or
// of the wrong type, an expression that fails, an aggregate input of the
// wrong type) is recorded with its node, field and input line, counted on
// the node, and the event goes no further; the run goes on.
//
// Variables live in slots of an event (type event), one slot per variable name of
// the scenario. When no expression reads #input whole, a source decodes only
// the top-level fields the expressions read (value.Decoder.ParseFieldsInto)
// and #input.field reads them in place; an aggregate's output variable, #key
// and #window are read in place from its result. Such lazy variables become
// whole values only when something needs them whole. Expressions that are a
// path, a record literal of paths or a path compared with a literal are
// answered without running expr (eval.go).
package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	stdslices "slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scenario-server/scenario-server/aggregate"
	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// MaxErrorMessage bounds a per-event error's message, in bytes (names.Cut): the errors are
// kept (Errors, test runs, dead letters), and a message quoting a value whole was as large as
// the value.
const MaxErrorMessage = 4 << 10

// ErrInvalidScenario is returned by New when the scenario does not
// validate; the *InvalidError carries the problems.
var ErrInvalidScenario = errors.New("engine: invalid scenario")

// InvalidError is New's error for a scenario with validation errors.
type InvalidError struct{ Validation *nodes.Validation }

func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid scenario: %d problem(s)", len(e.Validation.Errors))
	for i, p := range e.Validation.Errors {
		if i == 5 {
			fmt.Fprintf(&b, "; ...")
			break
		}
		fmt.Fprintf(&b, "; node %q field %q: %s", p.NodeID, p.Field, p.Message)
	}
	return b.String()
}

func (e *InvalidError) Unwrap() error { return ErrInvalidScenario }

// Counts are a node's counters: contexts that entered it, that left it,
// that failed in it, and (aggregates) late events: Late counts the events too
// late for every window they belong to (dropped, or sent down the node's Late
// edge), PartlyLate the events dropped from some closed windows but counted in
// the open ones (docs/semantics.md §2). Out counts results, not late events.
type Counts struct {
	In         int64 `json:"in"`
	Out        int64 `json:"out"`
	Errors     int64 `json:"errors"`
	Late       int64 `json:"late"`
	PartlyLate int64 `json:"partlyLate"`
}

// EventError is one per-event error.
type EventError struct {
	NodeID string `json:"nodeId"` // "" for a line that belongs to no node (an unknown source)
	Field  string `json:"field,omitempty"`
	Line   int64  `json:"line"` // input line (1-based) of the event that failed, 0 when not known
	// Partition is the input partition of the event (a Kafka partition; its Line is then its
	// offset + 1 in that partition), nil for input that has no partitions. See
	// Engine.SetInputPartition.
	Partition *int32 `json:"partition,omitempty"`
	Message   string `json:"message"`
	// exprField is the field of the very expression that failed where Field is coarser (a
	// Switch's "condition", a Join's "branchParameters"), for RunNode.
	exprField string
}

func (e EventError) String() string {
	at := "node " + e.NodeID
	if e.NodeID == "" {
		at = "input"
	}
	if e.Field != "" {
		at += " field " + e.Field
	}
	if e.Partition != nil {
		return fmt.Sprintf("partition %d, line %d: %s: %s", *e.Partition, e.Line, at, e.Message)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, at, e.Message)
}

// Output receives what a sink writes: the sink's node id, the value, and the
// event time of the context that reached the sink. The value is valid only
// during the call (the engine may reuse its memory for the next one): encode
// it, as the sinks do, or copy it to keep it.
type Output func(sinkID string, v value.Value, eventTime int64)

// DefaultMaxEventBytes is Options.MaxEventBytes's default: four expressions' worth of
// memory (expression.DefaultMemory).
const DefaultMaxEventBytes = 4 * expression.DefaultMemory

// Options configure an Engine.
type Options struct {
	// ScenarioName is #meta.scenarioName.
	ScenarioName string
	// Output receives sink values. Nil discards them.
	Output Output
	// MaxErrors caps the EventErrors kept (all are counted); 0 means 10,000.
	MaxErrors int
	// MaxStateBytes, when positive, is the most window state (StateBytes) the engine may
	// hold. It is looked at (stateWatcher) when the caller calls CheckState after an input
	// event, as Replay does after each line, and as a for-each sends its events (one input
	// event may fan out into many); past it StateErr returns a *StateBudgetError, a for-each
	// sends no more, and the engine takes no more input events.
	MaxStateBytes int64
	// SharedState, when set, is a budget of window state this engine shares with others (a
	// server's deployments): each look at the state (as for MaxStateBytes, which may be 0
	// here) records it there, and the look that finds the engines' total past the shared
	// budget while this engine's state grew fails this engine as MaxStateBytes would.
	SharedState *SharedStateBudget
	// Observe, when set, is called for every context that enters a node,
	// with the node's id and the context's variables (for test runs that
	// show each record's variables per node). It must not keep vars.
	Observe func(nodeID string, vars map[string]value.Value, eventTime int64)
	// Now is the wall clock, read for live sources' idleness and for the
	// arrival time of events of sources without a timestamp expression; nil
	// means time.Now.
	Now func() time.Time
	// Registry holds the node kinds the scenario is validated and built with; nil means
	// Default(), the built-in kinds.
	Registry *nodes.Registry
	// EncodeKafkaValue, when set, encodes the value of a Kafka sink with a valueSubject
	// against that subject's schema (a deployment with a schema registry): the sink hands
	// Output the encoded bytes as its value, a string, and a value that does not fit is a
	// per-event error at the sink's value. Nil: such values are handed on as they are.
	EncodeKafkaValue func(subject string, v value.Value) ([]byte, error)
	// MaxEventBytes bounds what the variables one event's nodes define may hold in all
	// (Variable, VariableBuilder fields, for-each elements, union outputs: the values their
	// expressions made, as expression.Budget's memory counts them), along one path through
	// the graph: an expression runs with the memory the event has left, when that is less
	// than its own budget, and past it is a per-event error wrapping
	// expression.ErrBudgetExceeded at its node and field. Each expression alone is bounded
	// (16 MiB), but a hundred Variable nodes of 16 MiB strings held 1.77 GB for one event.
	// 0 means DefaultMaxEventBytes, negative none.
	MaxEventBytes int
	// MaxKafkaRecordBytes, when positive, is the most bytes a Kafka sink's record may hold:
	// its key, value (JSON, or the encoded bytes) and header names and values, and 10 bytes a
	// header (KafkaRecordBytes). A record past it is a per-event error at the sink's value:
	// the producer refuses such a record (MESSAGE_TOO_LARGE), and its checkpoint with it.
	MaxKafkaRecordBytes int
	// KafkaRecordLimit, when set, gives a Kafka sink node's own bound on its records (its
	// topic's max.message.bytes, less what a batch adds), when it is less than
	// MaxKafkaRecordBytes: 0 or more only. It is asked for each record.
	KafkaRecordLimit func(sinkNode string) int
	// Bounded marks a replay or a test run: the wall clock is never read
	// (docs/semantics.md §1), and sources have no maxFutureSkew. A record of a source without a timestamp expression
	// takes the timestamp given with it (PushValue's eventTime, or
	// "timestamp" in a {"sourceId", "record", "timestamp"} line), and
	// otherwise event time 0 (1970-01-01T00:00:00Z), so that the run's
	// output never depends on when it ran.
	Bounded bool
	// PauseStep, when set, may split a watermark step that closes many windows: between two
	// windows' closes of one step (NextClose in aggregate.Operator: a slide of a hopping
	// window), and between two results of one close (AdvancePart: one close may emit for
	// every key), the engine asks it, and when it says true the step stops there, with the
	// aggregates' watermarks behind their sources' (StepOpen). The caller
	// may then take a checkpoint (the snapshot holds each aggregate's own watermark) and calls
	// ContinueStep before pushing the next event. A deployment pauses when the results waiting
	// for a checkpoint reach their bound, or the step has run long: a jump of the watermark
	// over 40 minutes of a window sliding every second, for 3,000 keys, closed 4.32 M windows
	// in one step, more results than one checkpoint may carry, and the deployment failed at
	// each redeploy (a hostile round). Nil: steps are whole.
	PauseStep func() bool
	// Stored marks a scenario that was deployed before (a deployment resumed from the store):
	// validation errors of authoring rules (scenario.Problem.Authoring), which may be newer
	// than the version, do not stop it. They stop a new deploy, a test run and a replay.
	Stored bool
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Engine runs one scenario over one partition of events. Not safe for
// concurrent use.
type Engine struct {
	opts       Options
	validation *nodes.Validation
	nodes      map[string]*node
	order      []*node // topological
	sources    map[string]*source
	lastSource *source       // the source last pushed to (see source)
	aggregates []*aggregator // topological

	needsMeta bool // some expression reads #meta

	// The variables' slots in contexts.
	lay                                                layout
	inputSlot, metaSlot, keySlot, windowSlot, lateSlot int
	// observeLate, when set, sees every late event (ObserveLate).
	observeLate LateObserver
	// onError, when set, sees every per-event error (OnError).
	onError func(EventError)

	counts map[string]*Counts
	errs   []EventError
	nErrs  int64
	line   int64 // line of the event being processed
	// partition is the input partition of the events pushed (SetInputPartition); -1: none.
	partition int32
	flushed   bool
	finished  bool

	// ctx, while Run or Replay runs, stops the run once it ends: push checks it every
	// stopEvery nodes entered and then lets no event go further.
	ctx     context.Context
	pushes  int
	stopped bool
	// interrupt (Interruptible), once true, unwinds the call in progress at the next node
	// entered (a window's emissions included); interrupted: that happened.
	interrupt   *atomic.Bool
	interrupted bool
	// event (AbandonWhen), when negative, abandons the input event being processed at the
	// next node it enters, outside the watermark's steps (inStep); abandoned: that happened
	// to this input event (reset by newInputEvent).
	event      *atomic.Int64
	abandonWhy string
	inStep     bool
	abandoned  bool
	// stepOpen: a step paused (Options.PauseStep) or a restore left aggregates behind their
	// watermarks; ContinueStep, or the next push, finishes it. stepTo holds the watermark
	// each aggregate's open step goes to (nil after a restore: the sources' then).
	stepOpen bool
	stepTo   []int64
	// forEachSent counts the events the for-each nodes sent for the input event being
	// processed (see MaxForEachEvents); forEachOver: that input event passed the limit.
	forEachSent int
	forEachOver bool
	// stateWatch looks at the window state against Options.MaxStateBytes (CheckState, and
	// each event a for-each sends); stateErr is the *StateBudgetError once it passed it.
	stateWatch stateWatcher
	stateErr   error
	// probe, when set, captures what one node does instead of passing it on (RunNode).
	probe *probe
}

// blocking reports whether errors stop a build: any does, but for a stored scenario only one
// that is not of an authoring rule.
func blocking(errors []scenario.Problem, stored bool) bool {
	for _, p := range errors {
		if !stored || !p.Authoring {
			return true
		}
	}
	return false
}

// New validates s and builds its operators. A scenario with validation
// errors gives an *InvalidError (errors.Is ErrInvalidScenario), but for
// Options.Stored (see there).
func New(s *scenario.Scenario, opts Options) (*Engine, error) {
	reg := opts.Registry
	if reg == nil {
		reg = Default()
	}
	v := reg.Validate(s)
	if blocking(v.Errors, opts.Stored) {
		return nil, &InvalidError{Validation: v}
	}
	if opts.MaxErrors == 0 {
		opts.MaxErrors = 10_000
	}
	e := newEngine(opts, v)
	for _, id := range v.Order {
		e.planSlots(v.Plans[id])
	}
	// Every variable in scope somewhere (those registered kinds define, which no field of
	// their node names).
	for _, id := range v.Order {
		for name := range v.Variables[id] {
			e.lay.slot(name)
		}
	}
	for _, id := range v.Order {
		n, err := e.build(v.Plans[id])
		if err != nil {
			return nil, fmt.Errorf("building node %q: %w", id, err)
		}
		e.nodes[id] = n
		e.order = append(e.order, n)
		e.counts[id] = &n.counts
	}
	for i, ed := range s.Edges {
		from, to := e.nodes[ed.From], e.nodes[ed.To]
		if from == nil || to == nil {
			return nil, fmt.Errorf("edge %s -> %s: unknown node", ed.From, ed.To)
		}
		out := edge{to: to, from: from.id, index: i}
		if ed.EdgeType != nil {
			out.typ = ed.EdgeType.Type
		}
		if out.typ == scenario.EdgeLate && from.agg != nil {
			from.agg.lateOut = true
		}
		from.addEdge(out)
	}
	for _, n := range e.order {
		if w, ok := n.op.(wired); ok {
			w.wire(e, n)
		}
	}
	// Decode only the fields of #input that expressions read, when none
	// reads it whole and no observer wants to see every record whole.
	want := map[string]struct{}{}
	whole := opts.Observe != nil
	for _, p := range v.Plans {
		for _, prog := range p.Programs {
			for _, name := range prog.Variables() {
				if name == nodes.VarMeta {
					e.needsMeta = true
				}
			}
			fields, w := prog.FieldsRead(nodes.VarInput)
			whole = whole || w
			for _, f := range fields {
				want[f] = struct{}{}
			}
		}
	}
	if !whole {
		names := make([]string, 0, len(want))
		for f := range want {
			names = append(names, f)
		}
		sort.Strings(names)
		fs := value.NewFieldSet(names...)
		for _, src := range e.sources {
			src.wantFields = fs
			if fs.Len() <= value.MaxFieldsInto {
				src.fields = make([]value.Value, fs.Len())
			}
		}
		// Paths from #input find their field by its position.
		for _, p := range e.lay.paths {
			if p.slot == e.inputSlot && len(p.steps) > 0 && p.steps[0].index < 0 {
				p.steps[0].field = fs.Index(p.steps[0].name)
			}
		}
	}
	for _, n := range e.order {
		n.scratch = e.lay.newEvent()
		if n.agg != nil {
			n.agg.lateEv = e.lay.newEvent()
		}
		if n.src != nil {
			n.src.ev = e.lay.newEvent()
		}
	}
	// Which sources feed each node (for its watermark).
	for _, n := range e.order {
		if n.src != nil {
			n.upstream = []*source{n.src}
		}
		for _, out := range n.out {
			for _, src := range n.upstream {
				if !stdslices.Contains(out.to.upstream, src) {
					out.to.upstream = append(out.to.upstream, src)
				}
			}
		}
	}
	return e, nil
}

// newEngine is an engine without nodes, with the slots of the server's variables.
func newEngine(opts Options, v *nodes.Validation) *Engine {
	e := &Engine{opts: opts, validation: v, partition: -1, nodes: map[string]*node{}, sources: map[string]*source{}, counts: map[string]*Counts{}}
	e.stateWatch.Max, e.stateWatch.Shared = opts.MaxStateBytes, opts.SharedState
	e.inputSlot = e.lay.slot(nodes.VarInput)
	e.metaSlot = e.lay.slot(nodes.VarMeta)
	e.keySlot = e.lay.slot(nodes.VarKey)
	e.windowSlot = e.lay.slot(nodes.VarWindow)
	e.lateSlot = e.lay.slot(nodes.VarLate)
	switch { // every engine, RunNode's too
	case opts.MaxEventBytes == 0:
		e.lay.maxEventBytes = DefaultMaxEventBytes
	case opts.MaxEventBytes > 0:
		e.lay.maxEventBytes = opts.MaxEventBytes
	}
	return e
}

// planSlots gives a slot to every variable the node of p defines or its expressions read.
func (e *Engine) planSlots(p *nodes.Plan) {
	for _, name := range []string{p.Node.VarName, p.Node.OutputVar} {
		if name != "" {
			e.lay.slot(name)
		}
	}
	for _, prog := range p.Programs {
		for _, name := range prog.Variables() {
			e.lay.slot(name)
		}
	}
}

// Validation returns the scenario's validation (variables in scope per node).
func (e *Engine) Validation() *nodes.Validation { return e.validation }

// Sources returns the ids of the scenario's sources, in topological order.
func (e *Engine) Sources() []string {
	var ids []string
	for _, n := range e.order {
		if n.src != nil {
			ids = append(ids, n.id)
		}
	}
	return ids
}

// SourceKind returns the ref type ("file", "http", "kafka") of source id.
func (e *Engine) SourceKind(id string) string {
	if n := e.sources[id]; n != nil {
		return n.subtype
	}
	return ""
}

// Counts returns every node's counters, by node id.
func (e *Engine) Counts() map[string]Counts {
	out := make(map[string]Counts, len(e.counts))
	for id, c := range e.counts {
		out[id] = *c
	}
	// An aggregate's partly late events are its operator's (kept in its snapshot).
	for _, a := range e.aggregates {
		c := out[a.id]
		c.PartlyLate = a.window.Stats().PartlyLate
		out[a.id] = c
	}
	return out
}

// Errors returns the per-event errors kept (see Options.MaxErrors) and how
// many there were in all.
func (e *Engine) Errors() ([]EventError, int64) { return e.errs, e.nErrs }

// Late returns the late events of all aggregates (dropped, or sent down a Late edge).
func (e *Engine) Late() int64 {
	var n int64
	for _, a := range e.aggregates {
		n += a.counts.Late
	}
	return n
}

// PartlyLate returns the partly late events of all aggregates: events dropped from some
// closed windows but counted in the open ones.
func (e *Engine) PartlyLate() int64 {
	var n int64
	for _, a := range e.aggregates {
		n += a.window.Stats().PartlyLate
	}
	return n
}

// failInput records an error of an input line that belongs to no node (an
// unknown source, a line that is not an envelope).
func (e *Engine) failInput(err error) {
	e.record(EventError{Line: e.line, Partition: e.errorPartition(), Message: err.Error()})
}

func (e *Engine) fail(n *node, field string, err error) { e.failExpr(n, field, "", err) }

// failExpr is fail for an expression whose own field, exprField, is finer than the field
// reported (see EventError.exprField).
func (e *Engine) failExpr(n *node, field, exprField string, err error) {
	n.counts.Errors++
	e.record(EventError{NodeID: n.id, Field: field, Line: e.line, Partition: e.errorPartition(), Message: err.Error(), exprField: exprField})
}

// record counts a per-event error, keeps it while fewer than MaxErrors are kept, and hands it
// to the OnError callback.
func (e *Engine) record(x EventError) {
	x.Message = names.Cut(x.Message, MaxErrorMessage)
	e.nErrs++
	if len(e.errs) < e.opts.MaxErrors {
		e.errs = append(e.errs, x)
	}
	if e.onError != nil {
		e.onError(x)
	}
}

// OnError calls f with every per-event error from now on, as it happens (within PushJSON,
// PushValue, Tick or Flush, on the caller's goroutine), whether or not MaxErrors lets the
// engine keep it: a deployment keeps the failed events in its dead-letter list this way.
// f must not call the engine.
func (e *Engine) OnError(f func(EventError)) { e.onError = f }

// SetInputPartition says which input partition (a Kafka partition) the events pushed from now
// on come from: their per-event errors report it with their line, and a live source (one
// with an idle timeout) keeps its watermark per partition (see SetPartitionsPending). A
// negative p, the default, is input without partitions.
func (e *Engine) SetInputPartition(p int32) { e.partition = max(p, -1) }

// SetPartitionsPending says which input partitions (>= 0) of the live source sourceID may
// have records waiting to be read (the others have none). A source whose events come with
// partitions has the watermark of its slowest active partition, as with Flink's per-split
// watermarks and idleness: the least, over the partitions that hold it back, of their
// largest event time, less maxOutOfOrderness. A partition holds it back while records of it
// wait (entirely, when it has had no event yet) and until it has been silent for the
// source's idle timeout; when none does, the watermark follows the largest event time of
// all, as for a source without partitions. A partition read ahead of another therefore does
// not make the other's waiting events late. The watermark never decreases; when this call
// lets it move on, windows are evaluated. Sources without partitions, and bounded runs, are
// not affected.
func (e *Engine) SetPartitionsPending(sourceID string, pending []int32) {
	src := e.sources[sourceID]
	if src == nil || src.idleTimeout <= 0 {
		return
	}
	src.floor.fresh = false
	for _, ps := range src.parts {
		ps.pending = false
	}
	for _, p := range pending {
		if p >= 0 {
			src.part(p).pending = true
		}
	}
	if src.raiseFloor(e.opts.now().UnixMilli()) {
		e.stepAlone()
	}
}

// MarkPartitions tells the engine that a listing of the end offsets of every partition
// (all) of the live source sourceID's input was asked after every event pushed so far had
// been fetched; ConfirmPartitions, that it answered. From the first call on, while a
// partition holds the source's watermark back not at all (no record of it waits and it has
// had none, or it has been silent for the idle timeout), the watermark moves no further than
// the largest event time of the events fetched before the last listing that answered (less
// maxOutOfOrderness): the next records of such a partition were produced after that listing,
// so after those events, but maybe after none of the ones fetched since (a partition led by
// another broker is fetched apart). Sources without partitions, and bounded runs, are not
// affected.
func (e *Engine) MarkPartitions(sourceID string, all []int32) {
	src := e.sources[sourceID]
	if src == nil || src.idleTimeout <= 0 {
		return
	}
	src.listed = true
	for _, p := range all {
		if p >= 0 {
			src.part(p)
		}
	}
	for _, ps := range src.parts {
		if ps.seen {
			ps.marked = ps.max
		}
	}
}

// ConfirmPartitions tells the engine that the listing of the last MarkPartitions of the live
// source sourceID answered (or a later one did); when that lets its watermark move on,
// windows are evaluated.
func (e *Engine) ConfirmPartitions(sourceID string) {
	src := e.sources[sourceID]
	if src == nil || src.idleTimeout <= 0 {
		return
	}
	for _, ps := range src.parts {
		ps.confirmed = max(ps.confirmed, ps.marked)
	}
	if src.raiseFloor(e.opts.now().UnixMilli()) {
		e.stepAlone()
	}
}

func (e *Engine) errorPartition() *int32 {
	if e.partition < 0 {
		return nil
	}
	p := e.partition
	return &p
}

// PushJSON decodes one JSON record for source sourceID, read from input line
// line (1-based; 0 when unknown), gives it its event time and pushes it
// through the graph, then takes a watermark step. A record that cannot be
// decoded or timed, or that does not fit the schema its source enforces, is a
// per-event error of the source. It returns an error
// only for an unknown source or an engine that was flushed.
func (e *Engine) PushJSON(sourceID string, record []byte, line int64) error {
	src := e.source(sourceID)
	if src == nil {
		return fmt.Errorf("engine: unknown source %q", sourceID)
	}
	if e.flushed {
		return errors.New("engine: input after the end of input")
	}
	if len(record) >= ReleaseAfterBytes {
		defer e.ReleaseEvent() // also when Guard's interruption unwinds the push
	}
	e.pushJSON(src, record, line)
	e.releaseIfMade()
	return nil
}

// releaseIfMade lets go of the event's values (ReleaseEvent) when its expressions made
// ReleaseAfterBytes or more since the last release.
func (e *Engine) releaseIfMade() {
	if e.lay.made >= ReleaseAfterBytes {
		e.ReleaseEvent()
	}
}

// PushUndecodable counts a record of source sourceID that its input could not decode (a
// value in a schema registry's wire format that does not fit its schema) and records err as
// the per-event error of that record, at the source, with line as its line.
func (e *Engine) PushUndecodable(sourceID string, line int64, err error) error {
	src := e.sources[sourceID]
	if src == nil {
		return fmt.Errorf("engine: unknown source %q", sourceID)
	}
	e.line = line
	src.counts.In++
	e.fail(src.node, "", err)
	return nil
}

// source returns the source of id, nil when there is none. The last one found is kept: a
// run pushes record after record to the same source.
func (e *Engine) source(id string) *source {
	if src := e.lastSource; src != nil && src.node.id == id {
		return src
	}
	src := e.sources[id]
	if src != nil {
		e.lastSource = src
	}
	return src
}

// pushJSON is PushJSON for a known source.
func (e *Engine) pushJSON(src *source, record []byte, line int64) {
	e.line = line
	src.counts.In++
	if err := src.decode(record); err != nil {
		e.fail(src.node, "", fmt.Errorf("not a JSON record: %w", err))
		return
	}
	_ = e.pushValue(src, math.MinInt64)
}

// PushValue pushes an already decoded record for source sourceID. With
// eventTime = math.MinInt64 the source's timestamp expression gives the
// event time; otherwise eventTime is used (test records that carry their
// own timestamp).
func (e *Engine) PushValue(sourceID string, record value.Value, eventTime int64, line int64) error {
	src := e.source(sourceID)
	if src == nil {
		return fmt.Errorf("engine: unknown source %q", sourceID)
	}
	if e.flushed {
		return errors.New("engine: input after the end of input")
	}
	e.line = line
	src.counts.In++
	src.input, src.lazyInput, src.raw = record, false, nil
	err := e.pushValue(src, eventTime)
	e.releaseIfMade()
	return err
}

// pushValue pushes the record the source has just decoded (see node.decode)
// or been given.
func (e *Engine) pushValue(src *source, eventTime int64) error {
	if e.stateErr != nil {
		return nil // past Options.MaxStateBytes: nothing more goes in
	}
	if e.stepOpen {
		e.finishStep()
	}
	e.newInputEvent()
	if src.schema != nil {
		if err := src.conform(); err != nil {
			// Refused before it is timed: an event that does not fit goes no further.
			e.fail(src.node, "schema", err)
			return nil
		}
	}
	// The source's context is reused for its next event: nothing keeps it
	// once the event has gone through (aggregates that enrich events emit
	// from within Add; sinks and Observe copy what they keep).
	// Only #input and #meta are ever set in it: no need to clear the rest.
	// The timestamp expression sees #input alone ($env too).
	c := &src.ev
	if src.lazyInput {
		c.setLazy(e.inputSlot, src.node)
	} else {
		c.set(e.inputSlot, src.input)
	}
	c.slots[e.metaSlot] = slotVal{}
	c.held = 0
	t := eventTime
	if t == math.MinInt64 {
		var err error
		t, err = src.eventTime(e, c)
		if err != nil {
			e.fail(src.node, "timestamp", err)
			return nil
		}
	} else {
		src.ownTime = true
	}
	if t < aggregate.MinEventTime || t > aggregate.MaxEventTime {
		e.fail(src.node, "timestamp", outOfRange(t))
		return nil
	}
	if t < secondsLikeUntil && t >= secondsLikeFrom && src.seen && src.maxTime >= secondsLikeUntil {
		e.fail(src.node, "timestamp", secondsAmongMillis(t, src.maxTime))
		return nil
	}
	if !e.opts.Bounded && (src.idleTimeout > 0 || src.maxFutureSkew > 0) {
		now := e.opts.now().UnixMilli()
		if src.maxFutureSkew > 0 && t > now+src.maxFutureSkew {
			// Refused before it moves anything: one mistyped timestamp must not make every
			// later event late (docs/semantics.md §1).
			e.fail(src.node, "timestamp", fmt.Errorf("event time %s is %s ahead of the server's clock, more than maxFutureSkew %s",
				time.UnixMilli(t).UTC().Format(time.RFC3339Nano), aheadText(t-now), time.Duration(src.maxFutureSkew)*time.Millisecond))
			return nil
		}
		if src.idleTimeout > 0 {
			src.lastArrival = now
		}
	}
	// moved: the source's watermark may have moved, so windows are evaluated after the event
	// (Advance with an unchanged watermark does nothing).
	moved := true
	if e.partition >= 0 && src.idleTimeout > 0 {
		moved = src.partitionEvent(src.part(e.partition), t, src.lastArrival)
	} else {
		moved = !src.seen || t > src.maxTime
		if moved {
			src.maxTime = t
		}
		src.seen = true
	}
	c.time = t
	if e.needsMeta {
		c.set(e.metaSlot, e.meta(t))
	}
	// (#meta is set for every event or for none.)
	src.counts.Out++
	if a := src.feeds; a != nil && e.probe == nil {
		// forward along the source's one edge, without the graph (source.wire).
		if e.enter(a.node) && a.inputs(e, src, c) {
			a.add(e, c)
		}
	} else {
		e.forward(src.node, c, "")
	}
	if moved {
		e.step()
	}
	return nil
}

// meta builds #meta for an event time.
func (e *Engine) meta(t int64) value.Value {
	return value.NewRecord([]string{"eventTime", "scenarioName"}, []value.Value{value.Int(t), value.String(e.opts.ScenarioName)})
}

// SourceResumed tells the engine that the live source id could not see its input until at
// (a Kafka source whose brokers were away): the records its producers kept meanwhile arrive
// only now, so its silence, and each of its partitions', counts from at rather than from
// their last events (docs/semantics.md §1: silence is what the source saw; an outage is not
// silence). Without an idle timeout it does nothing.
func (e *Engine) SourceResumed(id string, at time.Time) {
	src := e.sources[id]
	if src == nil || src.idleTimeout <= 0 {
		return
	}
	ms := at.UnixMilli()
	src.lastArrival = max(src.lastArrival, ms)
	src.floor.fresh = false
	for _, ps := range src.parts {
		if ps.seen {
			ps.arrival = max(ps.arrival, ms)
		}
	}
}

// LatestEventTime returns the latest event time source id has seen (epoch ms), and false while
// it has seen nothing. For a partitioned source it is the time its watermark follows.
func (e *Engine) LatestEventTime(id string) (int64, bool) {
	n := e.sources[id]
	if n == nil || !n.seen {
		return 0, false
	}
	return n.maxTime, true
}

// SourceWatermark returns source id's watermark, and false while it has
// seen nothing.
func (e *Engine) SourceWatermark(id string) (int64, bool) {
	n := e.sources[id]
	if n == nil || !n.seen {
		return 0, false
	}
	return n.watermark(), true
}

// watermarkOf returns the watermark of a node: the minimum over the sources
// feeding it that have seen events.
func (e *Engine) watermarkOf(n *node) (int64, bool) {
	w, any := int64(math.MaxInt64), false
	for _, src := range n.upstream {
		if !src.seen {
			continue
		}
		w, any = min(w, src.watermark()), true
	}
	return w, any
}

// step advances every aggregate to its watermark, upstream first (an upstream aggregate's
// windows reach the one downstream before that one closes any). With Options.PauseStep it
// may stop part way (stepOpen), at a window's close; the step then goes on to the
// watermarks it set out for (stepTo), and a step to the sources' watermarks of now follows:
// an upstream aggregate advanced past them before the one downstream had caught up sent it
// later windows first (a review: a session window downstream merged them otherwise).
func (e *Engine) step() {
	e.inStep = true // left set by an interruption: the engine is unusable then
	if e.stepOpen {
		if e.stepTo == nil { // (a restore's: the sources' watermarks are the step's)
			e.stepTo = e.watermarks(nil)
		}
		if !e.advanceTo(e.stepTo) {
			e.inStep = false
			return
		}
		e.stepOpen = false
	}
	if e.opts.PauseStep == nil {
		// Whole steps keep no targets: the per-event path of run and test runs is as before.
		for _, a := range e.aggregates {
			if w, ok := e.watermarkOf(a.node); ok {
				a.window.Advance(w)
			}
		}
	} else if to := e.watermarks(e.stepTo[:0]); !e.advanceTo(to) {
		e.stepOpen, e.stepTo = true, to
	}
	e.inStep = false
}

// noWatermark marks an aggregate without a watermark in a step's targets (its sources have
// seen nothing): it is not advanced.
const noWatermark = math.MinInt64

// watermarks appends each aggregate's watermark (watermarkOf; noWatermark when none) to b.
func (e *Engine) watermarks(b []int64) []int64 {
	for _, a := range e.aggregates {
		w, ok := e.watermarkOf(a.node)
		if !ok {
			w = noWatermark
		}
		b = append(b, w)
	}
	return b
}

// advanceTo advances each aggregate to its target in to, upstream first, in parts
// (advanceInParts); it reports false when PauseStep paused it.
func (e *Engine) advanceTo(to []int64) bool {
	for i, a := range e.aggregates {
		if to[i] != noWatermark && !e.advanceInParts(a.window, to[i]) {
			return false
		}
	}
	return true
}

// advanceInParts advances win to w a close at a time (aggregate.Operator.NextClose), asking
// Options.PauseStep between two of them and between two results of one
// (aggregate.Operator.AdvancePart: one close of a window may emit for every key); it reports
// false when it paused before w.
func (e *Engine) advanceInParts(win aggregate.Operator, w int64) bool {
	if e.opts.PauseStep == nil { // (finishStep)
		win.Advance(w)
		return true
	}
	for closes := 0; ; closes++ {
		at, ok := win.NextClose()
		if !ok || at > w || at <= win.Watermark() {
			win.Advance(w)
			return true
		}
		if closes > 0 && e.opts.PauseStep() {
			return false
		}
		if !win.AdvancePart(at, e.opts.PauseStep) {
			return false
		}
	}
}

// StepCarriedOnBy reports whether every aggregate a watermark step in progress (or open,
// StepOpen) has yet to advance, behind its sources' watermark, is one whose state kept says
// the next deployment keeps (by node id): that deployment then goes on with the step.
func (e *Engine) StepCarriedOnBy(kept func(id string) bool) bool {
	for _, a := range e.aggregates {
		if w, ok := e.watermarkOf(a.node); ok && a.window.Watermark() < w && !kept(a.node.id) {
			return false
		}
	}
	return true
}

// StepOpen reports that a watermark step has not reached every aggregate (Options.PauseStep
// paused it, or Restore left aggregates behind their sources' watermarks): ContinueStep
// goes on with it. Nothing of it is lost: the next push finishes it first.
func (e *Engine) StepOpen() bool { return e.stepOpen }

// ContinueStep goes on with an open step (StepOpen), which Options.PauseStep may pause again.
func (e *Engine) ContinueStep() {
	if e.stepOpen {
		e.newInputEvent()
		e.stepAlone()
	}
}

// finishStep finishes an open step whole, before an event or a flush: an event pushed
// while aggregates lag their watermark would be added to windows the watermark has closed.
func (e *Engine) finishStep() {
	pause := e.opts.PauseStep
	e.opts.PauseStep = nil
	defer func() { e.opts.PauseStep = pause }()
	e.step()
}

// stepAlone is step outside a push (a clock tick, a partition listing): what the windows it
// closes emit is let go of as after a push (releaseIfMade).
func (e *Engine) stepAlone() {
	e.step()
	e.releaseIfMade()
}

// Flush ends a bounded input: every watermark becomes +infinity, every
// window closes and emits, upstream aggregates first.
func (e *Engine) Flush() {
	if e.flushed {
		return
	}
	if e.stepOpen {
		e.finishStep()
	}
	e.newInputEvent()
	e.flushed = true
	e.line = 0
	for _, a := range e.aggregates {
		a.window.Flush()
	}
	e.releaseIfMade()
}

// EventMemory is the most memory, in bytes, one event may take in the engine by what its
// expressions make, when some expression of the scenario runs expr: what the event's
// variables may hold (Options.MaxEventBytes, 64 MiB by default) and three times what one run
// may make besides (its memory budget, 16 MiB by default, within that; converting the
// variables it reads may take twice as much again), 112 MiB by default. 0 when no expression
// runs expr (paths, comparisons of a path with a literal, len of a path and records of paths
// make nothing of their own; a path only expr follows, such as #input.s[0] of a string, runs
// it and makes a few bytes) or the event's variables have no bound. What the event decoded
// to, and the window state, are bounded apart.
func (e *Engine) EventMemory() int64 {
	if e.lay.maxEventBytes <= 0 {
		return 0
	}
	run := 0
	for _, ev := range e.lay.evaluators {
		if ev.runs() {
			m := ev.prog.Budget().Memory
			if m < 0 || m > e.lay.maxEventBytes {
				m = e.lay.maxEventBytes // a run makes at most what the event may hold still
			}
			run = max(run, m)
		}
	}
	if run == 0 {
		return 0
	}
	return int64(e.lay.maxEventBytes) + 3*int64(run)
}

// ReleaseAfterBytes is the size of a JSON record from which the engine lets go of what the
// event decoded to once it has gone through the graph (releaseEvent): smaller ones, the
// common ones, leave their values in the buffers the next event reuses. An event of empty
// objects decodes to about 24 times its JSON (1.5 MB to 40 MB), and each deployment kept
// its last one: one such event to each of 140 deployments ended a server out of memory (a
// hostile round). At 4 KiB, a deployment keeps at most about 100 KB of its last event.
const ReleaseAfterBytes = 4 << 10

// ReleaseEvent lets go of every value of the last event the engine holds in buffers it
// reuses (the source's record and fields, the nodes' scratch events, the expressions'
// scratch records, an aggregate's key and inputs): what a window keeps it has copied. It
// costs a pass over the nodes and expressions; the engine calls it itself after a JSON record
// of ReleaseAfterBytes or more, PushJSON and PushValue after an event whose expressions made
// as many, and a caller of PushValue calls it after a large record.
func (e *Engine) ReleaseEvent() {
	for _, n := range e.nodes {
		clear(n.scratch.slots)
		n.scratch.held = 0
		if h, ok := n.op.(eventHolder); ok {
			h.releaseEvent()
		}
	}
	for _, ev := range e.lay.evaluators {
		clear(ev.scratchVals)
	}
	e.lay.made = 0
}

// newInputEvent starts the per-input-event counts (MaxForEachEvents).
func (e *Engine) newInputEvent() { e.forEachSent, e.forEachOver, e.abandoned = 0, false, false }

// forward sends c from n along its outgoing edges of type onlyType, or with
// onlyType "" along all of them but Late edges (Split, Source, and nodes with
// one output).
func (e *Engine) forward(n *node, c *event, onlyType string) {
	if e.probe != nil {
		e.probe.forwarded(n, c, onlyType)
		return
	}
	if onlyType == "" {
		for _, to := range n.main {
			e.push(to, c, n.id)
		}
		return
	}
	for i := range n.out {
		if out := &n.out[i]; out.typ == onlyType {
			e.push(out.to, c, n.id)
		}
	}
}

// send sends c from n along its one outgoing edge out (a Switch's choice).
func (e *Engine) send(n *node, out *edge, c *event) {
	if e.probe != nil {
		e.probe.sent(n, out, c)
		return
	}
	e.push(out.to, c, n.id)
}

// errInterrupt unwinds an engine's call when it is interrupted (Interruptible, Guard).
var errInterrupt = errors.New("engine: interrupted")

// Interruptible makes stop, once true, interrupt whatever the engine is doing at the next
// node an event enters (one expression's evaluation, which its budget bounds, is not cut):
// an event going through the graph (a for-each of 100,000 elements, each through slow
// expressions), or a window's emissions (a watermark step that closes the windows of a
// million keys). The call in progress, made within Guard, returns there, and the engine is
// unusable after it (Interrupted): its state and counts may hold part of an event. A
// deployment's stop uses it when the event in progress does not end soon enough; the
// deployment then resumes from its last checkpoint.
func (e *Engine) Interruptible(stop *atomic.Bool) { e.interrupt = stop }

// Guard runs f, which calls e's methods (PushJSON, PushValue, Tick, ...), and returns
// false when Interruptible's stop interrupted it (and for any call after that).
// Other panics go on.
func (e *Engine) Guard(f func()) (ok bool) {
	if e.interrupted {
		return false
	}
	defer func() {
		if e.interrupted {
			if r := recover(); r != nil && r != errInterrupt {
				panic(r)
			}
			ok = false
		}
	}()
	f()
	return true
}

// ErrEventAbandoned is the per-event error of an input event abandoned (AbandonWhen), at the
// node it was entering.
var ErrEventAbandoned = errors.New("the event was abandoned here: it goes no further, and what it did before stays (results sent, window state)")

// AbandonWhen makes event, once negative, abandon the input event in progress at the next
// node it enters: ErrEventAbandoned is its per-event error there, and no node after takes it
// (those it went through keep what it did). The windows that the watermark closes after the
// event (a step) are not abandoned: they are not the event's alone. The caller sets event
// positive when an event starts, and makes it negative (from another goroutine, say when the
// event has run too long).
// why is added to the error.
func (e *Engine) AbandonWhen(event *atomic.Int64, why string) { e.event, e.abandonWhy = event, why }

// Interrupted reports whether Interruptible's stop interrupted a call.
func (e *Engine) Interrupted() bool { return e.interrupted }

// stopEvery is how many nodes entered between two looks at the run's context: often
// enough that a run of slow expressions (each bounded by the expression budgets) stops
// soon after its context ends.
const stopEvery = 16

// push processes context c arriving at node n from node from.
func (e *Engine) push(n *node, c *event, from string) {
	if !e.enter(n) {
		return
	}
	if e.opts.Observe != nil {
		e.opts.Observe(n.id, c.varsMap(), c.time)
	}
	n.op.process(e, n, c, from)
}

// enter counts an event entering node n, and reports false when the run's context has
// ended (then nothing enters).
func (e *Engine) enter(n *node) bool {
	if (e.ctx != nil || e.interrupt != nil || e.event != nil) && e.halted(n) {
		return false
	}
	n.counts.In++
	return true
}

// halted reports that the event in progress goes no further at node n: the run's context
// has ended (looked at every stopEvery calls), or the event was abandoned (AbandonWhen; its
// error at n the first time); Interruptible's stop unwinds the call instead. enter calls it,
// and so do nodes between the many expressions one of them evaluates (a VariableBuilder's
// fields, a Switch's conditions), so that work inside one node stops too.
func (e *Engine) halted(n *node) bool { return e.haltedAt(n, false) }

// haltedAt is halted, looking at the run's context at once when now is set (between slow
// expressions of one node, where a look costs nothing beside them).
func (e *Engine) haltedAt(n *node, now bool) bool {
	if e.ctx != nil {
		if e.stopped {
			return true
		}
		if e.pushes++; (now || e.pushes%stopEvery == 0) && e.ctx.Err() != nil {
			e.stopped = true
			return true
		}
	}
	if e.interrupt != nil && e.interrupt.Load() {
		e.interrupted = true
		panic(errInterrupt)
	}
	if e.event != nil && !e.inStep && e.event.Load() < 0 {
		if !e.abandoned {
			e.abandoned = true
			e.fail(n, "", fmt.Errorf("%w (%s)", ErrEventAbandoned, e.abandonWhy))
		}
		return true
	}
	return false
}

// sortedIDs returns the keys of m in order (for deterministic summaries).
func sortedIDs[T any](m map[string]T) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// aheadText writes a positive span of ms as a duration below 2 days, in whole days from 2
// days, with years (of 365.2425 days) from 2 years: an event of 2099 was "634657h50m4.979s
// ahead" (a new user). Days hold what a time.Duration cannot (event times run to the year
// 9999).
func aheadText(ms int64) string {
	const day = 86_400_000
	switch {
	case ms >= 2*365*day:
		return fmt.Sprintf("%d days (about %.0f years)", ms/day, float64(ms)/(365.2425*day))
	case ms >= 2*day:
		return fmt.Sprintf("%d days", ms/day)
	}
	return (time.Duration(ms) * time.Millisecond).String()
}
