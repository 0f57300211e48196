package aggregate

import (
	"encoding/binary"
	"math"

	"github.com/scenario-server/scenario-server/value"
)

// varianceAgg is VarPop, VarSamp, StddevPop and StddevSamp of the numeric
// inputs (converted to float64), as float64. A cell is Welford's running
// (n, mean, M2) with M2 = Σ(x - mean)² (B. P. Welford 1962, "Note on a method
// for calculating corrected sums of squares and products", Technometrics
// 4(3)); cells merge with the parallel formula of Chan, Golub, LeVeque 1979
// ("Updating formulae and a pairwise algorithm for computing sample
// variances"). Never a sum of squares.
//
// VarPop = M2/n, VarSamp = M2/(n-1), the standard deviations their square
// roots. Null inputs are ignored; empty: null; one input: Pop = 0 and
// Samp = null. When n returns to 0 the cell is zeroed exactly, and an M2
// that rounding would make negative is taken as 0. Inputs whose deviations
// overflow float64 (M2 past about 1.8e308: inputs about 1e154 apart) give
// ErrFloatOverflow, not a value.
//
// Not invertible: windows answer it from coarser pre-merged partials, as Min
// and Max, never by taking the slice that leaves out of a running cell.
// Inverting the merge subtracts M2 terms of the size of the largest
// deviation the cell has seen: once an input of 1e17 had been in a sliding
// window, every later VarPop of the key was wrong ({1, 2} gave 1.0, and
// 2.5e33, for 0.25; a hostile round), as no compensation of floats can keep
// 34 orders of magnitude.
type varianceAgg struct {
	base
	kind varKind
}

type varKind uint8

const (
	varPop varKind = iota
	varSamp
	stddevPop
	stddevSamp
)

func (a *varianceAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *varianceAgg) NewColumn() Column          { return &varianceColumn{agg: a, kind: a.kind} }

// varianceColumn: 24 bytes a cell.
type varianceColumn struct {
	agg  *varianceAgg
	kind varKind
	n    []int64
	mean []float64
	m2   []float64
}

func (c *varianceColumn) other(src Column) (*varianceColumn, error) {
	o, ok := src.(*varianceColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *varianceColumn) Len() int { return len(c.n) }

func (c *varianceColumn) Resize(n int) {
	c.n = resize(c.n, n)
	c.mean = resize(c.mean, n)
	c.m2 = resize(c.m2, n)
}

// Add is Welford's update.
func (c *varianceColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := v.KindBits()
	x, ok := numberOf(k, bits)
	if !ok {
		return
	}
	n := c.n[i] + 1
	c.n[i] = n
	if n == 1 {
		c.mean[i], c.m2[i] = x, 0
		return
	}
	d := x - c.mean[i]
	c.mean[i] += d / float64(n)
	c.m2[i] += d * (x - c.mean[i])
}

// welfordMerge is Chan et al.'s combination of (na, ma, qa) and (nb, mb, qb).
func welfordMerge(na int64, ma, qa float64, nb int64, mb, qb float64) (int64, float64, float64) {
	switch {
	case nb == 0:
		return na, ma, qa
	case na == 0:
		return nb, mb, qb
	}
	n := na + nb
	fa, fb, fn := float64(na), float64(nb), float64(n)
	d := mb - ma
	return n, ma + d*(fb/fn), qa + qb + d*d*(fa*(fb/fn))
}

func (c *varianceColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.n[i], c.mean[i], c.m2[i] = welfordMerge(c.n[i], c.mean[i], c.m2[i], o.n[j], o.mean[j], o.m2[j])
	return nil
}

func (c *varianceColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	for k := range min(c.Len(), o.Len()) {
		c.n[k], c.mean[k], c.m2[k] = welfordMerge(c.n[k], c.mean[k], c.m2[k], o.n[k], o.mean[k], o.m2[k])
	}
	return nil
}

// Retract and RetractAll: not invertible (see varianceAgg).
func (c *varianceColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *varianceColumn) RetractAll(Column) error        { return ErrNotInvertible }

func (c *varianceColumn) Result(i int) (value.Value, error) {
	if c.n[i] > 0 && (isNaNOrInf(c.mean[i]) || isNaNOrInf(c.m2[i])) {
		// Deviations past float64: M2 is ±Inf or NaN (-Inf would pass for 0 below).
		return value.Null(), ErrFloatOverflow
	}
	n, q := c.n[i], max(c.m2[i], 0)
	var r float64
	switch {
	case n <= 0:
		return value.Null(), nil
	case c.kind == varPop || c.kind == stddevPop:
		r = q / float64(n)
	case n == 1:
		return value.Null(), nil
	default:
		r = q / float64(n-1)
	}
	if c.kind == stddevPop || c.kind == stddevSamp {
		r = math.Sqrt(r)
	}
	return value.Float(r), nil // NaN or ±Inf become null
}

func isNaNOrInf(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

func (c *varianceColumn) Reset(i int) { c.n[i], c.mean[i], c.m2[i] = 0, 0, 0 }

func (c *varianceColumn) ResetAll() {
	clear(c.n)
	clear(c.mean)
	clear(c.m2)
}

// Cell encoding: code, n (zig-zag varint), and when n is not 0 the mean and
// M2 (8 bytes each).
func (c *varianceColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	b = binary.AppendVarint(b, c.n[i])
	if c.n[i] != 0 {
		b = appendFloat(b, c.mean[i])
		b = appendFloat(b, c.m2[i])
	}
	return b
}

func (c *varianceColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	n, b, err := getVarint(b)
	if err != nil {
		return nil, err
	}
	var mean, m2 float64
	if n != 0 {
		if mean, b, err = getFloat(b); err != nil {
			return nil, err
		}
		if m2, b, err = getFloat(b); err != nil {
			return nil, err
		}
	}
	c.n[i], c.mean[i], c.m2[i] = n, mean, m2
	return b, nil
}

func (c *varianceColumn) SizeBytes() int { return 96 + 8*(cap(c.n)+cap(c.mean)+cap(c.m2)) }
