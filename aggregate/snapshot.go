package aggregate

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/scenario-server/scenario-server/slices"
	"github.com/scenario-server/scenario-server/value"
)

// Snapshots. An operator's snapshot is its whole state: watermark, arrival
// counter, counters, the key table with its slot numbering (so that a
// restored operator emits in the same order), and every slice, tier block,
// running cell, timer and session, cells encoded by the columns themselves.
// Restoring a snapshot into a new operator built with the same spec and
// aggregations, then feeding it what came after, gives exactly what the
// original would have given (docs/semantics.md §6; TestPropertySnapshotRestore).
//
// The format starts with a version byte and the operator kind, so that a
// snapshot restored into an operator of another kind is refused. Version 2
// adds the slice geometry of the operators that keep slices (the first two
// slice starts), so that a snapshot taken with another precision is refused
// instead of read as slices of the wrong width. Version 1 snapshots, which
// lack it, are still read, except a hopping window's whose precision is not
// the one the version 1 rule gave (60 s, or 1 s when the length or slide is
// not whole minutes): hopping windows now slice by their slide. Version 3 adds,
// at the end of a tumbling or hopping window's snapshot, how many slices of
// the next window to close its running block holds (before version 3 it held
// them all; now the slices that enter are folded in when the window fires).
// Version 4 writes the variances (VarPop, VarSamp, StddevPop, StddevSamp) as
// the aggregations answered from tier blocks they now are, not as invertible
// ones with a running cell; an earlier snapshot is read as it was written and
// its variances' tier blocks are then made from its slices (legacyVariances). Version 5
// adds, at the end of a tumbling or hopping window's snapshot, where a close paused part way
// is (aligned.firing, firePos; AdvancePart), and at the end of a sliding or session window's
// whether a step paused part way through the timers or closes of one time: before it none
// was ever paused. Only a snapshot of an operator paused so is of version 5; the others are
// written as version 4 (appendHeader).

const snapshotVersion = 5

// ErrSnapshotMismatch is returned by Restore for a snapshot of another kind
// of operator, another number of aggregations, or another version.
var ErrSnapshotMismatch = errors.New("aggregate: snapshot is of another operator")

// appendHeader appends a snapshot's header, of version snapshotVersion when paused (a step
// paused part way, which only version 5 says), and otherwise of version 4, which holds the
// same and which the server before version 5 reads: that server, started again on a data
// directory the later one wrote, failed every aggregate deployment (hostile round 146).
func appendHeader(b []byte, kind WindowKind, aggs int, paused bool) []byte {
	version := byte(snapshotVersion)
	if !paused {
		version = 4
	}
	b = append(b, version, byte(kind))
	return binary.AppendUvarint(b, uint64(aggs))
}

// readHeader reads a snapshot's header and returns its version (1 to snapshotVersion).
func readHeader(r *slices.Reader, kind WindowKind, aggs int) (byte, error) {
	rest := r.Rest()
	if len(rest) < 2 {
		return 0, fmt.Errorf("%w: truncated header", slices.ErrCorruptSnapshot)
	}
	version := rest[0]
	if version < 1 || version > snapshotVersion || WindowKind(rest[1]) != kind {
		return 0, fmt.Errorf("%w: version %d kind %d, want version %d kind %d", ErrSnapshotMismatch, rest[0], rest[1], snapshotVersion, kind)
	}
	r.Skip(2)
	if n := r.Uvarint(); int(n) != aggs || r.Err() != nil {
		return 0, fmt.Errorf("%w: %d aggregations, want %d", ErrSnapshotMismatch, n, aggs)
	}
	return version, nil
}

// appendGeometry writes the slice geometry: the starts of slices 0 and 1.
func (g *grid) appendGeometry(b []byte) []byte {
	b = binary.AppendVarint(b, g.slicer.Start(0))
	return binary.AppendVarint(b, g.slicer.Start(1))
}

