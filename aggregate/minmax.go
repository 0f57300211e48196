package aggregate

import (
	"math"
	"strings"

	"github.com/scenario-server/scenario-server/value"
)

// minMaxAgg is Min and Max: the smallest / largest input by value.Compare
// (numbers by numeric value and before strings, strings bytewise). The result
// keeps the input's type: an integer stays an integer. Where Compare calls
// two values equal the order still decides, so that the result never depends
// on arrival order: Int(1) sorts before Float(1.0), and Min prefers -0.0 to
// +0.0 while Max prefers +0.0. Null inputs are ignored; empty: null.
// Not invertible.
type minMaxAgg struct {
	base
	max bool
}

func (a *minMaxAgg) Accept(v value.Value) error {
	switch v.Kind() {
	case value.KindNull, value.KindInt, value.KindFloat, value.KindString:
		return nil
	}
	return &InputError{Func: a.spec.Func, Got: v.Kind(), Want: "number or string"}
}

func (a *minMaxAgg) NewColumn() Column { return &minMaxColumn{agg: a, max: a.max} }

// valueStore keeps one optional value per cell compactly: a kind byte
// (0 = no value, otherwise value.Kind + 1) and 8 bytes for booleans and
// numbers, about 9 bytes a cell. Strings and lists/records go to side arrays
// allocated the first time the column stores one.
type valueStore struct {
	kind []uint8
	bits []uint64
	strs lazyPages[string]      // the strings' cells
	xs   lazyPages[value.Value] // the lists' and records' cells
}

// lazyPages is an array of cells of T made a page of lazyPageCells at a time, when a cell of
// the page is first set: a column of many cells (a count window's hold every key's) that meets
// its first string takes a page, not an array of all its cells at once (round 23: 16 bytes a
// cell of 26 columns of 150,000 cells, 77 MB, in one event, past a state budget looked at
// between events). Unset cells read as T's zero.
type lazyPages[T any] struct {
	pages [][]T // nil where no cell was set
	n     int
}

const lazyPageCells = 1024

func (p *lazyPages[T]) resize(n int) {
	n = max(n, 0)
	pages := (n + lazyPageCells - 1) / lazyPageCells
	if n < p.n {
		clear(p.pages[pages:])
		if last := n % lazyPageCells; last != 0 && p.pages[pages-1] != nil {
			clear(p.pages[pages-1][last:])
		}
	}
	p.pages = resize(p.pages, pages)
	p.n = n
}

func (p *lazyPages[T]) get(i int) T {
	if pg := p.pages[i/lazyPageCells]; pg != nil {
		return pg[i%lazyPageCells]
	}
	var zero T
	return zero
}

func (p *lazyPages[T]) set(i int, v T) {
	pg := p.pages[i/lazyPageCells]
	if pg == nil {
		pg = make([]T, lazyPageCells)
		p.pages[i/lazyPageCells] = pg
	}
	pg[i%lazyPageCells] = v
}

// clear sets cell i to T's zero.
func (p *lazyPages[T]) clear(i int) {
	if pg := p.pages[i/lazyPageCells]; pg != nil {
		var zero T
		pg[i%lazyPageCells] = zero
	}
}

// clearAll drops every page.
func (p *lazyPages[T]) clearAll() { clear(p.pages) }

// sizeBytes is the pages' bytes, of elem bytes a cell, and what each cell holds (held).
func (p *lazyPages[T]) sizeBytes(elem int, held func(T) int) int {
	n := 24 + 24*cap(p.pages)
	for _, pg := range p.pages {
		if pg == nil {
			continue
		}
		n += elem * lazyPageCells
		for _, v := range pg {
			n += held(v)
		}
	}
	return n
}

// The stored kind bytes of the fast paths.
const (
	vsEmpty = 0
	vsInt   = uint8(value.KindInt) + 1
	vsFloat = uint8(value.KindFloat) + 1
)

func (s *valueStore) resize(n int) {
	s.kind = resize(s.kind, n)
	s.bits = resize(s.bits, n)
	s.strs.resize(n)
	s.xs.resize(n)
}

func (s *valueStore) has(i int) bool { return s.kind[i] != vsEmpty }

// get returns cell i's value; the cell must have one.
func (s *valueStore) get(i int) value.Value {
	switch value.Kind(s.kind[i] - 1) {
	case value.KindBool:
		return value.Bool(s.bits[i] == 1)
	case value.KindInt:
		return value.Int(int64(s.bits[i]))
	case value.KindFloat:
		return value.Float(math.Float64frombits(s.bits[i]))
	case value.KindString:
		return value.String(s.strs.get(i))
	case value.KindList, value.KindRecord:
		return s.xs.get(i)
	}
	return value.Null()
}

func (s *valueStore) set(i int, v value.Value) {
	k := v.Kind()
	s.kind[i] = uint8(k) + 1
	var bits uint64
	switch k {
	case value.KindBool:
		if v.Bool() {
			bits = 1
		}
	case value.KindInt:
		bits = uint64(v.Int())
	case value.KindFloat:
		bits = math.Float64bits(v.Float())
	}
	s.bits[i] = bits
	if k == value.KindString {
		s.strs.set(i, strings.Clone(v.Str())) // not the event's block (owned)
	} else {
		s.strs.clear(i)
	}
	if k == value.KindList || k == value.KindRecord {
		s.xs.set(i, v)
	} else {
		s.xs.clear(i)
	}
}

