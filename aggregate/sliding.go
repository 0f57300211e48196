package aggregate

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// sliding is aggregate-sliding: for an event in slice j the window is the n
// slices [j-n+1, j] of its key, and the event is emitted enriched with the
// window's value (docs/semantics.md §4).
//
// Per key, a running cell holds the invertible partials of the window that
// ends at the key's latest slice; it is moved forward by retracting the
// slices that leave and merging those that enter (subtract-on-evict). An
// out-of-order event's window differs from the running one by the few slices
// of its disorder, which are retracted or merged. Non-invertible partials are
// answered from tier blocks (slices.Cover).
//
// With emitWhenEventLeft, each slice j with data of a key leaves the key's
// window at slice i = j+n; when the watermark passes the end of slice i and
// the key has no event in slice i, the window [i-n+1, i] is emitted as a new
// event, down to the empty result when the key's last slice leaves.
type sliding struct {
	*grid
	emit  func(*Result)
	leave bool
	// paused: AdvancePart stopped part way through the leave timers of one time
	// (timers[0].at); they fire before anything else (snapshots keep it).
	paused bool

	running *block  // per slot: invertible partials over [latest-n+1, latest]
	latest  []int64 // per slot: the newest slice with an event
	// cover holds, per slot, the non-invertible (tiered) partials over the same running
	// window. Those of an order-free aggregation (orderFree: all but the variances) are
	// kept where covered[slot]: an event in the running window is added to them and a slice
	// entering it is merged, and a slice with data that leaves it makes them stale (covered
	// false), rebuilt from the tier blocks at the next result of the running window. An
	// event's own window is its key's running window unless it came out of order, so a key's
	// events cost an Add each and a rebuild per slice that leaves with data, instead of a
	// merge of the whole window's tier blocks per event (a CountDistinct of 20,000 events in
	// a window of a day took 31 s so, and 40,000 three minutes). The cover is not in
	// snapshots: a restored one is stale, and rebuilt gives the same results, as the
	// aggregations kept so do not depend on the order of their adds and merges; a variance's
	// float sums do, so its cover cell is made from the tier blocks at each result, as
	// before (its partial is of a fixed size). view: per aggregation, the running window's
	// column, running.cols[i] or cover.cols[i].
	cover     *block
	covered   []bool
	orderFree []bool
	recompute bool // some tiered aggregation is not order-free: its cover cell is made per result
	// overflows: the running columns that are overflowColumns (windowValue looks at them).
	overflows []overflowColumn
	view      []Column
	scratch   []Column
	cell      []Column // cols of scratch for one cell, reused for output
	timers    timerHeap
	tseq      uint64

	r Result
}

func newSliding(spec WindowSpec, aggs []Named, emit func(*Result)) (*sliding, error) {
	p, err := slices.Precision(spec.Length, 0, spec.Precision, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadWindow, err)
	}
	s := &sliding{
		grid:  newGrid(aggs, slices.Fixed{Width: p}, spec.Length/p, false),
		emit:  emit,
		leave: spec.EmitWhenEventLeft,
	}
	s.newRunning()
	s.scratch = make([]Column, len(aggs))
	for i, a := range aggs {
		s.scratch[i] = a.Aggregator.NewColumn()
		s.scratch[i].Resize(1)
	}
	s.r.Values = make([]value.Value, len(aggs))
	return s, nil
}

// newRunning makes the running and cover blocks, empty.
func (s *sliding) newRunning() {
	s.running = &block{cols: make([]Column, len(s.aggs)), shared: -1}
	s.cover = &block{cols: make([]Column, len(s.aggs)), shared: -1}
	s.view = make([]Column, len(s.aggs))
	s.orderFree = make([]bool, len(s.aggs))
	s.recompute = false
	for i, a := range s.aggs {
		c := a.Aggregator.NewColumn()
		if s.tiered[i] {
			s.cover.cols[i] = c
			_, variance := a.Aggregator.(*varianceAgg)
			s.orderFree[i] = !variance
			s.recompute = s.recompute || variance
		} else {
			s.running.cols[i] = c
		}
		s.view[i] = c
	}
	s.overflows = overflowColumns(s.running.cols)
	s.covered = nil
}

// fitRunning sizes the running and cover blocks for the key table's slots.
func (s *sliding) fitRunning() {
	n := s.keys.Cap()
	s.running.fit(n)
	s.cover.fit(n)
	if len(s.covered) < n {
		s.covered = append(s.covered, make([]bool, n-len(s.covered))...)
	}
}