// checkGeometry reads the slice geometry of a version 2 snapshot and refuses one of other
// slices. A version 1 snapshot has none: it is taken as of the same slices, but for a
// hopping window (slide slices a window) whose width the version 1 rule would not have
// chosen.
func (g *grid) checkGeometry(r *slices.Reader, version byte, kind WindowKind, slide int64) error {
	s0, s1 := g.slicer.Start(0), g.slicer.Start(1)
	if version >= 2 {
		a, b := r.Varint(), r.Varint()
		if err := r.Err(); err != nil {
			return err
		}
		if a != s0 || b != s1 {
			return fmt.Errorf("%w: slices of %d ms from %d, the node has %d ms from %d (another precision)", ErrSnapshotMismatch, b-a, a, s1-s0, s0)
		}
		return nil
	}
	if kind != Hopping {
		return nil
	}
	width := s1 - s0
	length, step := g.n*width, slide*width
	old := int64(slices.Second)
	if length%slices.Minute == 0 && step%slices.Minute == 0 {
		old = slices.Minute
	}
	if width != old {
		return fmt.Errorf("%w: a hopping window's snapshot taken with %d ms slices, before hopping windows sliced by their slide (%d ms): deploy again to start with empty windows", ErrSnapshotMismatch, old, width)
	}
	return nil
}

func appendStats(b []byte, s Stats) []byte {
	for _, v := range []int64{s.Events, s.Late, s.PartlyLate, s.Rejected, s.Emitted, s.Errors} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

func readStats(r *slices.Reader) Stats {
	return Stats{Events: r.Varint(), Late: r.Varint(), PartlyLate: r.Varint(), Rejected: r.Varint(), Emitted: r.Varint(), Errors: r.Varint()}
}

// appendKeyVals appends the group key values of every slot (nil for free ones).
func appendKeyVals(b []byte, kv [][]value.Value) []byte {
	b = binary.AppendUvarint(b, uint64(len(kv)))
	for _, k := range kv {
		if k == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = value.AppendBinary(b, value.List(k))
	}
	return b
}

func readKeyVals(r *slices.Reader, slots int) [][]value.Value {
	n := r.Len(slots)
	kv := make([][]value.Value, n)
	for i := range kv {
		if !r.Bool() {
			continue
		}
		v, rest, err := value.DecodeBinary(r.Rest())
		if err != nil || v.Kind() != value.KindList {
			r.Fail("group key of slot %d", i)
			return kv
		}
		r.Skip(len(r.Rest()) - len(rest))
		kv[i] = v.List()
		if kv[i] == nil {
			kv[i] = []value.Value{}
		}
	}
	return kv
}

func appendInts(b []byte, xs []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(xs)))
	for _, x := range xs {
		b = binary.AppendVarint(b, x)
	}
	return b
}

func readInts(r *slices.Reader) []int64 {
	n := r.Len(len(r.Rest()))
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = r.Varint()
	}
	return xs
}

// appendCells appends cells [0, n) of every non-nil column.
func appendCells(b []byte, cols []Column, n int) []byte {
	b = binary.AppendUvarint(b, uint64(n))
	for _, c := range cols {
		if c == nil {
			continue
		}
		for i := 0; i < n; i++ {
			b = c.AppendCell(b, i)
		}
	}
	return b
}

// readCells reads cells into the non-nil columns, resized to hold them. Each
// cell takes at least a byte, so the rest of the input bounds their number;
// without columns, bound does.
func readCells(r *slices.Reader, cols []Column, bound int) int {
	for _, c := range cols {
		if c != nil {
			bound = len(r.Rest())
			break
		}
	}
	n := r.Len(bound)
	for _, c := range cols {
		if c == nil {
			continue
		}
		c.Resize(max(c.Len(), n))
		for i := 0; i < n && r.Err() == nil; i++ {
			rest, err := c.DecodeCell(i, r.Rest())
			if err != nil {
				r.Fail("cell %d: %v", i, err)
				return 0
			}
			r.Skip(len(r.Rest()) - len(rest))
		}
	}
	return n
}

