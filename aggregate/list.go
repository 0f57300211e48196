package aggregate

import (
	"encoding/binary"
	"slices"

	"github.com/scenario-server/scenario-server/value"
)

// listAgg is List: every input (null included) in event-time order, ties by
// arrival number. Result: a list; empty: []. Not invertible.
type listAgg struct{ base }

func (a *listAgg) Accept(value.Value) error { return nil }
func (a *listAgg) NewColumn() Column        { return &listColumn{agg: a} }

type listEntry struct {
	v   value.Value
	t   int64
	seq uint64
}

func entryLess(a, b *listEntry) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

func entryCmp(a, b listEntry) int {
	switch {
	case entryLess(&a, &b):
		return -1
	case entryLess(&b, &a):
		return 1
	}
	return 0
}

// listColumn keeps each cell's entries in (t, seq) order, but for a tail of
// entries that came out of order (listCell): 24 bytes a cell plus 64 bytes an
// entry.
type listColumn struct {
	agg     *listAgg
	cells   []listCell
	scratch []listEntry
}

// listCell holds e[:ns] sorted by (t, seq), and e[ns:] entries that came out
// of order, not yet sorted in. Add appends; the tail is folded in when it
// reaches half the sorted part (at least listPendingMin), and by Result,
// Merge and AppendCell: amortized O(log n) comparisons an entry, where an
// insertion at its place cost O(n) moves (a hostile round: 400,000 events in
// reverse time order into one List took 112 s, in order 0.3 s). Folding
// changes the representation, never the partial's value.
type listCell struct {
	e  []listEntry
	ns int
}

// listPendingMin is the shortest out-of-order tail Add folds in; listScratchKeep the most
// entries of fold's copy of a tail a column keeps for the next fold.
const (
	listPendingMin  = 32
	listScratchKeep = 1024
)