func (s *sliding) Watermark() int64 { return s.w }
func (s *sliding) Stats() Stats     { return s.stats }
func (s *sliding) StateBytes() int {
	return s.stateBytes() + blockBytes(s.running) + blockBytes(s.cover) + cap(s.covered) + 8*cap(s.latest) + 40*cap(s.timers)
}

func (s *sliding) Add(e *Event) error {
	if s.paused {
		s.Advance(s.w) // a step paused part way ends first (AdvancePart goes on to its timers' time)
	}
	s.stats.Events++
	if e.Time < MinEventTime || e.Time > MaxEventTime {
		s.stats.Rejected++
		return fmt.Errorf("%w: %d", ErrEventTime, e.Time)
	}
	if err := check(s.aggs, s.masks, e); err != nil {
		s.stats.Rejected++
		return err
	}
	j := s.slicer.Index(e.Time)
	if s.w != NoWatermark && e.Time < s.w {
		s.stats.Late++
		// The event's own window: the n slices ending with its slice j.
		return &LateError{WindowStart: s.slicer.Start(j - s.n + 1), WindowEnd: s.slicer.Start(j + 1), Watermark: s.w}
	}
	s.seq++
	slot := s.slot(e.Key)
	for len(s.latest) <= slot {
		s.latest = append(s.latest, 0)
	}
	fresh := s.lastData[slot] == minSlice
	b := s.add(j, slot, e)
	s.fitRunning()
	switch {
	case fresh:
		s.latest[slot] = j
		s.resetRunning(slot)
		s.running.count[slot] = s.mergeRange(s.running.cols, slot, slot, j-s.n+1, j)
	case j > s.latest[slot]:
		s.moveLatest(slot, j)
	case j > s.latest[slot]-s.n:
		s.running.count[slot]++
		for i, c := range s.running.cols {
			if c != nil {
				c.Add(slot, e.Inputs[i], e.Time, s.seq)
			}
		}
		if s.covered[slot] {
			for i, c := range s.cover.cols {
				if c != nil && s.orderFree[i] {
					c.Add(slot, e.Inputs[i], e.Time, s.seq)
				}
			}
		}
	}
	if s.leave && b.count[slot] == 1 {
		s.tseq++
		heap.Push(&s.timers, timer{at: s.slicer.Start(j + s.n + 1), slot: slot, gen: s.gen[slot], i: j + s.n, seq: s.tseq})
	}

	// The event's own window [j-n+1, j].
	cols, cell := s.windowValue(slot, j)
	s.r.Key = s.keyVals[slot]
	s.r.Start, s.r.End = s.slicer.Start(j-s.n+1), s.slicer.Start(j+1)
	s.r.Time = e.Time
	s.r.Event = e
	emitCells(&s.stats, s.emit, &s.r, cols, cell)
	s.r.Event = nil
	return nil
}

// windowValue returns the columns and the cell that hold slot's partials over slices
// [i-n+1, i], for i >= latest-n+1 (the event's own window, or a leave window i > latest):
// for i = latest, slot's running cells (view, its cover rebuilt when stale); otherwise
// scratch cell 0, where it puts them.
//
// A running cell that overflowed (a float Sum past ±1.8e308: overflowColumn) is made again
// from its slices first, as retracting never brings it back.
func (s *sliding) windowValue(slot int, i int64) ([]Column, int) {
	latest := s.latest[slot]
	if s.overflows != nil && overflowed(s.overflows, slot) {
		for _, c := range s.running.cols {
			if c != nil {
				c.Reset(slot)
			}
		}
		s.mergeRange(s.running.cols, slot, slot, latest-s.n+1, latest)
	}
	if i == latest {
		s.fillCover(slot)
		return s.view, slot
	}
	for _, c := range s.scratch {
		c.Reset(0)
	}
	if s.overflows != nil && overflowed(s.overflows, slot) {
		// The running window overflows still: this window is made from its own slices.
		s.mergeRange(s.scratch, 0, slot, i-s.n+1, min(i, latest))
		return s.scratch, 0
	}
	for k, c := range s.running.cols {
		if c != nil {
			_ = s.scratch[k].Merge(0, c, slot)
		}
	}
	// Running covers [latest-n+1, latest]. Window i covers [i-n+1, i].
	if i < latest {
		s.adjust(slot, max(i+1, latest-s.n+1), latest, true) // running slices newer than the window
		s.adjust(slot, i-s.n+1, min(latest-s.n, i), false)   // older slices the running window dropped
	} else if i > latest {
		s.adjust(slot, latest-s.n+1, i-s.n, true) // slices that have left
	}
	s.tieredRange(slot, i-s.n+1, min(i, latest))
	return s.scratch, 0
}

