package aggregate

import (
	"encoding/binary"
	"math"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/value"
)

// averageAgg is Average: the arithmetic mean of the numeric inputs as a
// float64; null inputs are ignored; empty: null. A cell is Sum's partial
// (exactSum: the integer inputs' exact 128-bit sum, the float inputs'
// compensated sum and count) and the count of all numeric inputs; the result
// is (float64(integer sum) + float sum) / count. So integers are summed
// exactly: Average(9223372036854775807, -9223372036854775808, -1) is -2/3,
// not the 0 a float64 running sum gives. Invertible, exactly so for the
// integer part; the float part returns to exactly 0 when its last input is
// retracted. A float sum beyond ±math.MaxFloat64 makes the result null.
type averageAgg struct{ base }

func (a *averageAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *averageAgg) NewColumn() Column          { return &averageColumn{agg: a} }

// averageColumn: 16 bytes a cell (lo and n) while the column has seen only
// integers; 24 more once it has seen a float, 8 more once a sum carried.
type averageColumn struct {
	agg *averageAgg
	exactSum
	n []int64
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
	c.resize(n)
	c.n = resize(c.n, n)
}

func (c *averageColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := v.KindBits()
	switch k {
	case value.KindInt: // exactSum.addInt by hand, as in sumColumn.Add
		x := int64(bits)
		a := c.lo[i]
		s := a + x
		c.lo[i] = s
		if (a^s)&(x^s) < 0 {
			c.carry(i, x)
		}
		c.n[i]++
	case value.KindFloat:
		c.addFloat(i, math.Float64frombits(bits))
		c.n[i]++
	}
}

func (c *averageColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.merge(i, &o.exactSum, j)
	c.n[i] += o.n[j]
	return nil
}

func (c *averageColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.mergeAll(&o.exactSum)
	m := min(len(c.n), len(o.n))
	kernels.AddInt64(c.n[:m], o.n[:m])
	return nil
}

func (c *averageColumn) Retract(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.retract(i, &o.exactSum, j)
	c.n[i] -= o.n[j]
	return nil
}

func (c *averageColumn) RetractAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.retractAll(&o.exactSum)
	m := min(len(c.n), len(o.n))
	kernels.SubInt64(c.n[:m], o.n[:m])
	return nil
}

func (c *averageColumn) Result(i int) (value.Value, error) {
	if c.n[i] <= 0 {
		return value.Null(), nil
	}
	f := c.total(i)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return value.Null(), ErrFloatOverflow
	}
	return value.Float(f / float64(c.n[i])), nil
}

func (c *averageColumn) Reset(i int) {
	c.reset(i)
	c.n[i] = 0
}

func (c *averageColumn) ResetAll() {
	c.resetAll()
	clear(c.n)
}

// Cell encoding: code, the count as a zig-zag varint, then the exactSum
// encoding.
func (c *averageColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	b = binary.AppendVarint(b, c.n[i])
	return c.appendCell(b, i)
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
	x, b, err := decodeExactCell(b)
	if err != nil {
		return nil, err
	}
	c.store(i, x)
	c.n[i] = n
	return b, nil
}

func (c *averageColumn) SizeBytes() int { return 152 + c.sizeBytes() + 8*cap(c.n) }
