package aggregate

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/value"
)

// sumAgg is Sum (docs/semantics.md §5). While every input of a cell is an integer
// the result is the exact int64 sum; a sum that does not fit int64 is
// ErrSumOverflow, never a wrapped number. Once a float input is in the cell
// the result is a float64: the exact integer sum converted to float64 plus the
// compensated sum of the float inputs. Null inputs are ignored; empty: Int(0).
// Invertible, exactly so for integers (the integer part is a 128-bit sum).
type sumAgg struct{ base }

func (a *sumAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *sumAgg) NewColumn() Column          { return &sumColumn{agg: a} }

// exactSum is the per-cell partial that Sum and Average share: the integer
// inputs' exact sum as a 128-bit number hi·2^64 + lo, where lo is a signed
// int64 (so while hi is 0 the sum is just lo), and the float inputs' sum as a
// compensated pair sum + cmp, with their count n (a floatPart per cell).
//
// Only lo is always present (8 bytes a cell). hi is allocated the first time
// an addition carries out of int64; fl the first time the column sees a
// float. hi cannot itself overflow: it moves by at most 1 per input event,
// so that would take 2^63 events. A cell's float part is one 24-byte struct,
// not three arrays, so that adding a float to a cell touches one cache line
// (two when it straddles), not three.
//
// The float pair is a Neumaier (Kahan–Babuška) sum: cmp collects the
// rounding error of every addition to sum, computed exactly, so sum + cmp
// stays the exact sum of what was added up to the (much smaller) rounding of
// cmp itself. Merging adds the other pair's sum to sum, compensated, and
// its compensation to cmp; retracting subtracts them likewise. That is what
// lets a running window cell that saw 1e100 arrive and leave again still
// hold 1e-5 exactly. When a retraction takes the float count to 0 the pair is
// set to exactly 0, so no drift survives the last float leaving.
type exactSum struct {
	lo []int64
	hi []int64     // nil until the first carry
	fl []floatPart // until the first float, nil or unused: the float inputs
	// floats: fl is in use. resetAll keeps its room for the next
	// floats of a recycled slice, without a new allocation.
	floats bool
	// eager: hi and fl are sized with lo, not made at their first use (eagerColumn).
	eager bool
}

// floatPart is one cell's float inputs: their compensated sum sum + cmp, and
// how many there are.
type floatPart struct {
	sum, cmp float64
	n        int64
}

// neumaier adds x to the compensated sum (s, c): the Kahan–Babuška sum of
// A. Neumaier 1974 ("Rundungsfehleranalyse einiger Verfahren zur Summation
// endlicher Summen", ZAMM 54(1)), whose c collects the exact rounding error
// of every t = s + x. Neumaier gets that error as (s - t) + x or (x - t) + s,
// with the larger operand first; this is Knuth's branch-free TwoSum (TAOCP
// vol. 2, §4.2.2), which gives the same exact error whichever operand is
// larger and lets the column loops run without a data-dependent branch.
func neumaier(s, c, x float64) (float64, float64) {
	t := s + x
	bp := t - s
	return t, c + ((s - (t - bp)) + (x - bp))
}

func (e *exactSum) resize(n int) {
	e.lo = resize(e.lo, n)
	if e.eager {
		e.hi, e.fl = resize(e.hi, n), resize(e.fl, n)
		return
	}
	e.hi = resizeLazy(e.hi, n)
	e.fl = resizeLazy(e.fl, n)
}

// eagerSides makes hi and fl sized with lo from now on (eagerColumn).
func (e *exactSum) eagerSides() { e.eager = true }

func (e *exactSum) needHi() {
	if e.hi == nil {
		e.hi = make([]int64, len(e.lo), cap(e.lo))
	}
}

func (e *exactSum) needFloat() {
	if e.floats {
		return
	}
	e.floats = true
	if e.fl != nil && len(e.fl) == len(e.lo) {
		clear(e.fl)
		return
	}
	e.fl = make([]floatPart, len(e.lo), cap(e.lo))
}

// addInt adds x to cell i's integer sum. (The Add methods repeat it inline.)
func (e *exactSum) addInt(i int, x int64) {
	a := e.lo[i]
	s := a + x
	e.lo[i] = s
	if (a^s)&(x^s) < 0 { // signed overflow: carry into hi
		e.carry(i, x)
	}
}

