package aggregate

import (
	"errors"
	"fmt"
	"math"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// Event is one decoded input event of a window operator.
type Event struct {
	// Time is the event time in ms since the Unix epoch.
	Time int64
	// Key holds the group key values in groupBy order. The operator copies
	// the slice the first time it sees a key.
	Key []value.Value
	// Inputs holds one aggregateBy value per aggregation, in order. Count
	// ignores its input.
	Inputs []value.Value
	// EndSession is the value of a session window's endSessionCondition.
	EndSession bool
	// Payload is carried, untouched, to results of the modes that enrich the
	// incoming event (sliding, OnEvent).
	Payload any
}

// Result is what a window operator emits: a closed window's value for one key,
// or an incoming event enriched with its window's running value.
//
// The emit callback receives a *Result that is valid only during the call:
// the operator reuses it and its Values. Copy what must outlive the call.
type Result struct {
	Key    []value.Value // group key values, in groupBy order; never modified
	Start  int64         // window start, ms, inclusive
	End    int64         // window end, ms, exclusive
	Time   int64         // result's event time: End-1 for a closed window, the event's time when enriching
	Values []value.Value // one per aggregation, in order; null where Errs says so
	// Errs are the aggregations whose result failed (ErrSumOverflow, ErrFloatOverflow), in
	// order: each is null in Values. Empty when none did.
	Errs  []AggregationError
	Event *Event // the incoming event in modes that enrich it; nil for new events
}

// Named is one named aggregation of a node: its output field and function.
type Named struct {
	Name       string
	Aggregator Aggregator
}

// WindowKind is one of the aggregate node kinds of docs/semantics.md §4.
type WindowKind int

// The window kinds.
const (
	Sliding WindowKind = iota
	Tumbling
	Hopping
	Session
	CountWindow
)

func (k WindowKind) String() string {
	switch k {
	case Sliding:
		return "aggregate-sliding"
	case Tumbling:
		return "aggregate-tumbling"
	case Hopping:
		return "aggregate-hopping"
	case Session:
		return "aggregate-session"
	case CountWindow:
		return "aggregate-count"
	}
	return fmt.Sprintf("WindowKind(%d)", int(k))
}

// EmitWhen says when a tumbling or session window emits (docs/semantics.md §4).
type EmitWhen int

// The emit modes.
const (
	OnEnd EmitWhen = iota
	OnEvent
	OnEndWithExtraWindow
)

func (e EmitWhen) String() string {
	switch e {
	case OnEnd:
		return "OnEnd"
	case OnEvent:
		return "OnEvent"
	case OnEndWithExtraWindow:
		return "OnEndWithExtraWindow"
	}
	return fmt.Sprintf("EmitWhen(%d)", int(e))
}

// WindowSpec is the geometry and emission of one aggregate node. Durations
// are in ms.
type WindowSpec struct {
	Kind WindowKind
	// Length is the window length (sliding, tumbling, hopping).
	Length int64
	// Slide is the hopping window's slide.
	Slide int64
	// Precision is an explicit slice width; 0 chooses it (docs/semantics.md §3).
	Precision int64
	// Offset shifts tumbling windows from the Unix epoch (or from local
	// midnight with TimeZone).
	Offset int64
	// TimeZone is an IANA zone name for tumbling windows of whole days.
	TimeZone string
	// EmitWhen applies to tumbling and session windows.
	EmitWhen EmitWhen
	// EmitWhenEventLeft makes a sliding window also emit when a slice leaves
	// the window of the key's latest event.
	EmitWhenEventLeft bool
	// SessionTimeout is the gap that ends a session.
	SessionTimeout int64
	// Count is the number of events in a count window; CountSlide the number
	// of events it slides by (0 means Count: non-overlapping windows).
	Count, CountSlide int64
	// Reserve, when set, is asked before the operator takes much memory at once, with the
	// bytes it is about to take (an estimate): a count window's count-slices for a new key,
	// or its columns grown for more keys. An error refuses the event: Add returns it, and
	// nothing is taken. Other growth is a key's or a slice's at a time, which the caller's
	// looks at StateBytes bound.
	Reserve func(bytes int64) error
}

// Stats counts what an operator did. Late counts events dropped from every
// window they belong to; PartlyLate counts events dropped from some closed
// windows but added to the open ones (hopping windows). Rejected counts
// events with an input of the wrong type, which were not added anywhere.
type Stats struct {
	Events     int64 // events given to Add
	Late       int64
	PartlyLate int64
	Rejected   int64
	Emitted    int64 // results emitted
	Errors     int64 // results carrying an aggregation error
}

// Operator is a window operator: it takes decoded events of one partition
// in arrival order and watermarks, and emits results through the callback
// given to NewOperator. It is not safe for concurrent use.
type Operator interface {
	// Add processes one event. It returns a *LateError (errors.Is(err,
	// ErrLate)) when the event was dropped from every window it belongs to,
	// an *InputError when an input
	// has the wrong type (the event is not added anywhere), and nil
	// otherwise. Enriching modes and count windows emit from within Add.
	Add(e *Event) error
	// Advance moves the watermark to w (ms). A watermark never goes back: a
	// smaller w is ignored. Windows whose end is at or below the watermark
	// close and emit, in order of window end.
	Advance(w int64)
	// NextClose returns the least watermark above the current one at which Advance emits
	// something (window next's end for a tumbling or hopping window that emits at its end, the
	// first leave timer of a sliding window, the first session close or tombstone expiry), ms;
	// false when no watermark would (emitting on events, count windows, no state). Advancing
	// to each NextClose in turn and then to w emits what Advance(w) emits, in the same order:
	// a caller splits a step that closes many windows that way (engine.Options.PauseStep).
	NextClose() (int64, bool)
	// AdvancePart is Advance(w) that may stop part way through a close: before each result
	// of a window (each session's close, each leave timer that emits) but the first of the
	// call, it asks pause (nil: never), and when pause says true it stops there and reports
	// false, its watermark still before w, NextClose at the close it is in. Its state is then
	// whole: a snapshot taken there, restored, goes on from that result. Calling it again, or
	// Advance, goes on, at least to the end of the close it is in, whatever their w (and Add
	// ends that close first: its window is closed); what all the parts emit is what
	// Advance(w) emits, in the same order. One close may emit for every key: a tumbling window of
	// 150,000 keys with lists of 2 KB emitted 300 MB in one piece, more than one checkpoint
	// may carry (engine.Options.PauseStep).
	AdvancePart(w int64, pause func() bool) bool
	// Flush ends a bounded input: the watermark becomes +infinity and every
	// open window and session closes and emits. Partial count windows are
	// dropped. The operator may not be used afterwards.
	Flush()
	// Watermark returns the current watermark (math.MinInt64 before any).
	Watermark() int64
	// Stats returns the counters.
	Stats() Stats
	// StateBytes estimates the heap bytes of the operator's window state.
	StateBytes() int
	// StateSize returns the keys and slices of the operator's window state, and StateBytes.
	StateSize() StateSize
	// KeyCount returns how many group keys hold state, in constant time (StateBytes walks the
	// state): a state budget looks at the state again after new keys as well as after events.
	KeyCount() int
	// AppendSnapshot appends the operator's whole state to b (for
	// checkpoints). See Restore.
	AppendSnapshot(b []byte) []byte
	// Restore replaces the state of a new operator (built by NewOperator
	// with the same spec and aggregations, before any Add) with a snapshot.
	// It returns an error wrapping slices.ErrCorruptSnapshot or
	// ErrSnapshotMismatch, and never panics on bad input.
	Restore(snapshot []byte) error
}

// ErrLate is returned by Operator.Add for an event that arrived after every
// window it belongs to had closed (docs/semantics.md §2). It was counted and dropped.
// Add returns it as a *LateError, which says which window the event missed.
var ErrLate = errors.New("aggregate: late event dropped")

// LateError is Operator.Add's error for a late event: errors.Is(err, ErrLate)
// holds. It names the first window (the one with the smallest end) that the
// event belonged to and missed, and the watermark that had closed it: what a
// node's "Late" output edge carries as #late (docs/semantics.md §2).
type LateError struct {
	// WindowStart and WindowEnd bound the window, in ms since the Unix
	// epoch, start inclusive, end exclusive. For a sliding window they are
	// the span of the event's own window; for a session, the closed session
	// the event would have joined (or the session it would have started).
	WindowStart, WindowEnd int64
	// Watermark is the operator's watermark when the event arrived, ms
	// (math.MaxInt64 after the end of a bounded input; NoWatermark,
	// math.MinInt64, before any, when a session closed by its
	// endSessionCondition is all that made the event late).
	Watermark int64
}

func (e *LateError) Error() string {
	return fmt.Sprintf("%v: window [%d, %d) closed at watermark %d", ErrLate, e.WindowStart, e.WindowEnd, e.Watermark)
}

// Is makes errors.Is(err, ErrLate) true.
func (e *LateError) Is(target error) bool { return target == ErrLate }

// Spec errors.
var (
	ErrNoAggregations = errors.New("aggregate: a node needs at least one aggregation")
	ErrBadWindow      = errors.New("aggregate: bad window")
)

// NoWatermark is the watermark before any has been seen.
const NoWatermark = math.MinInt64

// NewOperator returns the window operator for spec computing aggs, emitting through
// emit. Errors wrap ErrBadWindow or ErrNoAggregations, and the slices
// package's geometry errors (ErrWindowShorterThanPrecision ...).
func NewOperator(spec WindowSpec, aggs []Named, emit func(*Result)) (Operator, error) {
	if len(aggs) == 0 {
		return nil, ErrNoAggregations
	}
	for i, a := range aggs {
		if a.Aggregator == nil {
			return nil, fmt.Errorf("%w: aggregation %d (%q) has no aggregator", ErrBadWindow, i, a.Name)
		}
	}
	switch spec.Kind {
	case Sliding:
		return newSliding(spec, aggs, emit)
	case Tumbling, Hopping:
		return newAligned(spec, aggs, emit)
	case Session:
		return newSession(spec, aggs, emit)
	case CountWindow:
		return newCountWindow(spec, aggs, emit)
	}
	return nil, fmt.Errorf("%w: unknown kind %d", ErrBadWindow, spec.Kind)
}

// alignedGeometry works out slicer, slices per window (n) and per slide (s)
// for tumbling and hopping windows.
func alignedGeometry(spec WindowSpec) (slicer slices.Slicer, n, s int64, err error) {
	if spec.Kind == Tumbling {
		if spec.TimeZone != "" {
			if spec.Length <= 0 || spec.Length%slices.Day != 0 {
				return nil, 0, 0, fmt.Errorf("%w: window length %s: %w", ErrBadWindow, slices.FormatDuration(spec.Length), slices.ErrZoneNeedsWholeDays)
			}
			if spec.Precision != 0 && spec.Precision != spec.Length {
				return nil, 0, 0, fmt.Errorf("%w: a zoned tumbling window has no explicit precision", ErrBadWindow)
			}
			z, zerr := slices.NewZoned(spec.TimeZone, spec.Length/slices.Day, spec.Offset)
			if zerr != nil {
				return nil, 0, 0, fmt.Errorf("%w: %w", ErrBadWindow, zerr)
			}
			return z, 1, 1, nil
		}
		p, perr := slices.Precision(spec.Length, spec.Length, spec.Precision, true)
		if perr != nil {
			return nil, 0, 0, fmt.Errorf("%w: %w", ErrBadWindow, perr)
		}
		n = spec.Length / p
		return slices.Fixed{Width: p, Offset: slices.FloorMod(spec.Offset, spec.Length)}, n, n, nil
	}
	if spec.Slide <= 0 {
		return nil, 0, 0, fmt.Errorf("%w: slide %d ms: %w", ErrBadWindow, spec.Slide, slices.ErrNonPositive)
	}
	p, perr := slices.Precision(spec.Length, spec.Slide, spec.Precision, false)
	if perr != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w", ErrBadWindow, perr)
	}
	return slices.Fixed{Width: p}, spec.Length / p, spec.Slide / p, nil
}