// appendBlock appends a block: its counts (slices and running blocks) and cells.
func appendBlock(b []byte, blk *block) []byte {
	n := blk.cells()
	b = binary.AppendVarint(b, blk.total)
	if !blk.tier {
		b = appendInts(b, blk.count[:n])
	}
	return appendCells(b, blk.cols, n)
}

// readBlock fills blk (fresh, from newBlock or a running block) from r.
func readBlock(r *slices.Reader, blk *block) {
	blk.total = r.Varint()
	var counts []int64
	if !blk.tier {
		counts = readInts(r)
	}
	n := readCells(r, blk.cols, len(counts))
	if r.Err() != nil {
		return
	}
	if !blk.tier {
		if len(counts) != n {
			r.Fail("%d counts for %d cells", len(counts), n)
			return
		}
		blk.fit(n)
		copy(blk.count, counts)
	}
}

// appendGrid appends the state every grid-based operator shares.
func (g *grid) appendGrid(b []byte) []byte {
	b = binary.AppendVarint(b, g.w)
	b = binary.AppendUvarint(b, g.seq)
	b = appendStats(b, g.stats)
	b = g.keys.AppendSnapshot(b)
	b = appendKeyVals(b, g.keyVals)
	b = appendInts(b, g.lastData)
	b = binary.AppendUvarint(b, uint64(len(g.gen)))
	for _, x := range g.gen {
		b = binary.AppendUvarint(b, uint64(x))
	}
	levels := []*slices.Store[*block]{&g.level0}
	for l := range g.tiers {
		levels = append(levels, &g.tiers[l])
	}
	for _, st := range levels {
		b = binary.AppendUvarint(b, uint64(st.Len()))
		for p := 0; p < st.Len(); p++ {
			idx, blk := st.At(p)
			b = binary.AppendVarint(b, idx)
			b = appendBlock(b, blk)
		}
	}
	return b
}

// legacyVariances lists, for a snapshot before version 4, the aggregations it wrote as
// invertible and are now tiered: the variances (nil when there are none, or for a later
// snapshot). Such a snapshot has no tier blocks of them, no tier levels at all when they
// were its only aggregations that needed some, and their cells in the running block.
func (g *grid) legacyVariances(version byte) []bool {
	if version >= 4 || g.tierAll {
		return nil // a grid that tiers every aggregation wrote its variances tiered already
	}
	var legacy []bool
	for i, a := range g.aggs {
		if _, ok := a.Aggregator.(*varianceAgg); ok {
			if legacy == nil {
				legacy = make([]bool, len(g.aggs))
			}
			legacy[i] = true
		}
	}
	return legacy
}

// readLegacy reads a block written before version 4 into blk: with the columns of legacy
// hidden in a tier block (written without them; they are then sized as the others), and
// given a column of their own, read and then dropped, in a running block (written with
// them). aggs are the grid's aggregations.
func readLegacy(r *slices.Reader, blk *block, legacy []bool, running bool, aggs []Named) {
	if legacy == nil {
		readBlock(r, blk)
		return
	}
	saved := append([]Column(nil), blk.cols...)
	for i, on := range legacy {
		switch {
		case on && blk.tier:
			blk.cols[i] = nil
		case on && running && blk.cols[i] == nil:
			blk.cols[i] = aggs[i].Aggregator.NewColumn()
		}
	}
	readBlock(r, blk)
	n := blk.cells()
	copy(blk.cols, saved)
	if blk.tier {
		for i, on := range legacy {
			if on && blk.cols[i] != nil {
				blk.cols[i].Resize(n)
			}
		}
	}
}

// tierLegacy makes the tier blocks of the legacy aggregations from the slices, once a
// snapshot before version 4 has been read: each slice's cells merged into the block of each
// level above it, as Add would have added its events. (Merging rounds as adding does not:
// the variances of windows that began before the restore may differ in their last bits from
// an uninterrupted run's.)
func (g *grid) tierLegacy(legacy []bool) {
	if legacy == nil {
		return
	}
	for p := 0; p < g.level0.Len(); p++ {
		j, blk := g.level0.At(p)
		for l := 1; l <= g.levels; l++ {
			tb := g.tiers[l-1].GetOrCreate(slices.Block(j, l), func() *block { return g.newBlock(l) })
			tb.fit(g.keys.Cap())
			for i, on := range legacy {
				if !on {
					continue
				}
				for s := range min(len(blk.count), tb.cells()) {
					if blk.count[s] > 0 {
						_ = tb.cols[i].Merge(s, blk.cols[i], s)
					}
				}
			}
		}
	}
}