func (c *listColumn) other(src Column) (*listColumn, error) {
	o, ok := src.(*listColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *listColumn) Len() int     { return len(c.cells) }
func (c *listColumn) Resize(n int) { c.cells = resize(c.cells, n) }

// Add appends: to the sorted part in the common in-order case, else to the
// tail.
func (c *listColumn) Add(i int, v value.Value, t int64, seq uint64) {
	cell := &c.cells[i]
	e := listEntry{v: owned(v), t: t, seq: seq}
	inOrder := cell.ns == len(cell.e) && (cell.ns == 0 || !entryLess(&e, &cell.e[cell.ns-1]))
	cell.e = append(cell.e, e)
	if inOrder {
		cell.ns++
		return
	}
	if p := len(cell.e) - cell.ns; p >= listPendingMin && p >= cell.ns/2 {
		c.fold(cell)
	}
}

// fold sorts the tail into the sorted part.
func (c *listColumn) fold(cell *listCell) {
	if cell.ns == len(cell.e) {
		return
	}
	tail := cell.e[cell.ns:]
	slices.SortFunc(tail, entryCmp)
	if cell.ns == 0 || !entryLess(&tail[0], &cell.e[cell.ns-1]) {
		cell.ns = len(cell.e)
		return
	}
	// Merged from the back into place: the tail is copied out first.
	c.scratch = append(c.scratch[:0], tail...)
	a, b := cell.e[:cell.ns], c.scratch
	w := len(cell.e)
	for len(b) > 0 {
		w--
		if len(a) > 0 && entryLess(&b[len(b)-1], &a[len(a)-1]) {
			cell.e[w] = a[len(a)-1]
			a = a[:len(a)-1]
		} else {
			cell.e[w] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	clear(c.scratch)
	if cap(c.scratch) > listScratchKeep {
		c.scratch = nil // a long tail's copy is not kept with the column
	}
	cell.ns = len(cell.e)
}

// sorted returns src's cell entries in order, src not changed: its sorted part
// itself when it has no tail, else a sorted copy.
func (c *listColumn) sorted(src listCell) []listEntry {
	if src.ns == len(src.e) {
		return src.e
	}
	cp := listCell{e: slices.Clone(src.e), ns: src.ns}
	c.fold(&cp)
	return cp.e
}

// mergeEntries returns the (t, seq)-ordered merge of a and b; it reuses a's
// array only when b simply follows a.
func mergeEntries(a, b []listEntry) []listEntry {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return slices.Clone(b)
	case !entryLess(&b[0], &a[len(a)-1]):
		return append(a, b...)
	}
	out := make([]listEntry, 0, len(a)+len(b))
	x, y := 0, 0
	for x < len(a) && y < len(b) {
		if entryLess(&b[y], &a[x]) {
			out = append(out, b[y])
			y++
		} else {
			out = append(out, a[x])
			x++
		}
	}
	out = append(out, a[x:]...)
	return append(out, b[y:]...)
}

// merge folds src (read, never changed) into dst.
func (c *listColumn) merge(dst *listCell, src listCell) {
	if len(src.e) == 0 {
		return
	}
	c.fold(dst)
	dst.e = mergeEntries(dst.e, c.sorted(src))
	dst.ns = len(dst.e)
}

func (c *listColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.merge(&c.cells[i], o.cells[j])
	return nil
}

func (c *listColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	for k := range min(c.Len(), o.Len()) {
		c.merge(&c.cells[k], o.cells[k])
	}
	return nil
}

func (c *listColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *listColumn) RetractAll(Column) error        { return ErrNotInvertible }

// Result returns a new list (never nil, so that an empty cell gives []).
func (c *listColumn) Result(i int) (value.Value, error) {
	cell := &c.cells[i]
	c.fold(cell)
	out := make([]value.Value, len(cell.e))
	for k := range cell.e {
		out[k] = cell.e[k].v
	}
	return value.List(out), nil
}

func (c *listColumn) Reset(i int) {
	clear(c.cells[i].e)
	c.cells[i] = listCell{e: c.cells[i].e[:0]}
}

func (c *listColumn) ResetAll() {
	for k := range c.cells {
		c.cells[k] = listCell{}
	}
}

// Cell encoding: code, entry count, then per entry t (zig-zag varint), seq
// (uvarint) and the value (value.AppendBinary), in (t, seq) order.
func (c *listColumn) AppendCell(b []byte, i int) []byte {
	cell := &c.cells[i]
	c.fold(cell)
	l := cell.e
	b = append(b, c.agg.def.code)
	b = binary.AppendUvarint(b, uint64(len(l)))
	for k := range l {
		b = binary.AppendVarint(b, l[k].t)
		b = binary.AppendUvarint(b, l[k].seq)
		b = value.AppendBinary(b, l[k].v)
	}
	return b
}

func (c *listColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	n, b, err := getCount(b)
	if err != nil {
		return nil, err
	}
	var l []listEntry
	if n > 0 {
		l = make([]listEntry, 0, n)
	}
	for range n {
		var e listEntry
		if e.t, b, err = getVarint(b); err != nil {
			return nil, err
		}
		if e.seq, b, err = getUvarint(b); err != nil {
			return nil, err
		}
		if e.v, b, err = value.DecodeBinary(b); err != nil {
			return nil, corrupt("%v", err)
		}
		if len(l) > 0 && entryLess(&e, &l[len(l)-1]) {
			return nil, corrupt("list entries out of order")
		}
		l = append(l, e)
	}
	c.cells[i] = listCell{e: l, ns: len(l)}
	return b, nil
}

func (c *listColumn) SizeBytes() int {
	n := 48 + 32*cap(c.cells) + 64*cap(c.scratch)
	var sizer stateSizer
	for _, cell := range c.cells {
		n += 64 * cap(cell.e)
		for k := range cell.e {
			n += sizer.size(cell.e[k].v)
		}
	}
	return n
}

// distinctAgg is Set (the distinct inputs sorted by value.Compare; empty: [])
// and CountDistinct (their exact number as int64; empty: 0). Values are
// distinct when value.Equal says so: Int(1) and Float(1.0) are two values,
// Float(-0.0) and Float(0.0) one (kept as 0.0). Null is a value. Not
// invertible.
type distinctAgg struct {
	base
	count bool
}

func (a *distinctAgg) Accept(value.Value) error { return nil }
func (a *distinctAgg) NewColumn() Column        { return &distinctColumn{agg: a, count: a.count} }

// distinctCell holds vals[:ns] sorted and distinct, and vals[ns:] recent
// inputs not yet sorted in (possibly repeating). Add appends; the pending
// tail is folded in when it reaches half the sorted part (amortized
// O(log n) comparisons per input, at most 1.5x the distinct values plus 32),
// and by Result, Merge and AppendCell. Folding changes the representation,
// never the partial's value.
type distinctCell struct {
	vals []value.Value
	ns   int
}

type distinctColumn struct {
	agg     *distinctAgg
	count   bool
	cells   []distinctCell
	scratch []value.Value
}

// A tail of at most distinctInsertMax values is folded in by binary
// insertion, a longer one by sorting and merging.
const (
	distinctPendingMin = 32
	distinctInsertMax  = 8
)

func (c *distinctColumn) other(src Column) (*distinctColumn, error) {
	o, ok := src.(*distinctColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *distinctColumn) Len() int     { return len(c.cells) }
func (c *distinctColumn) Resize(n int) { c.cells = resize(c.cells, n) }

func (c *distinctColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	cell := &c.cells[i]
	cell.vals = append(cell.vals, owned(canonValue(v)))
	if p := len(cell.vals) - cell.ns; p >= distinctPendingMin && p >= cell.ns/2 {
		c.fold(cell)
	}
}

// fold sorts the pending tail into the sorted part.
func (c *distinctColumn) fold(cell *distinctCell) {
	n := len(cell.vals)
	if cell.ns == n {
		return
	}
	tail := cell.vals[cell.ns:]
	if len(tail) <= distinctInsertMax {
		c.scratch = append(c.scratch[:0], tail...)
		s := cell.vals[:cell.ns]
		for _, x := range c.scratch {
			if pos, found := slices.BinarySearchFunc(s, x, value.Compare); !found {
				s = slices.Insert(s, pos, x)
			}
		}
		clear(c.scratch)
		if len(s) < n {
			clear(cell.vals[len(s):n])
		}
		cell.vals, cell.ns = s, len(s)
		return
	}
	slices.SortFunc(tail, value.Compare)
	tail = dedupeSorted(tail)
	if cell.ns == 0 {
		clear(cell.vals[len(tail):n])
		cell.vals, cell.ns = cell.vals[:len(tail)], len(tail)
		return
	}
	out := mergeDistinct(make([]value.Value, 0, cell.ns+len(tail)), cell.vals[:cell.ns], tail)
	cell.vals, cell.ns = out, len(out)
}

// dedupeSorted removes repeats from a sorted slice in place.
func dedupeSorted(s []value.Value) []value.Value {
	if len(s) < 2 {
		return s
	}
	w := 1
	for r := 1; r < len(s); r++ {
		if value.Compare(s[r], s[w-1]) != 0 {
			s[w] = s[r]
			w++
		}
	}
	clear(s[w:])
	return s[:w]
}

// mergeDistinct appends to out the union of a and b, both sorted and
// distinct.
func mergeDistinct(out, a, b []value.Value) []value.Value {
	x, y := 0, 0
	for x < len(a) && y < len(b) {
		switch cmp := value.Compare(a[x], b[y]); {
		case cmp < 0:
			out = append(out, a[x])
			x++
		case cmp > 0:
			out = append(out, b[y])
			y++
		default:
			out = append(out, a[x])
			x++
			y++
		}
	}
	out = append(out, a[x:]...)
	return append(out, b[y:]...)
}

// merge folds src (read, never changed) into dst.
func (c *distinctColumn) merge(dst *distinctCell, src distinctCell) {
	if len(src.vals) == 0 {
		return
	}
	c.fold(dst)
	sorted, tail := src.vals[:src.ns], src.vals[src.ns:]
	switch {
	case len(sorted) == 0:
	case dst.ns == 0:
		dst.vals = append(dst.vals[:0], sorted...)
	default:
		dst.vals = mergeDistinct(make([]value.Value, 0, dst.ns+len(sorted)), dst.vals, sorted)
	}
	dst.ns = len(dst.vals)
	dst.vals = append(dst.vals, tail...)
	if p := len(dst.vals) - dst.ns; p >= distinctPendingMin && p >= dst.ns/2 {
		c.fold(dst)
	}
}

func (c *distinctColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	if o == c && i == j {
		return nil // a set merged with itself is itself
	}
	c.merge(&c.cells[i], o.cells[j])
	return nil
}

func (c *distinctColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	if o == c {
		return nil
	}
	for k := range min(c.Len(), o.Len()) {
		c.merge(&c.cells[k], o.cells[k])
	}
	return nil
}

func (c *distinctColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *distinctColumn) RetractAll(Column) error        { return ErrNotInvertible }

// Result folds the pending inputs in (see distinctCell) and returns the
// count or a new sorted list (never nil, so that an empty cell gives []).
func (c *distinctColumn) Result(i int) (value.Value, error) {
	cell := &c.cells[i]
	c.fold(cell)
	if c.count {
		return value.Int(int64(cell.ns)), nil
	}
	return value.List(append(make([]value.Value, 0, cell.ns), cell.vals...)), nil
}

func (c *distinctColumn) Reset(i int) {
	cell := &c.cells[i]
	clear(cell.vals)
	cell.vals, cell.ns = cell.vals[:0], 0
}

func (c *distinctColumn) ResetAll() {
	clear(c.cells)
}

// Cell encoding: code, value count, the values (value.AppendBinary) sorted
// and distinct.
func (c *distinctColumn) AppendCell(b []byte, i int) []byte {
	cell := &c.cells[i]
	c.fold(cell)
	b = append(b, c.agg.def.code)
	b = binary.AppendUvarint(b, uint64(len(cell.vals)))
	for _, v := range cell.vals {
		b = value.AppendBinary(b, v)
	}
	return b
}

// DecodeCell accepts the values in any order and with repeats.
func (c *distinctColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	n, b, err := getCount(b)
	if err != nil {
		return nil, err
	}
	var vals []value.Value
	if n > 0 {
		vals = make([]value.Value, 0, n)
	}
	for range n {
		var v value.Value
		if v, b, err = value.DecodeBinary(b); err != nil {
			return nil, corrupt("%v", err)
		}
		vals = append(vals, canonValue(v))
	}
	slices.SortFunc(vals, value.Compare)
	vals = dedupeSorted(vals)
	c.cells[i] = distinctCell{vals: vals, ns: len(vals)}
	return b, nil
}

func (c *distinctColumn) SizeBytes() int {
	n := 72 + 32*cap(c.cells) + valueHeader*cap(c.scratch)
	var sizer stateSizer
	for k := range c.cells {
		n += valueHeader * cap(c.cells[k].vals)
		for _, v := range c.cells[k].vals {
			n += sizer.size(v)
		}
	}
	return n
}
