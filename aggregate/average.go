package aggregate

import (
	"encoding/binary"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/value"
)

// averageAgg is Average: the arithmetic mean of the numeric inputs as a
// float64; null inputs are ignored; empty: null. Invertible: a cell is a
// float64 sum and an int64 count. When a retraction brings the count to 0 the
// sum is set to exactly 0, so rounding drift never survives an empty cell.
// A running sum beyond ±math.MaxFloat64 makes the result null.
type averageAgg struct{ base }

func (a *averageAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *averageAgg) NewColumn() Column          { return &averageColumn{agg: a} }

// averageColumn: 16 bytes a cell.
type averageColumn struct {
	agg *averageAgg
	sum []float64
	n   []int64
}

func (c *averageColumn) other(src Column) (*averageColumn, error) {
	o, ok := src.(*averageColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *averageColumn) Len() int { return len(c.n) }

func (c *averageColumn) Resize(n int) {
	c.sum = resize(c.sum, n)
	c.n = resize(c.n, n)
}

func (c *averageColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := rawKindBits(&v)
	if !valueFast {
		k, bits = slowKindBits(&v)
	}
	if x, ok := numberOf(k, bits); ok {
		c.sum[i] += x
		c.n[i]++
	}
}

func (c *averageColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.sum[i] += o.sum[j]
	c.n[i] += o.n[j]
	return nil
}

func (c *averageColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	kernels.AddFloat64(c.sum, o.sum)
	kernels.AddInt64(c.n, o.n)
	return nil
}

func (c *averageColumn) Retract(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.sum[i] -= o.sum[j]
	c.n[i] -= o.n[j]
	if c.n[i] == 0 {
		c.sum[i] = 0
	}
	return nil
}

func (c *averageColumn) RetractAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	kernels.SubFloat64(c.sum, o.sum)
	kernels.SubInt64(c.n, o.n)
	m := min(len(c.n), len(o.n))
	for k, n := range c.n[:m] {
		if n == 0 {
			c.sum[k] = 0
		}
	}
	return nil
}

func (c *averageColumn) Result(i int) (value.Value, error) {
	if c.n[i] <= 0 {
		return value.Null(), nil
	}
	return value.Float(c.sum[i] / float64(c.n[i])), nil
}

func (c *averageColumn) Reset(i int) { c.sum[i], c.n[i] = 0, 0 }

func (c *averageColumn) ResetAll() {
	clear(c.sum)
	clear(c.n)
}

// Cell encoding: code, count as a zig-zag varint, and when it is not 0 the
// sum as 8 bytes.
func (c *averageColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	b = binary.AppendVarint(b, c.n[i])
	if c.n[i] != 0 {
		b = appendFloat(b, c.sum[i])
	}
	return b
}

func (c *averageColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	n, b, err := getVarint(b)
	if err != nil {
		return nil, err
	}
	var sum float64
	if n != 0 {
		if sum, b, err = getFloat(b); err != nil {
			return nil, err
		}
	}
	c.n[i], c.sum[i] = n, sum
	return b, nil
}

func (c *averageColumn) SizeBytes() int { return 72 + 8*(cap(c.sum)+cap(c.n)) }
