package aggregate

import (
	"encoding/binary"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/value"
)

// countAgg is Count (the number of events, whatever their input) and
// CountWhen (the number of events whose input is true; null counts as not
// true). Result: int64; empty: 0. Invertible.
type countAgg struct {
	base
	when bool
}

func (a *countAgg) Accept(v value.Value) error {
	if !a.when || v.Kind() == value.KindBool || v.IsNull() {
		return nil
	}
	return &InputError{Func: a.spec.Func, Got: v.Kind(), Want: "boolean"}
}

func (a *countAgg) NewColumn() Column { return &countColumn{agg: a, when: a.when} }

// countColumn holds one int64 per cell (8 bytes).
type countColumn struct {
	agg  *countAgg
	when bool
	n    []int64
}

func (c *countColumn) other(src Column) (*countColumn, error) {
	o, ok := src.(*countColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *countColumn) Len() int     { return len(c.n) }
func (c *countColumn) Resize(n int) { c.n = resize(c.n, n) }

func (c *countColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	if c.when {
		k, bits := v.KindBits()
		if k != value.KindBool || bits != 1 {
			return
		}
	}
	c.n[i]++
}

func (c *countColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.n[i] += o.n[j]
	return nil
}

func (c *countColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	kernels.AddInt64(c.n, o.n)
	return nil
}

func (c *countColumn) Retract(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.n[i] -= o.n[j]
	return nil
}

func (c *countColumn) RetractAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	kernels.SubInt64(c.n, o.n)
	return nil
}

func (c *countColumn) Result(i int) (value.Value, error) { return value.Int(c.n[i]), nil }
func (c *countColumn) Reset(i int)                       { c.n[i] = 0 }
func (c *countColumn) ResetAll()                         { clear(c.n) }

// AppendCell writes the function code and the count as a zig-zag varint.
func (c *countColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	return binary.AppendVarint(b, c.n[i])
}

func (c *countColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	n, rest, err := getVarint(b)
	if err != nil {
		return nil, err
	}
	c.n[i] = n
	return rest, nil
}

func (c *countColumn) SizeBytes() int { return 48 + 8*cap(c.n) }