// readGrid restores what appendGrid wrote into a new grid; legacy is legacyVariances'.
func (g *grid) readGrid(r *slices.Reader, legacy []bool) {
	g.w = r.Varint()
	g.seq = r.Uvarint()
	g.stats = readStats(r)
	g.keys = slices.RestoreKeyTable(r)
	slots := g.keys.Cap()
	g.keyVals = readKeyVals(r, slots)
	g.lastData = readInts(r)
	ng := r.Len(slots)
	g.gen = make([]uint32, ng)
	for i := range g.gen {
		g.gen[i] = uint32(r.Uvarint())
	}
	if r.Err() == nil && (len(g.keyVals) != slots || len(g.lastData) != slots || ng != slots) {
		r.Fail("per-slot state for %d slots", slots)
	}
	levels := g.levels
	if legacy != nil {
		// Written with the levels the aggregations other than the legacy ones needed.
		levels = 0
		for i, t := range g.tiered {
			if t && !legacy[i] {
				levels = g.levels
			}
		}
	}
	for level := 0; level <= levels && r.Err() == nil; level++ {
		st := &g.level0
		if level > 0 {
			st = &g.tiers[level-1]
		}
		n := r.Len(len(r.Rest()))
		last := int64(0)
		for k := 0; k < n && r.Err() == nil; k++ {
			idx := r.Varint()
			if k > 0 && idx <= last {
				r.Fail("blocks out of order")
				return
			}
			last = idx
			blk := st.GetOrCreate(idx, func() *block { return g.newBlock(level) })
			readLegacy(r, blk, legacy, false, g.aggs)
		}
	}
	if r.Err() == nil {
		g.tierLegacy(legacy)
	}
}

// AppendSnapshot implements Operator.
func (a *aligned) AppendSnapshot(b []byte) []byte {
	b = appendHeader(b, a.kind, len(a.aggs), a.firing != fireNone)
	b = a.appendGeometry(b)
	b = a.appendGrid(b)
	b = slices.AppendBool(b, a.hasNext)
	b = binary.AppendVarint(b, a.next)
	b = appendBlock(b, a.running)
	b = binary.AppendUvarint(b, uint64(len(a.extra)))
	for _, s := range a.extra {
		b = binary.AppendUvarint(b, uint64(s))
	}
	// Version 3: how many slices of window next the running block holds.
	var folded int64
	if a.hasNext {
		folded = a.folded - a.next*a.s
	}
	b = binary.AppendUvarint(b, uint64(folded))
	if a.firing == fireNone {
		return b // version 4
	}
	// Version 5: a close paused part way.
	b = binary.AppendUvarint(b, uint64(a.firing))
	return binary.AppendUvarint(b, uint64(a.firePos))
}

