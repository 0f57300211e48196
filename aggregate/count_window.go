package aggregate

import (
	"fmt"
	"math"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// countWindow is aggregate-count: per key, a window of the last N events,
// emitted every M events once N have arrived (M = N: consecutive,
// non-overlapping windows). Arrival order decides; there is no lateness.
//
// A key's events are cut into count-slices of g = gcd(N, M) events; a window
// is the last N/g of them, so each event updates one count-slice partial.
// A window is answered by merging its N/g count-slices; a partial window at
// the end of input is not emitted (docs/semantics.md §4).
type countWindow struct {
	aggs  []Named
	masks []uint8
	emit  func(*Result)
	per   int64 // count-slices per window: N/g
	step  int64 // count-slices per slide: M/g
	g     int64 // events per count-slice

	keys    *slices.KeyTable
	keyVals [][]value.Value
	keyBuf  []byte
	filled  []int64 // per slot: completed count-slices

	cols       []Column // cell slot*per + position
	cnt        []int64  // events per cell
	minT, maxT []int64  // event time range per cell
	scratch    []Column

	seq   uint64
	w     int64
	stats Stats
	r     Result

	reserve   func(bytes int64) error // WindowSpec.Reserve
	cellBytes int64                   // a cell's bytes over cnt, minT, maxT and the columns
}

// maxGrowCells is the most cells a count window's columns grow by at once (with five
// aggregations, about 40 MB).
const maxGrowCells = 1 << 18

// CountSlices is how many count-slices a count window of n events sliding by m (m ≤ n, both
// positive) keeps per key: n / gcd(n, m), each of gcd(n, m) events. Its state per key grows
// with it (engine's validation bounds it).
func CountSlices(n, m int64) int64 { return n / gcd(n, m) }

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func newCountWindow(spec WindowSpec, aggs []Named, emit func(*Result)) (*countWindow, error) {
	n, m := spec.Count, spec.CountSlide
	if m == 0 {
		m = n
	}
	if n <= 0 || m <= 0 {
		return nil, fmt.Errorf("%w: count %d, slide %d: %w", ErrBadWindow, n, m, slices.ErrNonPositive)
	}
	if m > n {
		return nil, fmt.Errorf("%w: count window slide %d is larger than its count %d", ErrBadWindow, m, n)
	}
	g := gcd(n, m)
	c := &countWindow{
		aggs: aggs, masks: kindMasks(aggs), emit: emit,
		per: n / g, step: m / g, g: g,
		keys: slices.NewKeyTable(),
		w:    NoWatermark,
	}
	c.cols = make([]Column, len(aggs))
	c.scratch = make([]Column, len(aggs))
	for i, a := range aggs {
		c.cols[i] = newCountColumn(a.Aggregator)
		c.scratch[i] = a.Aggregator.NewColumn()
		c.scratch[i].Resize(1)
	}
	c.r.Values = make([]value.Value, len(aggs))
	c.reserve, c.cellBytes = spec.Reserve, countCellBytes(aggs)
	return c, nil
}

// eagerColumn is a Column with side arrays it makes at their first use otherwise (a sum's
// float parts at its first float), for all its cells at once: eagerSides makes them sized with
// the cells from the start. A count window's columns hold every key's cells, so such a first
// use would be a jump of the whole state in one event (round 23), past the reservation of the
// key's cells; made with the cells, they are reserved with them.
type eagerColumn interface{ eagerSides() }

// newCountColumn is agg's column for a count window: its side arrays eager.
func newCountColumn(agg Aggregator) Column {
	col := agg.NewColumn()
	if e, ok := col.(eagerColumn); ok {
		e.eagerSides()
	}
	return col
}

// countCellBytes estimates the bytes of one cell of a count window with aggs: 24 of its
// count and time range, and each aggregator's column's bytes a cell (measured on 64 cells).
func countCellBytes(aggs []Named) int64 {
	const cells = 64
	n := int64(24)
	for _, a := range aggs {
		col := newCountColumn(a.Aggregator)
		col.Resize(cells)
		n += (int64(col.SizeBytes()) + cells - 1) / cells
	}
	return n
}

func (c *countWindow) Watermark() int64 { return c.w }
func (c *countWindow) Stats() Stats     { return c.stats }
func (c *countWindow) StateBytes() int {
	n := c.keys.SizeBytes() + 24*cap(c.cnt) + 8*cap(c.filled)
	for _, col := range c.cols {
		n += col.SizeBytes()
	}
	for _, kv := range c.keyVals {
		n += valueHeader * len(kv)
	}
	return n
}

func (c *countWindow) Add(e *Event) error {
	c.stats.Events++
	if err := check(c.aggs, c.masks, e); err != nil {
		c.stats.Rejected++
		return err
	}
	var slot int
	var isNew bool
	key := canonKey(e.Key)
	c.keyBuf, slot, isNew = keySlot(c.keys, c.keyBuf, key)
	if isNew {
		// The columns of all keys are one array each: the new key's cells, when they are
		// past its end, grow it, doubling, but by at most maxGrowCells a time (a doubling of
		// a large state in one event is a large jump: 1 GiB of cells became 2 GiB, and the
		// process died, at the 1,025th key of 10,000 cells). The growth is reserved first.
		n := 0
		if cells := (slot + 1) * int(c.per); cells > len(c.cnt) {
			n = max(cells, len(c.cnt)+min(len(c.cnt), maxGrowCells))
			if c.reserve != nil {
				if err := c.reserve(int64(n-len(c.cnt)) * c.cellBytes); err != nil {
					c.keys.Free(slot)
					c.stats.Rejected++
					return err
				}
			}
		}
		for len(c.filled) <= slot {
			c.filled = append(c.filled, 0)
			c.keyVals = append(c.keyVals, nil)
		}
		c.keyVals[slot] = ownedKey(key)
		c.filled[slot] = 0
		if n > 0 {
			c.cnt, c.minT, c.maxT = resize(c.cnt, n), resize(c.minT, n), resize(c.maxT, n)
			for _, col := range c.cols {
				col.Resize(n)
			}
		}
	}
	c.seq++
	base := slot * int(c.per)
	cell := base + int(c.filled[slot]%c.per)
	if c.cnt[cell] == 0 {
		c.minT[cell], c.maxT[cell] = e.Time, e.Time
	}
	c.cnt[cell]++
	c.minT[cell] = min(c.minT[cell], e.Time)
	c.maxT[cell] = max(c.maxT[cell], e.Time)
	for i, col := range c.cols {
		col.Add(cell, e.Inputs[i], e.Time, c.seq)
	}
	if c.cnt[cell] < c.g {
		return nil
	}
	c.filled[slot]++
	f := c.filled[slot]
	if f >= c.per && (f-c.per)%c.step == 0 {
		c.emitWindow(slot, base)
	}
	if f >= c.per {
		// The count-slice to fill next is the oldest; it leaves the window now.
		next := base + int(f%c.per)
		c.cnt[next] = 0
		for _, col := range c.cols {
			col.Reset(next)
		}
	}
	if c.per == 1 {
		c.keys.Free(slot)
		c.keyVals[slot] = nil
	}
	return nil
}

func (c *countWindow) emitWindow(slot, base int) {
	start, end := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range c.scratch {
		s.Reset(0)
	}
	for p := 0; p < int(c.per); p++ {
		cell := base + p
		start = min(start, c.minT[cell])
		end = max(end, c.maxT[cell])
		for i, col := range c.cols {
			_ = c.scratch[i].Merge(0, col, cell)
		}
	}
	c.r.Key = c.keyVals[slot]
	c.r.Start, c.r.End = start, end+1
	c.r.Time = end
	emitCells(&c.stats, c.emit, &c.r, c.scratch, 0)
	for _, s := range c.scratch {
		s.ResetAll() // emitted: the window's merged values, and their arrays, are needed no more
	}
}

// NextClose implements Operator: count windows do not close on time.
func (c *countWindow) NextClose() (int64, bool) { return 0, false }

// AdvancePart implements Operator: Advance, which emits nothing.
func (c *countWindow) AdvancePart(w int64, _ func() bool) bool {
	c.Advance(w)
	return true
}

// Advance only records the watermark: count windows do not close on time.
func (c *countWindow) Advance(w int64) {
	if w > c.w {
		c.w = w
	}
}

// Flush drops the partial windows.
func (c *countWindow) Flush() { c.w = infinity }
