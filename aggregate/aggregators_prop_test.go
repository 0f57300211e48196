package aggregate

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/scenario-server/scenario-server/value"
)

// Property tests: random sequences of Add, Merge, MergeAll, Retract,
// RetractAll, Reset, Resize and encoding round trips on two columns, checked
// against the oracle after every step.

// minPropertyCases is how many cases each property runs at least in a plain
// `go test` (rapid's default is 100 per rapid.Check; -rapid.checks raises
// it, and the loop below then runs fewer rounds).
const minPropertyCases = 1000

func checkProperty(t *testing.T, prop func(*rapid.T)) {
	t.Helper()
	checks := 100
	if f := flag.Lookup("rapid.checks"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			checks = n
		}
	}
	rounds := (minPropertyCases + checks - 1) / checks
	for r := 0; r < rounds && !t.Failed(); r++ {
		rapid.Check(t, prop)
	}
}

func TestPropertyAllAggregators(t *testing.T) {
	checkProperty(t, func(rt *rapid.T) {
		runColumnProperty(rt, drawSpec(rt, Funcs()), nil)
	})
}

func TestPropertyInvertible(t *testing.T) {
	var inv []FuncInfo
	for _, fi := range Funcs() {
		if fi.Invertible {
			inv = append(inv, fi)
		}
	}
	checkProperty(t, func(rt *rapid.T) {
		runColumnProperty(rt, drawSpec(rt, inv), nil)
	})
}

// Sum over integers only, most of them near ±2^63: the result must be exact
// (or ErrSumOverflow exactly when the true sum leaves int64).
func TestPropertySumExact(t *testing.T) {
	checkProperty(t, func(rt *rapid.T) {
		runColumnProperty(rt, Spec{Func: "Sum"}, func(rt *rapid.T, label string) value.Value {
			if rapid.IntRange(0, 2).Draw(rt, label+"/small") == 0 {
				return value.Int(rapid.Int64Range(-3, 3).Draw(rt, label+"/int"))
			}
			return value.Int(drawEdgeInt(rt, label))
		})
	})
}

func drawSpec(rt *rapid.T, funcs []FuncInfo) Spec {
	fi := rapid.SampledFrom(funcs).Draw(rt, "func")
	s := Spec{Func: fi.Name}
	switch fi.Param {
	case "quantile":
		s.Quantile = rapid.OneOf(
			rapid.SampledFrom([]float64{0, 0.25, 0.5, 0.95, 0.99, 1}),
			rapid.Float64Range(0, 1),
		).Draw(rt, "quantile")
	case "precision":
		s.Precision = rapid.SampledFrom([]int{0, 4, 8, 14, 18}).Draw(rt, "precision")
	}
	return s
}

func drawEdgeInt(rt *rapid.T, label string) int64 {
	k := rapid.Int64Range(0, 3).Draw(rt, label+"/k")
	switch rapid.IntRange(0, 5).Draw(rt, label+"/edge") {
	case 0:
		return math.MaxInt64 - k
	case 1:
		return math.MinInt64 + k
	case 2:
		return 1<<62 + k
	case 3:
		return -(1 << 62) - k
	case 4:
		return 1<<53 + 1 + k
	}
	return -(1 << 53) - 1 - k
}

func drawNumber(rt *rapid.T, label string) value.Value {
	switch rapid.IntRange(0, 9).Draw(rt, label+"/num") {
	case 0, 1, 2:
		return value.Int(rapid.Int64Range(-1000, 1000).Draw(rt, label+"/int"))
	case 3:
		return value.Int(drawEdgeInt(rt, label))
	case 4, 5:
		return value.Float(float64(rapid.Int64Range(-100000, 100000).Draw(rt, label+"/frac")) / 64)
	case 6:
		// Any magnitude from 1e-30 to 1e30, either sign.
		m := rapid.Float64Range(1, 10).Draw(rt, label+"/mant")
		e := rapid.IntRange(-30, 30).Draw(rt, label+"/exp")
		x := m * math.Pow(10, float64(e))
		if rapid.Bool().Draw(rt, label+"/neg") {
			x = -x
		}
		return value.Float(x)
	case 7:
		return value.Float(rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 5e-324, -1e-310, 1e100, -1e100, 0.1}).Draw(rt, label+"/special"))
	}
	return value.Float(rapid.Float64Range(-1e6, 1e6).Draw(rt, label+"/float"))
}