func (s *valueStore) clear(i int) {
	s.kind[i], s.bits[i] = vsEmpty, 0
	s.strs.clear(i)
	s.xs.clear(i)
}

func (s *valueStore) clearAll() {
	clear(s.kind)
	clear(s.bits)
	s.strs.clearAll()
	s.xs.clearAll()
}

func (s *valueStore) sizeBytes() int {
	return 72 + cap(s.kind) + 8*cap(s.bits) + s.strs.sizeBytes(16, func(str string) int { return len(str) }) +
		s.xs.sizeBytes(valueHeader, (&stateSizer{}).size)
}

// appendCell writes a presence byte (0: empty, 1: a value follows) and the
// value in value.AppendBinary's encoding.
func (s *valueStore) appendCell(b []byte, i int) []byte {
	if !s.has(i) {
		return append(b, 0)
	}
	return value.AppendBinary(append(b, 1), s.get(i))
}

// decodeCell reads what appendCell wrote; ok is false for an empty cell.
func decodeStoredValue(b []byte) (v value.Value, ok bool, rest []byte, err error) {
	p, b, err := getByte(b)
	if err != nil {
		return value.Value{}, false, nil, err
	}
	switch p {
	case 0:
		return value.Value{}, false, b, nil
	case 1:
		v, rest, err := value.DecodeBinary(b)
		if err != nil {
			return value.Value{}, false, nil, corrupt("%v", err)
		}
		return v, true, rest, nil
	}
	return value.Value{}, false, nil, corrupt("presence byte %d", p)
}

// minMaxColumn: about 9 bytes a cell for numbers, plus 16 once it has seen a
// string.
type minMaxColumn struct {
	agg *minMaxAgg
	max bool
	s   valueStore
}

func (c *minMaxColumn) other(src Column) (*minMaxColumn, error) {
	o, ok := src.(*minMaxColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *minMaxColumn) Len() int     { return len(c.s.kind) }
func (c *minMaxColumn) Resize(n int) { c.s.resize(n) }

func (c *minMaxColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := v.KindBits()
	switch k {
	case value.KindInt:
		switch c.s.kind[i] {
		case vsInt: // fast path: int against int
			x, cur := int64(bits), int64(c.s.bits[i])
			if (c.max && x > cur) || (!c.max && x < cur) {
				c.s.bits[i] = bits
			}
			return
		case vsEmpty:
			c.s.kind[i], c.s.bits[i] = vsInt, bits
			return
		}
	case value.KindFloat:
		switch c.s.kind[i] {
		case vsFloat: // fast path: float against float
			if floatBetter(math.Float64frombits(bits), math.Float64frombits(c.s.bits[i]), c.max) {
				c.s.bits[i] = bits
			}
			return
		case vsEmpty:
			c.s.kind[i], c.s.bits[i] = vsFloat, bits
			return
		}
	case value.KindString:
	default:
		return // null is ignored; other kinds are refused by Accept
	}
	c.offer(i, v)
}

// floatBetter reports whether x should replace cur: strictly smaller (Min) or
// larger (Max), or the preferred zero of ±0.
func floatBetter(x, cur float64, max bool) bool {
	if max {
		return x > cur || (x == cur && !math.Signbit(x) && math.Signbit(cur))
	}
	return x < cur || (x == cur && math.Signbit(x) && !math.Signbit(cur))
}

// offer replaces cell i's value with v when the cell is empty or v is better.
func (c *minMaxColumn) offer(i int, v value.Value) {
	if !c.s.has(i) {
		c.s.set(i, v)
		return
	}
	cur := c.s.get(i)
	if v.Kind() == value.KindFloat && cur.Kind() == value.KindFloat {
		if floatBetter(v.Float(), cur.Float(), c.max) {
			c.s.set(i, v)
		}
		return
	}
	cmp := value.Compare(v, cur)
	if (c.max && cmp > 0) || (!c.max && cmp < 0) {
		c.s.set(i, v)
	}
}

func (c *minMaxColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	if o.s.has(j) {
		c.offer(i, o.s.get(j))
	}
	return nil
}

func (c *minMaxColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	n := min(c.Len(), o.Len())
	for k := range n {
		if o.s.has(k) {
			c.offer(k, o.s.get(k))
		}
	}
	return nil
}

func (c *minMaxColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *minMaxColumn) RetractAll(Column) error        { return ErrNotInvertible }

func (c *minMaxColumn) Result(i int) (value.Value, error) {
	if !c.s.has(i) {
		return value.Null(), nil
	}
	return c.s.get(i), nil
}

func (c *minMaxColumn) Reset(i int) { c.s.clear(i) }
func (c *minMaxColumn) ResetAll()   { c.s.clearAll() }

func (c *minMaxColumn) AppendCell(b []byte, i int) []byte {
	return c.s.appendCell(append(b, c.agg.def.code), i)
}

func (c *minMaxColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	v, ok, rest, err := decodeStoredValue(b)
	if err != nil {
		return nil, err
	}
	if !ok {
		c.s.clear(i)
		return rest, nil
	}
	switch v.Kind() {
	case value.KindInt, value.KindFloat, value.KindString:
	default:
		return nil, corrupt("%s in a %s cell", v.Kind(), c.agg.spec.Func)
	}
	c.s.set(i, v)
	return rest, nil
}

func (c *minMaxColumn) SizeBytes() int { return 16 + c.s.sizeBytes() }