// carry records that lo[i] wrapped while adding a number of x's sign.
//
//go:noinline
func (e *exactSum) carry(i int, x int64) {
	e.needHi()
	if x >= 0 {
		e.hi[i]++
	} else {
		e.hi[i]--
	}
}

//go:noinline
func (e *exactSum) addFloat(i int, f float64) {
	e.needFloat()
	p := &e.fl[i]
	p.sum, p.cmp = neumaier(p.sum, p.cmp, f)
	p.n++
}

// hasFloat reports whether cell i holds a float input.
func (e *exactSum) hasFloat(i int) bool { return e.floats && e.fl[i].n != 0 }

// Overflowed reports whether cell i's float sum went past ±math.MaxFloat64 (or its rounding
// error with it): retracting the inputs that took it there does not bring it back, as ±Inf
// less any finite number stays ±Inf (overflowColumn).
func (e *exactSum) Overflowed(i int) bool {
	if !e.hasFloat(i) {
		return false
	}
	p := e.fl[i]
	return math.IsInf(p.sum, 0) || math.IsNaN(p.sum) || math.IsInf(p.cmp, 0) || math.IsNaN(p.cmp)
}

// hiOf is cell i's high word.
func (e *exactSum) hiOf(i int) int64 {
	if e.hi == nil {
		return 0
	}
	return e.hi[i]
}

// total is cell i's integer sum plus its float sum, rounded once where it can be: the
// integer part's nearest float64 and what rounding it left (exact while the part is within
// ±2^53, an integer otherwise), added to the float sum and its compensation with Neumaier's
// step. Adding the rounded integer part to the float sum rounded twice: 9007199254740993 +
// 0.5 gave 9007199254740992, where the nearest float64 is 9007199254740994 (a hostile round).
func (e *exactSum) total(i int) float64 {
	hi, lo := e.hiOf(i), e.lo[i]
	f := int128Float(hi, lo)
	if !e.hasFloat(i) {
		return f
	}
	var rest float64 // hi·2^64 + lo − f
	if hi != 0 || lo > 1<<53 || lo < -1<<53 {
		rest = int128Rest(hi, lo, f)
	}
	p := e.fl[i]
	s, c := neumaier(f, 0, p.sum)
	return s + (c + p.cmp + rest)
}

// int128Rest is hi·2^64 + lo − f, f a finite float64 near it, as the nearest float64.
func int128Rest(hi, lo int64, f float64) float64 {
	x := new(big.Int).Lsh(big.NewInt(hi), 64)
	x.Add(x, big.NewInt(lo))
	fi, _ := new(big.Float).SetFloat64(f).Int(nil)
	r, _ := new(big.Float).SetInt(x.Sub(x, fi)).Float64()
	return r
}

// merge adds o's cell j to cell i (o may be e, and j may be i).
func (e *exactSum) merge(i int, o *exactSum, j int) {
	x, h := o.lo[j], o.hiOf(j)
	var of floatPart
	if o.floats {
		of = o.fl[j]
	}
	e.addInt(i, x)
	if h != 0 {
		e.needHi()
		e.hi[i] += h
	}
	if of.n != 0 {
		e.needFloat()
		p := &e.fl[i]
		s, c := neumaier(p.sum, p.cmp, of.sum)
		p.sum, p.cmp = s, c+of.cmp
		p.n += of.n
	}
}

// retract removes o's cell j from cell i (o may be e).
func (e *exactSum) retract(i int, o *exactSum, j int) {
	y, h := o.lo[j], o.hiOf(j)
	var of floatPart
	if o.floats {
		of = o.fl[j]
	}
	a := e.lo[i]
	d := a - y
	e.lo[i] = d
	if (a^y)&(a^d) < 0 { // signed overflow of a - y: borrow from hi
		e.needHi()
		if y > 0 {
			e.hi[i]--
		} else {
			e.hi[i]++
		}
	}
	if h != 0 {
		e.needHi()
		e.hi[i] -= h
	}
	if of.n != 0 {
		e.needFloat()
		p := &e.fl[i]
		s, c := neumaier(p.sum, p.cmp, -of.sum)
		p.sum, p.cmp = s, c-of.cmp
		p.n -= of.n
		if p.n == 0 {
			p.sum, p.cmp = 0, 0 // no drift survives the last float leaving
		}
	}
}