func drawScalar(rt *rapid.T, label string) value.Value {
	switch rapid.IntRange(0, 5).Draw(rt, label+"/scalar") {
	case 0:
		return value.Null()
	case 1:
		return value.Bool(rapid.Bool().Draw(rt, label+"/bool"))
	case 2, 3:
		return value.String(rapid.SampledFrom([]string{"", "a", "b", "ab", "zz", "é"}).Draw(rt, label+"/str"))
	}
	return drawNumber(rt, label)
}

func drawAny(rt *rapid.T, label string) value.Value {
	switch rapid.IntRange(0, 7).Draw(rt, label+"/any") {
	case 0:
		n := rapid.IntRange(0, 2).Draw(rt, label+"/len")
		items := make([]value.Value, n)
		for i := range items {
			items[i] = drawScalar(rt, fmt.Sprintf("%s/item%d", label, i))
		}
		return value.List(items)
	case 1:
		return value.NewRecord([]string{"k"}, []value.Value{drawScalar(rt, label+"/field")})
	}
	return drawScalar(rt, label)
}

// drawInput draws a value for fi: mostly of a kind it accepts, sometimes of
// any kind (the property then checks Accept's verdict).
func drawInput(rt *rapid.T, fi FuncInfo, label string) value.Value {
	if rapid.IntRange(0, 19).Draw(rt, label+"/wild") == 0 {
		return drawAny(rt, label)
	}
	switch fi.Input {
	case "boolean":
		switch rapid.IntRange(0, 2).Draw(rt, label+"/b") {
		case 0:
			return value.Null()
		case 1:
			return value.Bool(true)
		}
		return value.Bool(false)
	case "number":
		if rapid.IntRange(0, 9).Draw(rt, label+"/null") == 0 {
			return value.Null()
		}
		return drawNumber(rt, label)
	case "number or string":
		switch rapid.IntRange(0, 9).Draw(rt, label+"/ns") {
		case 0:
			return value.Null()
		case 1, 2, 3:
			return value.String(rapid.SampledFrom([]string{"", "a", "b", "ab", "zz"}).Draw(rt, label+"/str"))
		}
		return drawNumber(rt, label)
	}
	return drawAny(rt, label)
}

// wantAccept is what Accept must say, by the rules of docs/semantics.md §5.
func wantAccept(fi FuncInfo, v value.Value) bool {
	switch fi.Input {
	case "boolean":
		return v.Kind() == value.KindBool || v.IsNull()
	case "number":
		return v.IsNumber() || v.IsNull()
	case "number or string":
		return v.IsNumber() || v.IsNull() || v.Kind() == value.KindString
	}
	return true
}

type propCell struct {
	inputs   []oracleInput // what the cell holds
	involved []oracleInput // everything that went through it since the last reset
	version  int           // bumped by every change
	merged   []propMerge   // partials merged in that may be retracted
}

type propMerge struct {
	col, cell, version int
	inputs, involved   []oracleInput
}

type propState struct {
	rt    *rapid.T
	spec  Spec
	agg   Aggregator
	cols  [2]Column
	model [2][]propCell
	seq   uint64
}

func (p *propState) check(col, i int, what string) {
	m := &p.model[col][i]
	got, err := p.cols[col].Result(i)
	if e := oracleCheck(p.spec, m.inputs, m.involved, got, err); e != nil {
		p.rt.Fatalf("%s, column %d cell %d: %v\ninputs: %s", what, col, i, e, inputsString(m.inputs))
	}
}

func inputsString(ins []oracleInput) string {
	vs := make([]value.Value, len(ins))
	for i, x := range ins {
		vs[i] = x.V
	}
	return jsonOf(value.List(vs))
}

func (p *propState) touch(col, i int) { p.model[col][i].version++ }

