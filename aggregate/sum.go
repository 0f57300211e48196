package aggregate

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/value"
)

// sumAgg is Sum (SEMANTICS §5). While every input of a cell is an integer
// the result is the exact int64 sum; a sum that does not fit int64 is
// ErrSumOverflow, never a wrapped number. Once a float input is in the cell
// the result is a float64: the exact integer sum converted to float64 plus the
// sum of the float inputs. Null inputs are ignored; empty: Int(0).
// Invertible, exactly so for integers (the integer part is a 128-bit sum).
type sumAgg struct{ base }

func (a *sumAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *sumAgg) NewColumn() Column          { return &sumColumn{agg: a} }

// sumColumn keeps, per cell, the exact integer sum as a 128-bit number
// hi·2^64 + lo, where lo is a signed int64 (so while hi is 0 the sum is just
// lo), and the float inputs as a float64 sum with their count.
//
// Only lo is always present (8 bytes a cell). hi is allocated the first time
// an addition carries out of int64; fsum and fcnt the first time the column
// sees a float. hi cannot itself overflow: it moves by at most 1 per input
// event, so that would take 2^63 events.
type sumColumn struct {
	agg  *sumAgg
	lo   []int64
	hi   []int64   // nil until the first carry
	fsum []float64 // nil until the first float; the sum of the float inputs
	fcnt []int64   // nil until the first float; how many float inputs
}

func (c *sumColumn) other(src Column) (*sumColumn, error) {
	o, ok := src.(*sumColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *sumColumn) Len() int { return len(c.lo) }

func (c *sumColumn) Resize(n int) {
	c.lo = resize(c.lo, n)
	c.hi = resizeLazy(c.hi, n)
	c.fsum = resizeLazy(c.fsum, n)
	c.fcnt = resizeLazy(c.fcnt, n)
}

func (c *sumColumn) needHi() {
	if c.hi == nil {
		c.hi = make([]int64, len(c.lo), cap(c.lo))
	}
}

func (c *sumColumn) needFloat() {
	if c.fsum == nil {
		c.fsum = make([]float64, len(c.lo), cap(c.lo))
		c.fcnt = make([]int64, len(c.lo), cap(c.lo))
	}
}

func (c *sumColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := rawKindBits(&v)
	if !valueFast {
		k, bits = slowKindBits(&v)
	}
	switch k {
	case value.KindInt:
		x := int64(bits)
		a := c.lo[i]
		s := a + x
		c.lo[i] = s
		if (a^s)&(x^s) < 0 { // signed overflow: carry into hi
			c.carry(i, x)
		}
	case value.KindFloat:
		c.addFloat(i, math.Float64frombits(bits))
	}
}

//go:noinline
func (c *sumColumn) addFloat(i int, f float64) {
	c.needFloat()
	c.fsum[i] += f
	c.fcnt[i]++
}

// carry records that lo[i] wrapped while adding a number of x's sign.
//
//go:noinline
func (c *sumColumn) carry(i int, x int64) {
	c.needHi()
	if x >= 0 {
		c.hi[i]++
	} else {
		c.hi[i]--
	}
}

func (c *sumColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	x := o.lo[j]
	var h int64
	if o.hi != nil {
		h = o.hi[j]
	}
	var fs float64
	var fc int64
	if o.fsum != nil {
		fs, fc = o.fsum[j], o.fcnt[j]
	}
	a := c.lo[i]
	s := a + x
	c.lo[i] = s
	if (a^s)&(x^s) < 0 {
		c.carry(i, x)
	}
	if h != 0 {
		c.needHi()
		c.hi[i] += h
	}
	if fc != 0 {
		c.needFloat()
		c.fsum[i] += fs
		c.fcnt[i] += fc
	}
	return nil
}

func (c *sumColumn) Retract(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	y := o.lo[j]
	var h int64
	if o.hi != nil {
		h = o.hi[j]
	}
	var fs float64
	var fc int64
	if o.fsum != nil {
		fs, fc = o.fsum[j], o.fcnt[j]
	}
	a := c.lo[i]
	d := a - y
	c.lo[i] = d
	if (a^y)&(a^d) < 0 { // signed overflow of a - y: borrow from hi
		c.needHi()
		if y > 0 {
			c.hi[i]--
		} else {
			c.hi[i]++
		}
	}
	if h != 0 {
		c.needHi()
		c.hi[i] -= h
	}
	if fc != 0 {
		c.needFloat()
		c.fsum[i] -= fs
		c.fcnt[i] -= fc
		if c.fcnt[i] == 0 {
			c.fsum[i] = 0 // no drift survives the last float leaving
		}
	}
	return nil
}

// MergeAll adds the low words with kernels.AddInt64Overflow and, only when a
// lane overflowed, finds those lanes again (a lane overflowed iff the old
// value and the addend have one sign and the new value the other) to carry.
func (c *sumColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	n := min(len(c.lo), len(o.lo))
	dst, s := c.lo[:n], o.lo[:n]
	if kernels.AddInt64Overflow(dst, s) {
		for k, x := range s {
			r := dst[k]
			if a := r - x; (a^r)&(x^r) < 0 {
				c.carry(k, x)
			}
		}
	}
	if o.hi != nil {
		c.needHi()
		kernels.AddInt64(c.hi[:n], o.hi[:n])
	}
	if o.fsum != nil {
		c.needFloat()
		kernels.AddFloat64(c.fsum[:n], o.fsum[:n])
		kernels.AddInt64(c.fcnt[:n], o.fcnt[:n])
	}
	return nil
}

// RetractAll subtracts with kernels.SubInt64 and then checks every lane for a
// borrow (the kernels have no overflow-reporting subtraction).
func (c *sumColumn) RetractAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	n := min(len(c.lo), len(o.lo))
	dst, s := c.lo[:n], o.lo[:n]
	kernels.SubInt64(dst, s)
	var any int64
	for k, y := range s {
		d := dst[k]
		a := d + y
		any |= (a ^ y) & (a ^ d)
	}
	if any < 0 {
		c.needHi()
		for k, y := range s {
			d := dst[k]
			if a := d + y; (a^y)&(a^d) < 0 {
				if y > 0 {
					c.hi[k]--
				} else {
					c.hi[k]++
				}
			}
		}
	}
	if o.hi != nil {
		c.needHi()
		kernels.SubInt64(c.hi[:n], o.hi[:n])
	}
	if o.fsum != nil {
		c.needFloat()
		kernels.SubFloat64(c.fsum[:n], o.fsum[:n])
		kernels.SubInt64(c.fcnt[:n], o.fcnt[:n])
		for k, fc := range c.fcnt[:n] {
			if fc == 0 {
				c.fsum[k] = 0
			}
		}
	}
	return nil
}