// fillCover makes slot's cover cells hold its non-invertible partials over its running
// window: those of the order-free aggregations when stale, and those of the others, merged
// from the tier blocks.
func (s *sliding) fillCover(slot int) {
	if s.covered[slot] && !s.recompute {
		return // kept (or nothing tiered: covered alike)
	}
	if s.cell == nil {
		s.cell = make([]Column, len(s.aggs))
	}
	fill := false
	for k, c := range s.cover.cols {
		s.cell[k] = nil
		if c != nil && (!s.covered[slot] || !s.orderFree[k]) {
			c.Reset(slot)
			s.cell[k], fill = c, true
		}
	}
	if fill {
		latest := s.latest[slot]
		s.mergeTiered(s.cell, slot, slot, latest-s.n+1, latest)
	}
	s.covered[slot] = true
}

// adjust retracts (or merges) slot's invertible partials of slices [a, b]
// into scratch cell 0.
func (s *sliding) adjust(slot int, a, b int64, retract bool) {
	s.level0.Range(a, b, func(_ int64, blk *block) {
		if slot >= len(blk.count) || blk.count[slot] == 0 {
			return
		}
		for k, c := range blk.cols {
			if s.tiered[k] {
				continue
			}
			if retract {
				_ = s.scratch[k].Retract(0, c, slot)
			} else {
				_ = s.scratch[k].Merge(0, c, slot)
			}
		}
	})
}

// tieredRange merges slot's non-invertible partials over [a, b] into
// scratch cell 0.
func (s *sliding) tieredRange(slot int, a, b int64) {
	if !anyTrue(s.tiered) || a > b {
		return
	}
	if s.cell == nil {
		s.cell = make([]Column, len(s.aggs))
	}
	for k := range s.cell {
		s.cell[k] = nil
		if s.tiered[k] {
			s.cell[k] = s.scratch[k]
		}
	}
	s.mergeTiered(s.cell, 0, slot, a, b)
}

// mergeTiered merges slot's tiered aggregations over [a, b] into cell dst of cols.
func (s *sliding) mergeTiered(cols []Column, dst, slot int, a, b int64) {
	get := func(level int, idx int64) (*block, bool) {
		if level == 0 {
			return s.level0.Get(idx)
		}
		return s.tiers[level-1].Get(idx)
	}
	slices.Cover(a, b, s.levels, func(level int, idx int64) {
		blk, ok := get(level, idx)
		if !ok || !blk.has(slot) {
			return
		}
		for k, c := range cols {
			if c != nil {
				_ = c.Merge(dst, blk.cols[k], slot)
			}
		}
	})
}

// moveLatest moves slot's running window from ending at latest to ending at j > latest.
func (s *sliding) moveLatest(slot int, j int64) {
	old := s.latest[slot]
	s.level0.Range(old-s.n+1, min(old, j-s.n), func(_ int64, blk *block) {
		s.retractRunning(slot, blk)
	})
	s.level0.Range(max(old+1, j-s.n+1), j, func(_ int64, blk *block) {
		if slot >= len(blk.count) || blk.count[slot] == 0 {
			return
		}
		s.running.count[slot] += blk.count[slot]
		for k, c := range s.running.cols {
			if c != nil {
				_ = c.Merge(slot, blk.cols[k], slot)
			}
		}
		if s.covered[slot] {
			for k, c := range s.cover.cols {
				if c != nil && s.orderFree[k] {
					_ = c.Merge(slot, blk.cols[k], slot)
				}
			}
		}
	})
	s.latest[slot] = j
}

// retractRunning removes blk's partials of slot from the running cell; its cover cells,
// which cannot retract, are stale.
func (s *sliding) retractRunning(slot int, blk *block) {
	if slot >= len(blk.count) || blk.count[slot] == 0 {
		return
	}
	s.covered[slot] = false
	s.running.count[slot] -= blk.count[slot]
	if s.running.count[slot] == 0 {
		s.resetRunning(slot)
		return
	}
	for k, c := range s.running.cols {
		if c != nil {
			_ = c.Retract(slot, blk.cols[k], slot)
		}
	}
}