// merge models merging src cell j into dst cell i.
func (p *propState) merge(dc, i, sc, j int) {
	src := p.model[sc][j]
	rec := propMerge{col: sc, cell: j, version: src.version, inputs: slices.Clone(src.inputs), involved: slices.Clone(src.involved)}
	dst := &p.model[dc][i]
	dst.inputs = append(dst.inputs, rec.inputs...)
	dst.involved = append(dst.involved, rec.involved...)
	dst.version++
	dst.merged = append(dst.merged, rec)
}

// retractable returns the index of a still-valid record of (sc, j) in dst.
func (p *propState) retractable(dc, i, sc, j int) int {
	dst := &p.model[dc][i]
	for k, r := range dst.merged {
		if r.col == sc && r.cell == j && r.version == p.model[sc][j].version && !(dc == sc && i == j) {
			return k
		}
	}
	return -1
}

// retract models removing record k from dst cell i.
func (p *propState) retract(dc, i, k int) {
	dst := &p.model[dc][i]
	rec := dst.merged[k]
	dst.merged = slices.Delete(dst.merged, k, k+1)
	for _, x := range rec.inputs {
		idx := slices.IndexFunc(dst.inputs, func(y oracleInput) bool {
			return y.Seq == x.Seq && y.T == x.T && sameValue(y.V, x.V)
		})
		if idx < 0 {
			p.rt.Fatalf("model: retracting an input the cell does not hold")
		}
		dst.inputs = slices.Delete(dst.inputs, idx, idx+1)
	}
	dst.version++
}

func (p *propState) reset(col, i int) {
	v := p.model[col][i].version
	p.model[col][i] = propCell{version: v + 1}
}