// mergeAll adds the low words with kernels.AddInt64Overflow and, only when a
// lane overflowed, finds those lanes again (a lane overflowed iff the old
// value and the addend have one sign and the new value the other) to carry.
// The float parts have no kernel: one loop over the lanes.
func (e *exactSum) mergeAll(o *exactSum) {
	n := min(len(e.lo), len(o.lo))
	dst, s := e.lo[:n], o.lo[:n]
	if kernels.AddInt64Overflow(dst, s) {
		for k, x := range s {
			r := dst[k]
			if a := r - x; (a^r)&(x^r) < 0 {
				e.carry(k, x)
			}
		}
	}
	if o.hi != nil {
		e.needHi()
		kernels.AddInt64(e.hi[:n], o.hi[:n])
	}
	if o.floats {
		e.needFloat()
		fl := e.fl[:n]
		for k, x := range o.fl[:n] {
			p := &fl[k]
			s, c := neumaier(p.sum, p.cmp, x.sum)
			p.sum, p.cmp, p.n = s, c+x.cmp, p.n+x.n
		}
	}
}

// retractAll subtracts with kernels.SubInt64 and then checks every lane for a
// borrow (the kernels have no overflow-reporting subtraction).
func (e *exactSum) retractAll(o *exactSum) {
	n := min(len(e.lo), len(o.lo))
	dst, s := e.lo[:n], o.lo[:n]
	kernels.SubInt64(dst, s)
	var any int64
	for k, y := range s {
		d := dst[k]
		a := d + y
		any |= (a ^ y) & (a ^ d)
	}
	if any < 0 {
		e.needHi()
		for k, y := range s {
			d := dst[k]
			if a := d + y; (a^y)&(a^d) < 0 {
				if y > 0 {
					e.hi[k]--
				} else {
					e.hi[k]++
				}
			}
		}
	}
	if o.hi != nil {
		e.needHi()
		kernels.SubInt64(e.hi[:n], o.hi[:n])
	}
	if o.floats {
		e.needFloat()
		fl := e.fl[:n]
		for k, x := range o.fl[:n] {
			p := &fl[k]
			s, c := neumaier(p.sum, p.cmp, -x.sum)
			p.sum, p.cmp, p.n = s, c-x.cmp, p.n-x.n
			if p.n == 0 {
				p.sum, p.cmp = 0, 0
			}
		}
	}
}

func (e *exactSum) reset(i int) {
	e.lo[i] = 0
	if e.hi != nil {
		e.hi[i] = 0
	}
	if e.floats {
		e.fl[i] = floatPart{}
	}
}

// resetAll empties every cell and drops hi; the float arrays stay, unused, for needFloat.
func (e *exactSum) resetAll() {
	clear(e.lo)
	e.hi, e.floats = nil, false
}

func (e *exactSum) sizeBytes() int {
	return 8*(cap(e.lo)+cap(e.hi)) + 24*cap(e.fl)
}

// Encoding of an exactSum cell: flags (1: hi follows, 2: floats follow, 4:
// a compensation follows), lo as a zig-zag varint, then hi as a varint, then
// the float count as a varint and the float sum as 8 bytes, then the
// compensation as 8 bytes. (A Sum cell written before the compensation
// existed has no flag 4 and decodes unchanged.)
const (
	sumHasHi    = 1
	sumHasFloat = 2
	sumHasComp  = 4
)

func (e *exactSum) appendCell(b []byte, i int) []byte {
	var flags byte
	h := e.hiOf(i)
	if h != 0 {
		flags |= sumHasHi
	}
	if e.hasFloat(i) {
		flags |= sumHasFloat
		if e.fl[i].cmp != 0 {
			flags |= sumHasComp
		}
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, e.lo[i])
	if flags&sumHasHi != 0 {
		b = binary.AppendVarint(b, h)
	}
	if flags&sumHasFloat != 0 {
		b = binary.AppendVarint(b, e.fl[i].n)
		b = appendFloat(b, e.fl[i].sum)
	}
	if flags&sumHasComp != 0 {
		b = appendFloat(b, e.fl[i].cmp)
	}
	return b
}