func (s *sliding) resetRunning(slot int) {
	s.running.count[slot] = 0
	for _, c := range s.view {
		c.Reset(slot)
	}
	s.covered[slot] = false
}

// NextClose implements Operator: the first leave timer's time (a sliding window emits on
// events otherwise).
func (s *sliding) NextClose() (int64, bool) {
	if !s.leave || len(s.timers) == 0 {
		return 0, false
	}
	return s.timers[0].at, true
}

func (s *sliding) Advance(w int64) { s.AdvancePart(w, nil) }

// AdvancePart implements Operator: a step pauses between two leave timers' windows; the
// watermark moves to w once every timer up to it has fired.
func (s *sliding) AdvancePart(w int64, pause func() bool) bool {
	if s.paused && len(s.timers) > 0 {
		w = max(w, s.timers[0].at) // a step paused part way goes on to the timers of its time at least
	}
	if w <= s.w {
		return true
	}
	pause = afterFirst(pause)
	for s.leave && len(s.timers) > 0 && (w == infinity || s.timers[0].at <= w) {
		if pause != nil && s.leaves(s.timers[0]) && pause() {
			s.paused = true
			return false
		}
		s.fireLeave(heap.Pop(&s.timers).(timer))
	}
	s.w, s.paused = w, false
	// Keep the slices a future event's window may need: those from the
	// watermark's slice back n-1 slices (and one more for leave timers).
	bound := int64(math.MaxInt64 >> 2)
	if s.w != infinity {
		bound = s.slicer.Index(s.w) - s.n + 1
		if s.leave {
			bound--
		}
	}
	first, ok := s.level0.First()
	if !ok || first >= bound {
		s.shrinkIfEmpty() // the last tier block may have gone
		return true
	}
	s.level0.Range(first, bound-1, func(idx int64, blk *block) {
		for slot, c := range blk.count {
			if c > 0 && slot < len(s.latest) && idx > s.latest[slot]-s.n {
				s.retractRunning(slot, blk)
			}
		}
	})
	s.evictBelow(bound)
	for _, c := range s.scratch {
		c.ResetAll() // the last window emitted: its values (a List's entries) and their arrays are needed no more
	}
	for slot := 0; slot < s.keys.Cap(); slot++ {
		if s.keys.Live(slot) && s.lastData[slot] < bound {
			s.resetRunning(slot)
			s.free(slot)
		}
	}
	s.shrinkIfEmpty()
	return true
}

// shrinkIfEmpty lets go of what the keys sized once no key, slice or timer is left, as a
// tumbling window's (aligned.shrinkIfEmpty).
func (s *sliding) shrinkIfEmpty() {
	if len(s.timers) == 0 && s.keysGone() {
		s.dropKeys()
		s.newRunning()
		s.latest, s.timers = nil, nil
	}
}

// fireLeave emits the window at slice t.i for t.slot when a slice with data
// left it (slice i-n) and the key has no event in slice i itself (whose
// own event was emitted enriched with that window). Events of the key in
// later slices do not cancel it: at slice i, the key's latest event was
// before i. The watermark has passed the end of slice i, so no event of
// slice i can still come.
func (s *sliding) fireLeave(t timer) {
	if !s.leaves(t) {
		return
	}
	slot := t.slot
	cols, cell := s.windowValue(slot, t.i)
	s.r.Key = s.keyVals[slot]
	s.r.Start, s.r.End = s.slicer.Start(t.i-s.n+1), s.slicer.Start(t.i+1)
	s.r.Time = s.r.End - 1
	emitCells(&s.stats, s.emit, &s.r, cols, cell)
}

// leaves reports whether leave timer t emits (fireLeave).
func (s *sliding) leaves(t timer) bool {
	slot := t.slot
	if !s.keys.Live(slot) || s.gen[slot] != t.gen {
		return false
	}
	blk, ok := s.level0.Get(t.i - s.n)
	if !ok || slot >= len(blk.count) || blk.count[slot] == 0 {
		return false
	}
	own, ok := s.level0.Get(t.i)
	return !ok || slot >= len(own.count) || own.count[slot] == 0
}

func (s *sliding) Flush() { s.Advance(infinity) }

// timer is a pending emitWhenEventLeft emission.
type timer struct {
	at   int64 // watermark at which it fires, ms
	slot int
	gen  uint32
	i    int64 // the window's last slice
	seq  uint64
}

type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(a, b int) bool {
	if h[a].at != h[b].at {
		return h[a].at < h[b].at
	}
	return h[a].seq < h[b].seq
}
func (h timerHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
