package aggregate

import (
	"fmt"
	"math"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// Event times are limited to about ±35,000 years around 1970 so that slice
// and window arithmetic never overflows int64.
const (
	MinEventTime int64 = -(1 << 50)
	MaxEventTime int64 = 1 << 50
)

// ErrEventTime is returned (wrapped) by Add for an event time outside
// [MinEventTime, MaxEventTime].
var ErrEventTime = fmt.Errorf("aggregate: event time outside ±%d ms", MaxEventTime)

const infinity = math.MaxInt64 // the watermark after Flush

// aligned is the operator for windows aligned across keys: tumbling
// [k*L + offset, (k+1)*L + offset) and hopping [k*S, k*S + L).
//
// Window k covers slices [k*s, k*s + n - 1]. Windows close in order of k, so
// one running block holds, for every key, the invertible partials of the
// next window to close ("subtract-on-evict": a step from window k to k+1
// retracts the s slices that leave, whole columns at a time). The slices
// that enter are folded in lazily, when the window fires: the running block
// holds slices [next*s, folded) of window next, and an event goes to its
// slice alone unless that slice is already folded (an event behind the
// watermark's slice, still in window next), so an on-time event is added
// once, not twice. Non-invertible aggregations are merged at firing time
// from tier blocks (slices.Cover). Both are dense loops over all key slots.
//
// In OnEvent mode (tumbling only) every event emits its own window's running
// value for its key instead, answered per key from slices and tiers.
type aligned struct {
	*grid
	emit func(*Result)
	kind WindowKind
	mode EmitWhen
	s    int64 // slices per slide

	running *block // cols: invertible aggregations; count: events per slot in window next
	runWant []bool
	scratch *block // cols: tiered aggregations, merged at firing
	tierWnt []bool
	out     []Column // per aggregation, the column to read results from
	// overflows: the running columns that are overflowColumns (fire looks at them).
	overflows []overflowColumn
	empty     []Column // one empty cell per aggregation, for extra windows

	next    int64 // the next window to close, when hasNext
	hasNext bool
	// folded is the first slice not folded into the running block: it holds
	// slices [next*s, folded), next*s <= folded <= next*s+n, when hasNext.
	folded int64
	open   int64 // the first window that has not closed, for the watermark w
	// Thresholds on the slice index j of an event, worked out once per
	// watermark so that Add divides once (for j): the event is late when
	// j < lateBelow (floor(j/s) < open <=> j < open*s), and partly late
	// when j < partlyBelow (floor((j-n)/s)+1 < open <=> j < (open-1)*s+n).
	lateBelow, partlyBelow int64
	// The slice of the watermark those were worked out for (when wSliceSet): a watermark
	// moving within its slice changes none of them.
	wSlice    int64
	wSliceSet bool
	// Where the last event times and watermarks fell: most fall in the slice of the one before.
	eventSlices, wSlices slices.IndexCache
	extra                []int // slots whose last emitted window was the one before next
	// extraEmitted: extra windows were emitted since the last evictAndFree, whose slots may
	// be left with no data though no slice is dropped.
	extraEmitted bool
	// A close paused part way (AdvancePart): window next has emitted the extra windows of
	// extra[:firePos] (firing fireExtras), or all of them and its own for the slots below
	// firePos (fireSlots); snapshots keep both. merged: scratch holds window next's tiered
	// aggregations (fire merges them once a close, again after a restore).
	firing  firePhase
	firePos int
	merged  bool

	r Result
}

// firePhase is where a close of an aligned window is (aligned.fire).
type firePhase uint8

const (
	fireNone   firePhase = iota // no close under way
	fireExtras                  // emitting the extra windows (OnEndWithExtraWindow)
	fireSlots                   // emitting the window's keys, by slot
)

func newAligned(spec WindowSpec, aggs []Named, emit func(*Result)) (*aligned, error) {
	slicer, n, s, err := alignedGeometry(spec)
	if err != nil {
		return nil, err
	}
	mode := spec.EmitWhen
	if spec.Kind == Hopping {
		if mode != OnEnd {
			return nil, fmt.Errorf("%w: a hopping window emits OnEnd only, not %s", ErrBadWindow, mode)
		}
	}
	a := &aligned{
		grid: newGrid(aggs, slicer, n, mode == OnEvent),
		emit: emit,
		kind: spec.Kind,
		mode: mode,
		s:    s,
		open: math.MinInt64,

		lateBelow:   math.MinInt64,
		partlyBelow: math.MinInt64,
	}
	a.r.Values = make([]value.Value, len(aggs))
	a.running = &block{cols: make([]Column, len(aggs)), shared: -1}
	a.scratch = &block{cols: make([]Column, len(aggs)), shared: -1}
	a.runWant = make([]bool, len(aggs))
	a.tierWnt = make([]bool, len(aggs))
	a.out = make([]Column, len(aggs))
	a.empty = make([]Column, len(aggs))
	for i, ag := range aggs {
		a.empty[i] = ag.Aggregator.NewColumn()
		a.empty[i].Resize(1)
		if a.tiered[i] {
			a.tierWnt[i] = true
			a.scratch.cols[i] = ag.Aggregator.NewColumn()
			a.out[i] = a.scratch.cols[i]
		} else {
			a.runWant[i] = true
			a.running.cols[i] = ag.Aggregator.NewColumn()
			a.out[i] = a.running.cols[i]
		}
	}
	a.overflows = overflowColumns(a.running.cols)
	return a, nil
}

// windowStart and windowEnd give window k's bounds in ms.
func (a *aligned) windowStart(k int64) int64 { return a.slicer.Start(k * a.s) }
func (a *aligned) windowEnd(k int64) int64   { return a.slicer.Start(k*a.s + a.n) }

// closed reports whether window k has closed (the watermark reached its end): k < open,
// as watermarkMoved worked it out (windowEnd(k) <= w <=> Index(w) >= k*s+n <=>
// floor((Index(w)-n)/s) >= k; with no watermark open is the least int64, at infinity past
// every window).
func (a *aligned) closed(k int64) bool { return k < a.open }

// firstOpen returns the smallest window index that has not closed.
func (a *aligned) firstOpen() int64 { return a.open }

// watermarkMoved works out what depends on the watermark alone.
func (a *aligned) watermarkMoved() {
	finite := a.w != NoWatermark && a.w != infinity
	if finite {
		j := a.wSlices.Index(a.slicer, a.w)
		if a.wSliceSet && j == a.wSlice {
			return
		}
		a.wSlice = j
	}
	a.wSliceSet = finite
	a.open = a.computeOpen()
	a.lateBelow, a.partlyBelow = math.MinInt64, math.MinInt64
	switch {
	case a.w == infinity:
		a.lateBelow, a.partlyBelow = math.MaxInt64, math.MaxInt64
	case a.open != math.MinInt64:
		a.lateBelow = a.open * a.s
		a.partlyBelow = (a.open-1)*a.s + a.n
	}
}

// computeOpen works out firstOpen for the current watermark.
func (a *aligned) computeOpen() int64 {
	if a.w == NoWatermark {
		return math.MinInt64
	}
	if a.w == infinity {
		return math.MaxInt64 >> 2
	}
	// Window k is open when its last slice k*s+n-1 reaches the watermark's slice.
	return slices.FloorDiv(a.wSlices.Index(a.slicer, a.w)-a.n, a.s) + 1
}

func (a *aligned) Watermark() int64 { return a.w }
func (a *aligned) Stats() Stats     { return a.stats }
func (a *aligned) StateBytes() int {
	n := a.stateBytes() + blockBytes(a.running)
	if a.firing == fireNone {
		// While a close is paused part way, scratch holds the merged copy of its window's
		// tiered aggregations (a List's entries) that a whole close takes and lets go of
		// within one step, uncounted: counted, a close of 150,000 keys' lists of 1.3 KB
		// doubled the state and failed the deployment at each redeploy (hostile round 146),
		// though it passed before closes paused.
		n += blockBytes(a.scratch)
	}
	return n
}

func (a *aligned) Add(e *Event) error {
	if a.firing != fireNone {
		a.Advance(a.windowEnd(a.next)) // the close paused part way ends first: its window is closed
	}
	a.stats.Events++
	if e.Time < MinEventTime || e.Time > MaxEventTime {
		a.stats.Rejected++
		return fmt.Errorf("%w: %d", ErrEventTime, e.Time)
	}
	if err := check(a.aggs, a.masks, e); err != nil {
		a.stats.Rejected++
		return err
	}
	j := a.eventSlices.Index(a.slicer, e.Time)
	if j < a.lateBelow {
		a.stats.Late++
		// The first window holding slice j is k = floor((j-n)/s) + 1.
		k := slices.FloorDiv(j-a.n, a.s) + 1
		return &LateError{WindowStart: a.windowStart(k), WindowEnd: a.windowEnd(k), Watermark: a.w}
	}
	if j < a.partlyBelow {
		a.stats.PartlyLate++
	}
	a.seq++
	slot := a.slot(e.Key)
	a.add(j, slot, e)

	if a.mode == OnEvent {
		a.emitOnEvent(e, slot, slices.FloorDiv(j, a.s))
		return nil
	}
	switch {
	case !a.hasNext || j < (a.next-1)*a.s+a.n && a.open < a.next:
		// The first event, or one whose first open window comes before the
		// running one (floor((j-n)/s)+1 < next <=> j < (next-1)*s+n):
		// restart the running block at that window.
		a.next, a.hasNext = max(slices.FloorDiv(j-a.n, a.s)+1, a.firstOpen()), true
		a.rebuildRunning()
	case j >= a.next*a.s && j < a.folded:
		// The slice is folded into the running block already.
		a.running.fit(a.keys.Cap())
		a.running.count[slot]++
		a.running.total++
		for i, c := range a.running.cols {
			if c != nil {
				c.Add(slot, e.Inputs[i], e.Time, a.seq)
			}
		}
	}
	return nil
}

// emitOnEvent emits the running value of the event's window for its key. A window of one
// slice (a tumbling window's, unless a precision divides it) is answered from that slice's
// cells; a copy of them per event made a window's events quadratic for a growing partial (a
// Set, List or CountDistinct: 20,000 events of one window took 18 s).
func (a *aligned) emitOnEvent(e *Event, slot int, k int64) {
	a.r.Key = a.keyVals[slot]
	a.r.Start, a.r.End = a.windowStart(k), a.windowEnd(k)
	a.r.Time = e.Time
	a.r.Event = e
	cols, cell := a.scratch.cols, 0
	if blk, ok := a.level0.Get(k * a.s); ok && a.n == 1 {
		cols, cell = blk.cols, slot
	} else {
		a.mergeOnEvent(slot, k)
	}
	emitCells(&a.stats, a.emit, &a.r, cols, cell)
	a.r.Event = nil
}

// mergeOnEvent merges slot's partials of window k into scratch cell 0.
func (a *aligned) mergeOnEvent(slot int, k int64) {
	a.scratch.fit(1)
	for i, c := range a.scratch.cols {
		if c == nil {
			a.scratch.cols[i] = a.aggs[i].Aggregator.NewColumn()
			c = a.scratch.cols[i]
		}
		c.Resize(max(c.Len(), 1))
		c.Reset(0)
	}
	a.mergeRange(a.scratch.cols, 0, slot, k*a.s, k*a.s+a.n-1)
}

// rebuildRunning empties the running block for window next; its slices are
// folded in when it fires (foldRunning).
func (a *aligned) rebuildRunning() {
	a.resetRunning()
	a.folded = a.next * a.s
}

// foldRunning folds the slices of window next not yet in the running block
// into it, which then holds the whole window.
func (a *aligned) foldRunning() {
	end := a.next*a.s + a.n
	if a.folded >= end {
		return
	}
	a.mergeRangeAll(a.running, a.runWant, a.folded, end-1)
	a.folded = end
}

// NextClose implements Operator: the end of window next, which the watermark closes there.
func (a *aligned) NextClose() (int64, bool) {
	if a.mode == OnEvent || !a.hasNext {
		return 0, false
	}
	return a.windowEnd(a.next), true
}

func (a *aligned) Advance(w int64) { a.AdvancePart(w, nil) }

// AdvancePart implements Operator: a close pauses between two keys (fire); the watermark
// moves to w once every window it closes has emitted.
func (a *aligned) AdvancePart(w int64, pause func() bool) bool {
	if a.firing != fireNone {
		// A close paused part way goes on, whatever w is: the watermark has reached the end
		// of its window (a review: a smaller w left it paused, and events were added to it).
		w = max(w, a.windowEnd(a.next))
	}
	if w <= a.w {
		return true
	}
	if a.mode == OnEvent {
		a.advanceOnEvent(w)
		return true
	}
	before := a.w
	a.w = w
	a.watermarkMoved()
	fired := false
	pause = afterFirst(pause)
	for a.hasNext && a.closed(a.next) {
		a.foldRunning()
		if !a.fire(a.next, pause) {
			// Part way: the watermark goes back to where it was until the close ends. The
			// windows fired before this one keep their slices until then too
			// (evictAndFree), which a snapshot holds as they are.
			a.w, a.wSliceSet = before, false
			a.watermarkMoved()
			return false
		}
		a.step()
		fired = true
	}
	if fired {
		bound := int64(math.MaxInt64 >> 2)
		if a.hasNext {
			bound = a.next * a.s
		}
		a.evictAndFree(bound)
		a.releaseFired()
	}
	return true
}

// advanceOnEvent is Advance of a window that emits on events: closes emit nothing.
func (a *aligned) advanceOnEvent(w int64) {
	a.w = w
	a.watermarkMoved()
	bound := int64(math.MaxInt64 >> 2)
	if a.w != infinity {
		bound = a.firstOpen() * a.s
	}
	if a.evictAndFree(bound) {
		// A window closed: the last event's window merged into scratch cell 0
		// (emitOnEvent) may be that one's, and is needed no more.
		for _, c := range a.scratch.cols {
			if c != nil {
				c.ResetAll()
			}
		}
	}
}

// releaseFired lets go of the last fired window's values: the tiered aggregations merged
// into scratch for it (a List's entries, a Set's values) are emitted and needed no more, and
// kept there they would be held and counted in StateBytes until the next window fires, which
// may be never (a closed window of 180 MB of List entries kept counting against
// --max-total-state).
func (a *aligned) releaseFired() {
	if anyTrue(a.tierWnt) {
		for _, c := range a.scratch.cols {
			if c != nil {
				c.ResetAll()
			}
		}
	}
}

func (a *aligned) Flush() { a.Advance(infinity) }

// fire emits window k (next) for every key with data in it, and the empty extra
// window for keys whose previous window was their last non-empty one. Before each result it
// asks pause (nil: never); on true it stops there (firing, firePos) and reports false, and
// the next call goes on from there.
func (a *aligned) fire(k int64, pause func() bool) bool {
	a.r.Start, a.r.End = a.windowStart(k), a.windowEnd(k)
	a.r.Time = a.r.End - 1
	if a.firing == fireNone {
		a.firing, a.firePos = fireExtras, 0
	}
	if a.firing == fireExtras {
		if a.mode == OnEndWithExtraWindow && len(a.extra) > 0 {
			for ; a.firePos < len(a.extra); a.firePos++ {
				slot := a.extra[a.firePos]
				if slot < len(a.running.count) && a.running.count[slot] > 0 {
					continue
				}
				if pause != nil && pause() {
					return false
				}
				a.r.Key = a.keyVals[slot]
				emitCells(&a.stats, a.emit, &a.r, a.empty, 0)
			}
			a.extra = a.extra[:0]
			a.extraEmitted = true
		}
		a.firing, a.firePos = fireSlots, 0
	}
	if a.running.total > 0 {
		if anyTrue(a.tierWnt) && !a.merged {
			a.scratch.fit(a.keys.Cap())
			for _, c := range a.scratch.cols {
				if c != nil {
					c.ResetAll()
				}
			}
			a.mergeRangeAll(a.scratch, a.tierWnt, k*a.s, k*a.s+a.n-1)
			a.merged = true
		}
		for ; a.firePos < len(a.running.count); a.firePos++ {
			slot := a.firePos
			if a.running.count[slot] == 0 || !a.keys.Live(slot) {
				continue
			}
			if pause != nil && pause() {
				return false
			}
			if a.overflows != nil && overflowed(a.overflows, slot) {
				// Retracting never brings an overflowed sum back (overflowColumn): its cells
				// are made again from window k's slices.
				for _, c := range a.running.cols {
					if c != nil {
						c.Reset(slot)
					}
				}
				a.mergeRange(a.running.cols, slot, slot, k*a.s, k*a.s+a.n-1)
			}
			a.r.Key = a.keyVals[slot]
			emitCells(&a.stats, a.emit, &a.r, a.out, slot)
			if a.mode == OnEndWithExtraWindow {
				a.extra = append(a.extra, slot)
			}
		}
	}
	a.firing, a.firePos, a.merged = fireNone, 0, false
	return true
}

// afterFirst is pause asked from its second time on (nil for nil): a part emits one result
// at least.
func afterFirst(pause func() bool) func() bool {
	if pause == nil {
		return nil
	}
	first := true
	return func() bool {
		if first {
			first = false
			return false
		}
		return pause()
	}
}

// step moves the running block from window next to the next window that
// holds data (or has an extra window to emit).
func (a *aligned) step() {
	k := a.next
	first, ok := a.firstSliceFrom((k + 1) * a.s)
	if !ok && len(a.extra) == 0 {
		a.hasNext = false
		a.resetRunning()
		return
	}
	if len(a.extra) == 0 && first > (k+1)*a.s+a.n-1 {
		// Nothing until a later window: jump there.
		a.next = slices.FloorDiv(first-a.n, a.s) + 1
		a.rebuildRunning()
		return
	}
	// Subtract the slices that leave (fire folded them in); the ones that
	// enter are folded in when window k+1 fires.
	a.running.fit(a.keys.Cap())
	a.level0.Range(k*a.s, (k+1)*a.s-1, func(_ int64, b *block) {
		kernels.SubInt64(a.running.count, b.count)
		a.running.total -= b.total
		for i, c := range a.running.cols {
			if c != nil {
				_ = c.RetractAll(b.cols[i])
			}
		}
	})
	a.next = k + 1
}

func (a *aligned) resetRunning() {
	a.running.fit(a.keys.Cap())
	clear(a.running.count)
	a.running.total = 0
	for _, c := range a.running.cols {
		if c != nil {
			c.ResetAll()
		}
	}
}

// firstSliceFrom returns the first live slice index >= j.
func (a *aligned) firstSliceFrom(j int64) (int64, bool) {
	var first int64
	found := false
	a.level0.Range(j, math.MaxInt64, func(idx int64, _ *block) {
		if !found {
			first, found = idx, true
		}
	})
	return first, found
}

// evictAndFree drops slices below j and frees the slots left with no data (after extra
// windows too, with no slice dropped); it reports whether any slice was dropped.
func (a *aligned) evictAndFree(j int64) bool {
	dropped := a.evictBelow(j)
	if !dropped && !a.extraEmitted {
		a.shrinkIfEmpty() // the last tier block may have gone
		return false
	}
	a.extraEmitted = false
	pending := make(map[int]bool, len(a.extra))
	for _, s := range a.extra {
		pending[s] = true
	}
	for slot := 0; slot < a.keys.Cap(); slot++ {
		if a.keys.Live(slot) && a.lastData[slot] < j && !pending[slot] {
			for _, c := range a.running.cols {
				if c != nil && slot < c.Len() {
					c.Reset(slot)
				}
			}
			a.free(slot)
		}
	}
	a.shrinkIfEmpty()
	return dropped
}

// shrinkFrom is the number of key slots from which a window operator with no key and no
// slice left lets go of its key table and the columns sized by it (shrinkIfEmpty).
var shrinkFrom = 1024

// shrinkIfEmpty lets go of the key table, the per-slot bookkeeping, the pooled blocks and the
// running and scratch blocks' columns, all sized by the most keys there have been, once no
// key and no slice is left: a tumbling window of 1,000,000 keys kept 81 MB of them, counted
// in the server's state, after the window closed (hostile round: four such idle deployments
// made a fifth fail on --max-total-state). A new key starts a new table.
func (a *aligned) shrinkIfEmpty() {
	if len(a.extra) > 0 || !a.keysGone() {
		return
	}
	a.dropKeys()
	a.running = &block{cols: make([]Column, len(a.aggs)), shared: -1}
	a.scratch = &block{cols: make([]Column, len(a.aggs)), shared: -1}
	for i, ag := range a.aggs {
		if a.tiered[i] {
			a.scratch.cols[i] = ag.Aggregator.NewColumn()
			a.out[i] = a.scratch.cols[i]
		} else {
			a.running.cols[i] = ag.Aggregator.NewColumn()
			a.out[i] = a.running.cols[i]
		}
	}
	a.overflows = overflowColumns(a.running.cols)
}

func anyTrue(b []bool) bool {
	for _, x := range b {
		if x {
			return true
		}
	}
	return false
}
