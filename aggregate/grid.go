package aggregate

import (
	"math"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// block holds, for one slice (or one tier block), every key slot's partials:
// an event count per slot and one column per aggregation. cols[i] is nil
// when aggregation i is not kept at this level.
type block struct {
	count []int64 // nil in tier blocks, which merge without looking at counts
	cols  []Column
	total int64 // sum of count
	tier  bool
	// shared is the index of a plain Count aggregation whose column is the
	// block's event count (they are the same numbers), or -1.
	shared int
}

// grid is the slice storage shared by the sliding, tumbling and hopping
// operators: slices (level 0) and tier blocks (levels 1..levels) of columns
// indexed by key slot, the key table, and per-slot bookkeeping.
type grid struct {
	aggs   []Named
	masks  []uint8 // accepted input kinds per aggregation
	slicer slices.Slicer
	n      int64 // slices per window
	levels int   // tier levels above the slices
	// tierAll: every aggregation is tiered (a tumbling window emitting OnEvent), so a
	// snapshot before version 4 wrote its variances tiered too (legacyVariances).
	tierAll bool
	tiered  []bool
	// shared0 is the index of the plain Count whose column is a slice's event
	// count (block.shared), or -1; add0 lists the other aggregations, whose
	// columns an event is added to in its slice.
	shared0 int
	add0    []int

	keys     *slices.KeyTable
	keyVals  [][]value.Value // group key values by slot
	lastData []int64         // by slot: the largest slice index holding data
	gen      []uint32        // by slot: bumped when the slot is freed
	keyBuf   []byte

	level0 slices.Store[*block]
	tiers  []slices.Store[*block] // tiers[l-1] is level l
	pool   [][]*block             // free blocks by level

	seq   uint64
	stats Stats
	w     int64 // watermark
}

func newGrid(aggs []Named, slicer slices.Slicer, n int64, tierAll bool) *grid {
	g := &grid{
		aggs:   aggs,
		masks:  kindMasks(aggs),
		slicer: slicer,
		n:      n,
		keys:   slices.NewKeyTable(),
		w:      NoWatermark,
	}
	g.tierAll = tierAll
	g.tiered = make([]bool, len(aggs))
	g.shared0 = -1
	anyTiered := false
	for i, a := range aggs {
		g.tiered[i] = tierAll || !a.Aggregator.Invertible()
		anyTiered = anyTiered || g.tiered[i]
		if c, ok := a.Aggregator.(*countAgg); ok && !c.when && g.shared0 < 0 {
			g.shared0 = i
		} else {
			g.add0 = append(g.add0, i)
		}
	}
	if anyTiered {
		g.levels = slices.Levels(n)
	}
	g.tiers = make([]slices.Store[*block], g.levels)
	g.pool = make([][]*block, g.levels+1)
	return g
}

// slot returns the key's slot, registering a new key. A known key of one
// string, the usual group key, is looked up inline.
func (g *grid) slot(key []value.Value) int {
	if len(key) == 1 && key[0].Kind() == value.KindString {
		if s, ok := g.keys.LookupString(key[0].Str()); ok {
			return s
		}
	}
	return g.slotSlow(key)
}

func (g *grid) slotSlow(key []value.Value) int {
	var s int
	var isNew bool
	key = canonKey(key)
	g.keyBuf, s, isNew = keySlot(g.keys, g.keyBuf, key)
	if isNew {
		for len(g.keyVals) <= s {
			g.keyVals = append(g.keyVals, nil)
			g.lastData = append(g.lastData, 0)
			g.gen = append(g.gen, 0)
		}
		g.keyVals[s] = ownedKey(key)
		g.lastData[s] = minSlice
	}
	return s
}

const minSlice = -1 << 62

// free releases a slot whose state is all gone.
func (g *grid) free(s int) {
	g.keys.Free(s)
	g.keyVals[s] = nil
	g.gen[s]++
}

// keysGone reports whether no key and no slice is left, in a table of shrinkFrom slots or
// more: what was sized by the keys may be let go (dropKeys). A tier block left then holds
// only slices evicted (evictBelow keeps one straddling its bound), which no window reads
// again.
func (g *grid) keysGone() bool {
	return g.keys.Count() == 0 && g.keys.Cap() >= shrinkFrom && g.level0.Len() == 0
}

// dropKeys lets go of the key table, the per-slot bookkeeping, the tier blocks left and the
// pooled blocks, all sized by the most keys there have been: a new key starts a new table.
func (g *grid) dropKeys() {
	for l := range g.tiers {
		g.tiers[l].EvictBelow(math.MaxInt64, func(int64, *block) {})
	}
	g.keys = slices.NewKeyTable()
	g.keyVals, g.lastData, g.gen, g.keyBuf = nil, nil, nil, nil
	for l := range g.pool {
		g.pool[l] = nil
	}
}

// newBlock returns an empty block for a level, recycled when possible.
func (g *grid) newBlock(level int) *block {
	if p := g.pool[level]; len(p) > 0 {
		b := p[len(p)-1]
		g.pool[level] = p[:len(p)-1]
		return b
	}
	b := &block{cols: make([]Column, len(g.aggs)), tier: level > 0, shared: -1}
	if level == 0 {
		b.shared = g.shared0
	}
	for i, a := range g.aggs {
		if level == 0 || g.tiered[i] {
			b.cols[i] = a.Aggregator.NewColumn()
		}
	}
	return b
}

func (g *grid) release(level int, b *block) {
	clear(b.count)
	b.total = 0
	for _, c := range b.cols { // a shared count column is cleared twice: harmless
		if c != nil {
			c.ResetAll()
		}
	}
	g.pool[level] = append(g.pool[level], b)
}

// fit makes the block hold cells for every slot. Columns grow to exactly
// the number of slots ever allocated (rounded up to 8), which is where the
// memory goes: the block of a slice holds one cell per key.
//
// Blocks built by hand (running and scratch blocks) set shared to -1.
func (b *block) fit(slots int) {
	if b.cells() >= slots {
		return
	}
	n := (slots + 7) &^ 7
	if !b.tier && b.shared < 0 {
		b.count = append(b.count, make([]int64, n-len(b.count))...)
	}
	for _, c := range b.cols {
		if c != nil {
			c.Resize(n)
		}
	}
	if b.shared >= 0 {
		b.count = b.cols[b.shared].(*countColumn).n
	}
}

// cells returns how many slots the block holds.
func (b *block) cells() int {
	if !b.tier {
		return len(b.count)
	}
	for _, c := range b.cols {
		if c != nil {
			return c.Len()
		}
	}
	return 0
}

// has reports whether slot s may hold data in b.
func (b *block) has(s int) bool {
	if b.tier {
		return s < b.cells()
	}
	return s < len(b.count) && b.count[s] > 0
}

// addTo adds the event to cell s of b (only the columns b keeps).
func (g *grid) addTo(b *block, s int, e *Event) {
	b.fit(g.keys.Cap())
	if !b.tier {
		b.count[s]++
		b.total++
	}
	for i, c := range b.cols {
		if c != nil && i != b.shared {
			c.Add(s, e.Inputs[i], e.Time, g.seq)
		}
	}
}

// add stores the event in its slice and the tier blocks above it and returns
// the slice's block. (The slice's part is addTo's, without its tests.)
func (g *grid) add(j int64, s int, e *Event) *block {
	b := g.level0.GetOrCreate(j, func() *block { return g.newBlock(0) })
	if s >= len(b.count) {
		b.fit(g.keys.Cap())
	}
	b.count[s]++
	b.total++
	for _, i := range g.add0 {
		b.cols[i].Add(s, e.Inputs[i], e.Time, g.seq)
	}
	for l := 1; l <= g.levels; l++ {
		tb := g.tiers[l-1].GetOrCreate(slices.Block(j, l), func() *block { return g.newBlock(l) })
		g.addTo(tb, s, e)
	}
	if j > g.lastData[s] {
		g.lastData[s] = j
	}
	return b
}

// evictBelow drops slices below index j and tier blocks wholly below it.
// It reports whether anything was dropped.
func (g *grid) evictBelow(j int64) bool {
	dropped := false
	g.level0.EvictBelow(j, func(_ int64, b *block) { g.release(0, b); dropped = true })
	for l := 1; l <= g.levels; l++ {
		// Block b is wholly below j when its last slice is < j.
		g.tiers[l-1].EvictBelow(slices.Block(j, l), func(_ int64, b *block) { g.release(l, b) })
	}
	return dropped
}

// mergeRange merges slot s's partials over slices [a, b] into cell dst of
// cols, using tier blocks for the tiered aggregations and slices for the
// others. Columns in cols that are nil are skipped.
func (g *grid) mergeRange(cols []Column, dst int, s int, a, b int64) (count int64) {
	if a > b {
		return 0
	}
	// Non-tiered aggregations and the count come from the slices.
	g.level0.Range(a, b, func(_ int64, blk *block) {
		if s >= len(blk.count) || blk.count[s] == 0 {
			return
		}
		count += blk.count[s]
		for i, c := range cols {
			if c != nil && (!g.tiered[i] || g.levels == 0) {
				_ = c.Merge(dst, blk.cols[i], s)
			}
		}
	})
	if g.levels == 0 {
		return count
	}
	slices.Cover(a, b, g.levels, func(level int, idx int64) {
		var blk *block
		var ok bool
		if level == 0 {
			blk, ok = g.level0.Get(idx)
		} else {
			blk, ok = g.tiers[level-1].Get(idx)
		}
		if !ok || !blk.has(s) {
			return
		}
		for i, c := range cols {
			if c != nil && g.tiered[i] {
				_ = c.Merge(dst, blk.cols[i], s)
			}
		}
	})
	return count
}

// mergeRangeAll merges every slot's partials over slices [a, b] into the
// same slots of out (the dense path of a watermark step), for the
// aggregations selected by want, and adds the counts into outCount.
func (g *grid) mergeRangeAll(out *block, want []bool, a, b int64) {
	if a > b {
		return
	}
	out.fit(g.keys.Cap())
	g.level0.Range(a, b, func(_ int64, blk *block) {
		kernels.AddInt64(out.count, blk.count)
		out.total += blk.total
		for i, c := range out.cols {
			if c != nil && want[i] && (!g.tiered[i] || g.levels == 0) {
				_ = c.MergeAll(blk.cols[i])
			}
		}
	})
	if g.levels == 0 {
		return
	}
	slices.Cover(a, b, g.levels, func(level int, idx int64) {
		var blk *block
		var ok bool
		if level == 0 {
			blk, ok = g.level0.Get(idx)
		} else {
			blk, ok = g.tiers[level-1].Get(idx)
		}
		if !ok {
			return
		}
		for i, c := range out.cols {
			if c != nil && want[i] && g.tiered[i] {
				_ = c.MergeAll(blk.cols[i])
			}
		}
	})
}

// emitCells fills r.Values from cell i of cols and sends r to emit.
func emitCells(st *Stats, emit func(*Result), r *Result, cols []Column, i int) {
	r.Errs = r.Errs[:0]
	for k, c := range cols {
		v, err := c.Result(i)
		if err != nil {
			v = value.Null()
			r.Errs = append(r.Errs, AggregationError{Index: k, Err: err})
		}
		r.Values[k] = v
	}
	st.Emitted++
	if len(r.Errs) > 0 {
		st.Errors++
	}
	emit(r)
	clear(r.Values) // emitted: r is reused, and must not keep the last result alive
	r.Key = nil
}

// stateBytes estimates the grid's heap bytes.
func (g *grid) stateBytes() int {
	n := g.keys.SizeBytes() + len(g.keyVals)*(24+8+4)
	for _, kv := range g.keyVals {
		n += len(kv) * valueHeader
	}
	sum := func(st *slices.Store[*block]) {
		for p := 0; p < st.Len(); p++ {
			_, b := st.At(p)
			n += blockBytes(b)
		}
	}
	sum(&g.level0)
	for l := range g.tiers {
		sum(&g.tiers[l])
	}
	return n
}

func blockBytes(b *block) int {
	n := 16*len(b.cols) + 72
	if b.shared < 0 {
		n += 8 * cap(b.count)
	}
	for _, c := range b.cols {
		if c != nil {
			n += c.SizeBytes()
		}
	}
	return n
}

// keySlot finds (or allocates) the slot of a group key. A key of one integer
// or one string is looked up directly; other keys by their binary encoding,
// built in buf (returned for reuse).
// canonKey is key with -0.0 as 0.0 wherever a float is 0 (in lists and records too): the
// same group key, as the expressions' -0.0 == 0.0 and SQL's GROUP BY have it (hostile round
// 137: two keys, each with its own windows). It is key itself when it holds no -0.0.
func canonKey(key []value.Value) []value.Value {
	for i, v := range key {
		if hasNegZero(v) {
			out := make([]value.Value, len(key))
			copy(out, key[:i])
			for j := i; j < len(key); j++ {
				out[j] = canonValue(key[j])
			}
			return out
		}
	}
	return key
}

func keySlot(kt *slices.KeyTable, buf []byte, key []value.Value) ([]byte, int, bool) {
	if len(key) == 1 {
		switch key[0].Kind() {
		case value.KindInt:
			s, isNew := kt.SlotInt(key[0].Int())
			return buf, s, isNew
		case value.KindString:
			s, isNew := kt.SlotString(key[0].Str())
			return buf, s, isNew
		}
	}
	buf = buf[:0]
	for _, v := range key {
		buf = value.AppendBinary(buf, v)
	}
	s, isNew := kt.Slot(buf)
	return buf, s, isNew
}