// Result: Float(int part + float part) once a float is in the cell; else the
// exact Int, or ErrSumOverflow when it does not fit int64. A float sum beyond
// ±math.MaxFloat64 gives null (value.Float).
func (c *sumColumn) Result(i int) (value.Value, error) {
	var h int64
	if c.hi != nil {
		h = c.hi[i]
	}
	if c.fcnt != nil && c.fcnt[i] != 0 {
		return value.Float(int128Float(h, c.lo[i]) + c.fsum[i]), nil
	}
	if h != 0 {
		return value.Null(), ErrSumOverflow
	}
	return value.Int(c.lo[i]), nil
}

// int128Float converts hi·2^64 + lo (lo signed) to the nearest float64.
func int128Float(hi, lo int64) float64 {
	if hi == 0 {
		return float64(lo)
	}
	x := new(big.Int).Lsh(big.NewInt(hi), 64)
	x.Add(x, big.NewInt(lo))
	f, _ := new(big.Float).SetInt(x).Float64()
	return f
}

func (c *sumColumn) Reset(i int) {
	c.lo[i] = 0
	if c.hi != nil {
		c.hi[i] = 0
	}
	if c.fsum != nil {
		c.fsum[i], c.fcnt[i] = 0, 0
	}
}

// ResetAll empties every cell and drops the side arrays.
func (c *sumColumn) ResetAll() {
	clear(c.lo)
	c.hi, c.fsum, c.fcnt = nil, nil, nil
}

// Cell encoding: code, flags (1: hi follows, 2: floats follow), lo as a
// zig-zag varint, then hi as a varint, then the float count as a varint and
// the float sum as 8 bytes.
const (
	sumHasHi    = 1
	sumHasFloat = 2
)

func (c *sumColumn) AppendCell(b []byte, i int) []byte {
	var flags byte
	if c.hi != nil && c.hi[i] != 0 {
		flags |= sumHasHi
	}
	if c.fcnt != nil && c.fcnt[i] != 0 {
		flags |= sumHasFloat
	}
	b = append(b, c.agg.def.code, flags)
	b = binary.AppendVarint(b, c.lo[i])
	if flags&sumHasHi != 0 {
		b = binary.AppendVarint(b, c.hi[i])
	}
	if flags&sumHasFloat != 0 {
		b = binary.AppendVarint(b, c.fcnt[i])
		b = appendFloat(b, c.fsum[i])
	}
	return b
}

func (c *sumColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	flags, b, err := getByte(b)
	if err != nil {
		return nil, err
	}
	if flags&^(sumHasHi|sumHasFloat) != 0 {
		return nil, corrupt("sum flags %#x", flags)
	}
	lo, b, err := getVarint(b)
	if err != nil {
		return nil, err
	}
	var hi, fc int64
	var fs float64
	if flags&sumHasHi != 0 {
		if hi, b, err = getVarint(b); err != nil {
			return nil, err
		}
	}
	if flags&sumHasFloat != 0 {
		if fc, b, err = getVarint(b); err != nil {
			return nil, err
		}
		if fs, b, err = getFloat(b); err != nil {
			return nil, err
		}
		if fc == 0 && fs != 0 {
			return nil, corrupt("float sum without float inputs")
		}
	}
	c.lo[i] = lo
	if hi != 0 {
		c.needHi()
	}
	if c.hi != nil {
		c.hi[i] = hi
	}
	if fc != 0 {
		c.needFloat()
	}
	if c.fsum != nil {
		c.fsum[i], c.fcnt[i] = fs, fc
	}
	return b, nil
}

func (c *sumColumn) SizeBytes() int {
	return 96 + 8*(cap(c.lo)+cap(c.hi)+cap(c.fsum)+cap(c.fcnt))
}