// kindMasks probes each aggregator once per value kind, so that validating
// an event's inputs is a bit test instead of an interface call per input.
// Every Aggregator.Accept depends on the input's kind alone
// (TestAcceptDependsOnKindOnly).
func kindMasks(aggs []Named) []uint8 {
	probes := []value.Value{value.Null(), value.Bool(true), value.Int(1), value.Float(0.5),
		value.String("s"), value.List(nil), value.NewRecord(nil, nil)}
	masks := make([]uint8, len(aggs))
	for i, a := range aggs {
		for _, p := range probes {
			if a.Aggregator.Accept(p) == nil {
				masks[i] |= 1 << p.Kind()
			}
		}
	}
	return masks
}

// check validates an event's inputs against the aggregations' kind masks and
// returns the aggregator's own error for the first refused input.
func check(aggs []Named, masks []uint8, e *Event) error {
	if len(e.Inputs) < len(aggs) {
		return fmt.Errorf("%w: event has %d inputs for %d aggregations", ErrBadWindow, len(e.Inputs), len(aggs))
	}
	for i, m := range masks {
		if m&(1<<e.Inputs[i].Kind()) == 0 {
			return fmt.Errorf("aggregation %q: %w", aggs[i].Name, aggs[i].Aggregator.Accept(e.Inputs[i]))
		}
	}
	return nil
}