// Restore implements Operator.
func (a *aligned) Restore(snapshot []byte) error {
	r := slices.NewReader(snapshot)
	version, err := readHeader(r, a.kind, len(a.aggs))
	if err != nil {
		return err
	}
	if err := a.checkGeometry(r, version, a.kind, a.s); err != nil {
		return err
	}
	legacy := a.legacyVariances(version)
	a.readGrid(r, legacy)
	a.hasNext = r.Bool()
	a.next = r.Varint()
	readLegacy(r, a.running, legacy, true, a.aggs)
	ne := r.Len(a.keys.Cap())
	a.extra = a.extra[:0]
	for range ne {
		a.extra = append(a.extra, r.Len(a.keys.Cap()-1))
	}
	// Before version 3 the running block held the whole of window next.
	folded := a.n
	if version >= 3 {
		folded = int64(r.Len(int(a.n)))
	}
	a.folded = a.next*a.s + folded
	a.firing, a.firePos, a.merged = fireNone, 0, false
	if version >= 5 {
		a.firing = firePhase(r.Len(int(fireSlots)))
		bound := len(a.extra)
		if a.firing == fireSlots {
			bound = a.keys.Cap()
		}
		a.firePos = r.Len(bound)
		if r.Err() == nil && (a.firing != fireNone && (!a.hasNext || a.mode == OnEvent) || a.firing == fireNone && a.firePos != 0) {
			r.Fail("a close paused at phase %d, position %d", a.firing, a.firePos)
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", slices.ErrCorruptSnapshot, len(r.Rest()))
	}
	a.watermarkMoved()
	return nil
}

// AppendSnapshot implements Operator.
func (s *sliding) AppendSnapshot(b []byte) []byte {
	b = appendHeader(b, Sliding, len(s.aggs), s.paused)
	b = s.appendGeometry(b)
	b = s.appendGrid(b)
	b = appendBlock(b, s.running)
	b = appendInts(b, s.latest)
	b = binary.AppendUvarint(b, s.tseq)
	b = binary.AppendUvarint(b, uint64(len(s.timers)))
	for _, t := range s.timers {
		b = binary.AppendVarint(b, t.at)
		b = binary.AppendUvarint(b, uint64(t.slot))
		b = binary.AppendUvarint(b, uint64(t.gen))
		b = binary.AppendVarint(b, t.i)
		b = binary.AppendUvarint(b, t.seq)
	}
	if !s.paused {
		return b // version 4
	}
	return slices.AppendBool(b, true) // version 5
}

// Restore implements Operator.
func (s *sliding) Restore(snapshot []byte) error {
	r := slices.NewReader(snapshot)
	version, err := readHeader(r, Sliding, len(s.aggs))
	if err != nil {
		return err
	}
	if err := s.checkGeometry(r, version, Sliding, 0); err != nil {
		return err
	}
	legacy := s.legacyVariances(version)
	s.readGrid(r, legacy)
	readLegacy(r, s.running, legacy, true, s.aggs)
	s.latest = readInts(r)
	if r.Err() == nil && len(s.latest) != s.keys.Cap() {
		// One for each slot (Add grows it with the key table): a timer's slot past it
		// panicked when it fired (FuzzRestore).
		r.Fail("%d latest slices for %d key slots", len(s.latest), s.keys.Cap())
	}
	s.tseq = r.Uvarint()
	nt := r.Len(len(r.Rest()))
	s.timers = s.timers[:0]
	for range nt {
		t := timer{at: r.Varint(), slot: r.Len(s.keys.Cap() - 1), gen: uint32(r.Uvarint()), i: r.Varint(), seq: r.Uvarint()}
		s.timers = append(s.timers, t)
	}
	s.paused = false
	if version >= 5 {
		s.paused = r.Bool()
		if r.Err() == nil && s.paused && len(s.timers) == 0 {
			r.Fail("a step paused with no leave timer")
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", slices.ErrCorruptSnapshot, len(r.Rest()))
	}
	heap.Init(&s.timers)
	s.covered = nil // stale: rebuilt from the tier blocks when needed
	s.fitRunning()
	return nil
}

// AppendSnapshot implements Operator.
func (s *sessionOp) AppendSnapshot(b []byte) []byte {
	b = appendHeader(b, Session, len(s.aggs), s.paused)
	b = binary.AppendVarint(b, s.w)
	b = binary.AppendUvarint(b, s.seq)
	b = appendStats(b, s.stats)
	b = s.keys.AppendSnapshot(b)
	b = appendKeyVals(b, s.keyVals)
	b = binary.AppendUvarint(b, uint64(len(s.gen)))
	for _, x := range s.gen {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = appendCells(b, s.cols, s.cols[0].Len())
	b = binary.AppendUvarint(b, uint64(len(s.freeCells)))
	for _, c := range s.freeCells {
		b = binary.AppendUvarint(b, uint64(c))
	}
	for slot := range s.open {
		b = binary.AppendUvarint(b, uint64(len(s.open[slot])))
		for _, ss := range s.open[slot] {
			b = binary.AppendUvarint(b, ss.id)
			b = binary.AppendVarint(b, ss.start)
			b = binary.AppendVarint(b, ss.last)
			b = binary.AppendUvarint(b, uint64(ss.cell))
		}
		tb := s.tombs[slot]
		b = slices.AppendBool(b, tb.set)
		b = binary.AppendVarint(b, tb.start)
		b = binary.AppendVarint(b, tb.last)
	}
	b = binary.AppendUvarint(b, s.hseq)
	b = binary.AppendUvarint(b, s.nextID)
	b = binary.AppendUvarint(b, uint64(len(s.closing)))
	for _, c := range s.closing {
		b = binary.AppendVarint(b, c.at)
		b = binary.AppendUvarint(b, uint64(c.slot))
		b = binary.AppendUvarint(b, uint64(c.gen))
		b = binary.AppendUvarint(b, c.id)
		b = slices.AppendBool(b, c.tomb)
		b = binary.AppendUvarint(b, c.seq)
	}
	// The tombstones of sessions closed by endSessionCondition, per slot
	// (absent from snapshots written before they existed).
	for slot := range s.open {
		b = binary.AppendUvarint(b, uint64(len(s.condTombs[slot])))
		for _, tb := range s.condTombs[slot] {
			b = binary.AppendVarint(b, tb.start)
			b = binary.AppendVarint(b, tb.last)
		}
	}
	// The close order of each open session (absent from snapshots written before it was
	// kept: Restore finds it in the heap, which then held an entry at each session's end).
	for slot := range s.open {
		for _, ss := range s.open[slot] {
			b = binary.AppendUvarint(b, ss.dseq)
		}
	}
	if !s.paused {
		return b // version 4
	}
	return slices.AppendBool(b, true) // version 5: its last byte
}

// Restore implements Operator.
func (s *sessionOp) Restore(snapshot []byte) error {
	version, err := readHeader(slices.NewReader(snapshot), Session, len(s.aggs))
	if err != nil {
		return err
	}
	s.paused = false
	if version >= 5 {
		// Its last byte says whether a step paused part way (AdvancePart); the sections
		// before it may end early in older snapshots, read as they were.
		switch snapshot[len(snapshot)-1] {
		case 0:
		case 1:
			s.paused = true
		default:
			return fmt.Errorf("%w: bad boolean", slices.ErrCorruptSnapshot)
		}
		snapshot = snapshot[:len(snapshot)-1]
	}
	r := slices.NewReader(snapshot)
	if _, err := readHeader(r, Session, len(s.aggs)); err != nil {
		return err
	}
	s.w = r.Varint()
	s.seq = r.Uvarint()
	s.stats = readStats(r)
	s.keys = slices.RestoreKeyTable(r)
	slots := s.keys.Cap()
	s.keyVals = readKeyVals(r, slots)
	ng := r.Len(slots)
	s.gen = make([]uint32, ng)
	for i := range s.gen {
		s.gen[i] = uint32(r.Uvarint())
	}
	cells := readCells(r, s.cols, 0)
	nf := r.Len(cells)
	s.freeCells = s.freeCells[:0]
	for range nf {
		s.freeCells = append(s.freeCells, r.Len(cells-1))
	}
	s.open = make([][]sess, slots)
	s.tombs = make([]tomb, slots)
	for slot := 0; slot < slots && r.Err() == nil; slot++ {
		n := r.Len(cells)
		for range n {
			ss := sess{id: r.Uvarint(), start: r.Varint(), last: r.Varint(), cell: r.Len(cells - 1)}
			s.open[slot] = append(s.open[slot], ss)
		}
		s.tombs[slot] = tomb{set: r.Bool(), start: r.Varint(), last: r.Varint()}
	}
	s.hseq = r.Uvarint()
	s.nextID = r.Uvarint()
	nc := r.Len(len(r.Rest()))
	s.closing = s.closing[:0]
	for range nc {
		c := closeAt{at: r.Varint(), slot: r.Len(slots), gen: uint32(r.Uvarint()), id: r.Uvarint(), tomb: r.Bool(), seq: r.Uvarint()}
		s.closing = append(s.closing, c)
	}
	s.condTombs = make([][]tomb, slots)
	if len(r.Rest()) > 0 {
		for slot := 0; slot < slots && r.Err() == nil; slot++ {
			n := r.Len(len(r.Rest()))
			for range n {
				// In place by start: snapshots before the list was kept by start list
				// them in closing order.
				s.condTombs[slot] = insertTomb(s.condTombs[slot], tomb{start: r.Varint(), last: r.Varint(), set: true})
			}
		}
	}
	if len(r.Rest()) > 0 {
		for slot := 0; slot < slots && r.Err() == nil; slot++ {
			for k := range s.open[slot] {
				s.open[slot][k].dseq = r.Uvarint()
			}
		}
	} else {
		s.restoreCloseOrder()
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(s.keyVals) != slots || ng != slots {
		return fmt.Errorf("%w: per-slot state for %d slots", slices.ErrCorruptSnapshot, slots)
	}
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", slices.ErrCorruptSnapshot, len(r.Rest()))
	}
	if s.paused && len(s.closing) == 0 {
		return fmt.Errorf("%w: a step paused with no close", slices.ErrCorruptSnapshot)
	}
	s.closing.init()
	return nil
}

// restoreCloseOrder sets each open session's dseq from a heap written before it was kept:
// the sequence of the first entry at the session's end, the one that closed it then.
func (s *sessionOp) restoreCloseOrder() {
	type at struct {
		id  uint64
		end int64
	}
	first := map[at]uint64{}
	for _, c := range s.closing {
		k := at{c.id, c.at}
		if q, ok := first[k]; !c.tomb && (!ok || c.seq < q) {
			first[k] = c.seq
		}
	}
	for slot := range s.open {
		for k, ss := range s.open[slot] {
			s.open[slot][k].dseq = first[at{ss.id, ss.last + s.timeout}]
		}
	}
}

// AppendSnapshot implements Operator.
func (c *countWindow) AppendSnapshot(b []byte) []byte {
	b = appendHeader(b, CountWindow, len(c.aggs), false)
	b = binary.AppendVarint(b, c.w)
	b = binary.AppendUvarint(b, c.seq)
	b = appendStats(b, c.stats)
	b = c.keys.AppendSnapshot(b)
	b = appendKeyVals(b, c.keyVals)
	b = appendInts(b, c.filled)
	b = appendInts(b, c.cnt)
	b = appendInts(b, c.minT)
	b = appendInts(b, c.maxT)
	return appendCells(b, c.cols, len(c.cnt))
}

// Restore implements Operator.
func (c *countWindow) Restore(snapshot []byte) error {
	r := slices.NewReader(snapshot)
	if _, err := readHeader(r, CountWindow, len(c.aggs)); err != nil {
		return err
	}
	c.w = r.Varint()
	c.seq = r.Uvarint()
	c.stats = readStats(r)
	c.keys = slices.RestoreKeyTable(r)
	slots := c.keys.Cap()
	c.keyVals = readKeyVals(r, slots)
	c.filled = readInts(r)
	c.cnt = readInts(r)
	c.minT = readInts(r)
	c.maxT = readInts(r)
	n := readCells(r, c.cols, 0)
	if err := r.Err(); err != nil {
		return err
	}
	if len(c.keyVals) != slots || len(c.filled) != slots || len(c.cnt) != n || len(c.minT) != n || len(c.maxT) != n || n < slots*int(c.per) {
		return fmt.Errorf("%w: per-slot state for %d slots", slices.ErrCorruptSnapshot, slots)
	}
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%w: %d bytes after the snapshot", slices.ErrCorruptSnapshot, len(r.Rest()))
	}
	return nil
}