// exactCell is one decoded exactSum cell, not yet stored.
type exactCell struct {
	lo, hi, fcnt int64
	fsum, fcmp   float64
}

func decodeExactCell(b []byte) (exactCell, []byte, error) {
	var x exactCell
	flags, b, err := getByte(b)
	if err != nil {
		return x, nil, err
	}
	if flags&^(sumHasHi|sumHasFloat|sumHasComp) != 0 || (flags&sumHasComp != 0 && flags&sumHasFloat == 0) {
		return x, nil, corrupt("sum flags %#x", flags)
	}
	if x.lo, b, err = getVarint(b); err != nil {
		return x, nil, err
	}
	if flags&sumHasHi != 0 {
		if x.hi, b, err = getVarint(b); err != nil {
			return x, nil, err
		}
	}
	if flags&sumHasFloat != 0 {
		if x.fcnt, b, err = getVarint(b); err != nil {
			return x, nil, err
		}
		if x.fsum, b, err = getFloat(b); err != nil {
			return x, nil, err
		}
	}
	if flags&sumHasComp != 0 {
		if x.fcmp, b, err = getFloat(b); err != nil {
			return x, nil, err
		}
	}
	if x.fcnt == 0 && (x.fsum != 0 || x.fcmp != 0) {
		return x, nil, corrupt("float sum without float inputs")
	}
	return x, b, nil
}

// store puts a decoded cell into cell i.
func (e *exactSum) store(i int, x exactCell) {
	e.lo[i] = x.lo
	if x.hi != 0 {
		e.needHi()
	}
	if e.hi != nil {
		e.hi[i] = x.hi
	}
	if x.fcnt != 0 {
		e.needFloat()
	}
	if e.floats {
		e.fl[i] = floatPart{sum: x.fsum, cmp: x.fcmp, n: x.fcnt}
	}
}

// sumColumn is Sum's column: an exactSum, 8 bytes a cell for integers only,
// 24 more once the column has seen a float (8 more once a sum carried).
type sumColumn struct {
	agg *sumAgg
	exactSum
}

func (c *sumColumn) other(src Column) (*sumColumn, error) {
	o, ok := src.(*sumColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *sumColumn) Len() int     { return len(c.lo) }
func (c *sumColumn) Resize(n int) { c.resize(n) }

func (c *sumColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := v.KindBits()
	switch k {
	case value.KindInt: // addInt by hand: with its call to carry it is too big to inline
		x := int64(bits)
		a := c.lo[i]
		s := a + x
		c.lo[i] = s
		if (a^s)&(x^s) < 0 {
			c.carry(i, x)
		}
	case value.KindFloat:
		if !c.floats {
			c.addFloat(i, math.Float64frombits(bits))
			return
		}
		p := &c.fl[i]
		p.sum, p.cmp = neumaier(p.sum, p.cmp, math.Float64frombits(bits))
		p.n++
	}
}

func (c *sumColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.merge(i, &o.exactSum, j)
	return nil
}

func (c *sumColumn) Retract(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.retract(i, &o.exactSum, j)
	return nil
}

func (c *sumColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.mergeAll(&o.exactSum)
	return nil
}

func (c *sumColumn) RetractAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.retractAll(&o.exactSum)
	return nil
}

// Result: Float(int part + float part) once a float is in the cell; else the
// exact Int, or ErrSumOverflow when it does not fit int64. A float sum beyond
// ±math.MaxFloat64 is ErrFloatOverflow.
func (c *sumColumn) Result(i int) (value.Value, error) {
	if c.hasFloat(i) {
		f := c.total(i)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return value.Null(), ErrFloatOverflow
		}
		return value.Float(f), nil
	}
	if c.hiOf(i) != 0 {
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

func (c *sumColumn) Reset(i int) { c.reset(i) }
func (c *sumColumn) ResetAll()   { c.resetAll() }

// Cell encoding: code, then the exactSum encoding.
func (c *sumColumn) AppendCell(b []byte, i int) []byte {
	return c.appendCell(append(b, c.agg.def.code), i)
}

func (c *sumColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	x, b, err := decodeExactCell(b)
	if err != nil {
		return nil, err
	}
	c.store(i, x)
	return b, nil
}

func (c *sumColumn) SizeBytes() int { return 128 + c.sizeBytes() }