func runColumnProperty(rt *rapid.T, spec Spec, gen func(*rapid.T, string) value.Value) {
	agg, err := New(spec)
	if err != nil {
		rt.Fatalf("New(%+v): %v", spec, err)
	}
	var fi FuncInfo
	for _, f := range Funcs() {
		if f.Name == spec.Func {
			fi = f
		}
	}
	n := rapid.IntRange(1, 4).Draw(rt, "cells")
	p := &propState{rt: rt, spec: spec, agg: agg}
	for c := range p.cols {
		p.cols[c] = agg.NewColumn()
		p.cols[c].Resize(n)
		p.model[c] = make([]propCell, n)
	}
	steps := rapid.IntRange(5, 80).Draw(rt, "steps")
	for step := range steps {
		label := fmt.Sprintf("step%d", step)
		col := rapid.IntRange(0, 1).Draw(rt, label+"/col")
		i := rapid.IntRange(0, n-1).Draw(rt, label+"/cell")
		switch op := rapid.IntRange(0, 13).Draw(rt, label+"/op"); op {
		case 0, 1, 2, 3, 4: // Add
			var v value.Value
			if gen != nil {
				v = gen(rt, label)
			} else {
				v = drawInput(rt, fi, label)
			}
			err := agg.Accept(v)
			if want := wantAccept(fi, v); want != (err == nil) {
				rt.Fatalf("%s.Accept(%s) = %v", spec.Func, jsonOf(v), err)
			}
			if err != nil {
				var ie *InputError
				if !errors.As(err, &ie) {
					rt.Fatalf("Accept error %v is not an *InputError", err)
				}
				continue
			}
			p.seq++
			in := oracleInput{V: v, T: rapid.Int64Range(-5, 5).Draw(rt, label+"/t"), Seq: p.seq}
			p.cols[col].Add(i, in.V, in.T, in.Seq)
			m := &p.model[col][i]
			m.inputs = append(m.inputs, in)
			m.involved = append(m.involved, in)
			m.version++
			p.check(col, i, "after Add")
		case 5, 6: // Merge
			sc := rapid.IntRange(0, 1).Draw(rt, label+"/srccol")
			j := rapid.IntRange(0, n-1).Draw(rt, label+"/srccell")
			if err := p.cols[col].Merge(i, p.cols[sc], j); err != nil {
				rt.Fatalf("Merge: %v", err)
			}
			p.merge(col, i, sc, j)
			p.check(col, i, "after Merge")
			p.check(sc, j, "source after Merge")
		case 7: // MergeAll
			sc := 1 - col
			if err := p.cols[col].MergeAll(p.cols[sc]); err != nil {
				rt.Fatalf("MergeAll: %v", err)
			}
			for k := range n {
				p.merge(col, k, sc, k)
			}
			for k := range n {
				p.check(col, k, "after MergeAll")
			}
		case 8, 9: // Retract a partial merged earlier, from any cell that has one
			if !agg.Invertible() {
				if err := p.cols[col].Retract(i, p.cols[col], i); !errors.Is(err, ErrNotInvertible) {
					rt.Fatalf("Retract: %v, want ErrNotInvertible", err)
				}
				p.check(col, i, "after a refused Retract")
				continue
			}
			type target struct{ col, cell, rec int }
			var targets []target
			for c := range p.cols {
				for k := range n {
					for r, m := range p.model[c][k].merged {
						if p.retractable(c, k, m.col, m.cell) == r {
							targets = append(targets, target{c, k, r})
						}
					}
				}
			}
			if len(targets) == 0 {
				continue
			}
			tg := targets[rapid.IntRange(0, len(targets)-1).Draw(rt, label+"/target")]
			r := p.model[tg.col][tg.cell].merged[tg.rec]
			if err := p.cols[tg.col].Retract(tg.cell, p.cols[r.col], r.cell); err != nil {
				rt.Fatalf("Retract: %v", err)
			}
			p.retract(tg.col, tg.cell, tg.rec)
			p.check(tg.col, tg.cell, "after Retract")
		case 10: // RetractAll when every cell of the other column can be retracted, else MergeAll
			sc := 1 - col
			if !agg.Invertible() {
				if err := p.cols[col].RetractAll(p.cols[sc]); !errors.Is(err, ErrNotInvertible) {
					rt.Fatalf("RetractAll: %v, want ErrNotInvertible", err)
				}
				continue
			}
			recs := make([]int, n)
			ok := true
			for k := range n {
				if recs[k] = p.retractable(col, k, sc, k); recs[k] < 0 {
					ok = false
				}
			}
			if !ok {
				if err := p.cols[col].MergeAll(p.cols[sc]); err != nil {
					rt.Fatalf("MergeAll: %v", err)
				}
				for k := range n {
					p.merge(col, k, sc, k)
					p.check(col, k, "after MergeAll")
				}
				continue
			}
			if err := p.cols[col].RetractAll(p.cols[sc]); err != nil {
				rt.Fatalf("RetractAll: %v", err)
			}
			for k := range n {
				p.retract(col, k, recs[k])
				p.check(col, k, "after RetractAll")
			}
		case 11: // Reset, or cut off by Resize and grow back
			if rapid.Bool().Draw(rt, label+"/resize") {
				p.cols[col].Resize(i)
				p.cols[col].Resize(n)
				for k := i; k < n; k++ {
					p.reset(col, k)
				}
			} else {
				p.cols[col].Reset(i)
				p.reset(col, i)
			}
			p.check(col, i, "after Reset")
		case 12: // copy a cell through its encoding
			dc := rapid.IntRange(0, 1).Draw(rt, label+"/dstcol")
			j := rapid.IntRange(0, n-1).Draw(rt, label+"/dstcell")
			b := p.cols[col].AppendCell(nil, i)
			rest, err := p.cols[dc].DecodeCell(j, b)
			if err != nil || len(rest) != 0 {
				rt.Fatalf("DecodeCell: %v (%d bytes left)", err, len(rest))
			}
			src := p.model[col][i]
			v := p.model[dc][j].version
			p.model[dc][j] = propCell{inputs: slices.Clone(src.inputs), involved: slices.Clone(src.involved), version: v + 1}
			p.check(dc, j, "after a round trip")
		case 13: // ResetAll, rarely
			if rapid.IntRange(0, 3).Draw(rt, label+"/really") == 0 {
				p.cols[col].ResetAll()
				for k := range n {
					p.reset(col, k)
				}
			}
		}
	}
	for c := range p.cols {
		for k := range n {
			p.check(c, k, "at the end")
		}
	}
}
