package aggregate

import (
	"encoding/binary"

	"github.com/scenario-server/scenario-server/value"
)

// firstLastAgg is First and Last: the input of the earliest / latest event by
// event time t. Ties on t go by arrival number seq: First keeps the smallest
// seq, Last the largest. Any input is accepted and null is a value like any
// other; empty: null. Not invertible.
type firstLastAgg struct {
	base
	last bool
}

func (a *firstLastAgg) Accept(value.Value) error { return nil }
func (a *firstLastAgg) NewColumn() Column        { return &firstLastColumn{agg: a, last: a.last} }

// firstLastColumn: the value (about 9 bytes, see valueStore), t and seq
// (16 bytes) per cell.
type firstLastColumn struct {
	agg  *firstLastAgg
	last bool
	s    valueStore
	t    []int64
	seq  []uint64
}

func (c *firstLastColumn) other(src Column) (*firstLastColumn, error) {
	o, ok := src.(*firstLastColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *firstLastColumn) Len() int { return len(c.t) }

func (c *firstLastColumn) Resize(n int) {
	c.s.resize(n)
	c.t = resize(c.t, n)
	c.seq = resize(c.seq, n)
}

// wins reports whether an event at (t, seq) replaces cell i's.
func (c *firstLastColumn) wins(i int, t int64, seq uint64) bool {
	if !c.s.has(i) {
		return true
	}
	ct, cs := c.t[i], c.seq[i]
	if c.last {
		return t > ct || (t == ct && seq > cs)
	}
	return t < ct || (t == ct && seq < cs)
}

func (c *firstLastColumn) Add(i int, v value.Value, t int64, seq uint64) {
	if c.wins(i, t, seq) {
		c.s.set(i, v)
		c.t[i], c.seq[i] = t, seq
	}
}

func (c *firstLastColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	if o.s.has(j) && c.wins(i, o.t[j], o.seq[j]) {
		c.s.set(i, o.s.get(j))
		c.t[i], c.seq[i] = o.t[j], o.seq[j]
	}
	return nil
}

func (c *firstLastColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	for k := range min(c.Len(), o.Len()) {
		if o.s.has(k) && c.wins(k, o.t[k], o.seq[k]) {
			c.s.set(k, o.s.get(k))
			c.t[k], c.seq[k] = o.t[k], o.seq[k]
		}
	}
	return nil
}

func (c *firstLastColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *firstLastColumn) RetractAll(Column) error        { return ErrNotInvertible }

func (c *firstLastColumn) Result(i int) (value.Value, error) {
	if !c.s.has(i) {
		return value.Null(), nil
	}
	return c.s.get(i), nil
}

func (c *firstLastColumn) Reset(i int) {
	c.s.clear(i)
	c.t[i], c.seq[i] = 0, 0
}

func (c *firstLastColumn) ResetAll() {
	c.s.clearAll()
	clear(c.t)
	clear(c.seq)
}

// Cell encoding: code, the value as valueStore.appendCell writes it, and for
// a non-empty cell t as a zig-zag varint and seq as a uvarint.
func (c *firstLastColumn) AppendCell(b []byte, i int) []byte {
	b = c.s.appendCell(append(b, c.agg.def.code), i)
	if c.s.has(i) {
		b = binary.AppendVarint(b, c.t[i])
		b = binary.AppendUvarint(b, c.seq[i])
	}
	return b
}

func (c *firstLastColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	v, ok, b, err := decodeStoredValue(b)
	if err != nil {
		return nil, err
	}
	if !ok {
		c.Reset(i)
		return b, nil
	}
	t, b, err := getVarint(b)
	if err != nil {
		return nil, err
	}
	seq, b, err := getUvarint(b)
	if err != nil {
		return nil, err
	}
	c.s.set(i, v)
	c.t[i], c.seq[i] = t, seq
	return b, nil
}

func (c *firstLastColumn) SizeBytes() int {
	return 64 + c.s.sizeBytes() + 8*(cap(c.t)+cap(c.seq))
}
