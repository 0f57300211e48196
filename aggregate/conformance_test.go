package aggregate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// conformanceCase is one sequence of inputs. Every case runs against every
// aggregator of Funcs(); inputs an aggregator's Accept refuses are left out
// for it (after checking that the refusal is an *InputError).
type conformanceCase struct {
	name   string
	inputs []oracleInput
}

// seqOf gives values event times and arrival numbers: times from ts (cycled)
// when given, else the position.
func inputsOf(ts []int64, vs ...value.Value) []oracleInput {
	out := make([]oracleInput, len(vs))
	for i, v := range vs {
		t := int64(i)
		if len(ts) > 0 {
			t = ts[i%len(ts)]
		}
		out[i] = oracleInput{V: v, T: t, Seq: uint64(i + 1)}
	}
	return out
}

func conformanceCases() []conformanceCase {
	const maxI, minI = math.MaxInt64, math.MinInt64
	negZero := math.Copysign(0, -1)
	rec := value.NewRecord([]string{"a", "b"}, []value.Value{value.Int(1), value.String("x")})
	rng := rand.New(rand.NewPCG(1, 2))
	var many, spread, dup []value.Value
	for range 2000 {
		many = append(many, value.Int(rng.Int64N(2001)-1000))
	}
	for range 300 {
		// Magnitudes from 1e-100 to 1e100, both signs, some zeros.
		x := math.Pow(10, rng.Float64()*200-100)
		if rng.IntN(2) == 0 {
			x = -x
		}
		if rng.IntN(20) == 0 {
			x = 0
		}
		spread = append(spread, value.Float(x))
	}
	for i := range 500 {
		dup = append(dup, value.Int(int64(i%7)), value.String(fmt.Sprint(i%3)), value.Float(float64(i%5)/2))
	}
	var manyTimes []int64
	for range 50 {
		manyTimes = append(manyTimes, rng.Int64N(20))
	}
	return []conformanceCase{
		{"empty", nil},
		{"one int", inputsOf(nil, value.Int(42))},
		{"one null", inputsOf(nil, value.Null())},
		{"small ints", inputsOf(nil, value.Int(3), value.Int(1), value.Int(4), value.Int(1), value.Int(5), value.Int(9), value.Int(2), value.Int(6))},
		{"out of order times with ties", inputsOf([]int64{30, 10, 20, 10, 30, 20},
			value.String("a"), value.String("b"), value.String("c"), value.String("d"), value.String("e"), value.String("f"))},
		{"ints near ±2^63", inputsOf([]int64{5, 3, 9, 1},
			value.Int(maxI), value.Int(maxI-1), value.Int(1), value.Int(minI), value.Int(minI+1), value.Int(-1),
			value.Int(maxI), value.Int(maxI), value.Int(maxI), value.Int(-5))},
		{"overflowing sum", inputsOf(nil, value.Int(maxI), value.Int(maxI), value.Int(10))},
		{"negative overflow", inputsOf(nil, value.Int(minI), value.Int(-1), value.Int(minI))},
		{"floats with signed zeros", inputsOf(nil, value.Float(0.5), value.Float(negZero), value.Float(-2.25),
			value.Float(0), value.Float(1e-3), value.Float(negZero), value.Float(7.125))},
		{"ints and floats", inputsOf([]int64{2, 1}, value.Int(1), value.Float(1), value.Int(2), value.Float(0.1),
			value.Float(0.2), value.Int(-3), value.Null(), value.Float(2.5e10), value.Int(7))},
		{"numbers and strings", inputsOf(nil, value.String("m"), value.Int(5), value.Float(-1.5), value.String("a"),
			value.String("zz"), value.Int(5), value.Null(), value.String(""))},
		{"only nulls", inputsOf(nil, value.Null(), value.Null(), value.Null())},
		{"booleans and nulls", inputsOf([]int64{4, 2, 4}, value.Bool(true), value.Null(), value.Bool(false),
			value.Bool(true), value.Bool(true), value.Null(), value.Bool(false))},
		{"lists and records", inputsOf(nil, value.List([]value.Value{value.Int(1), value.Float(negZero)}), rec,
			value.List(nil), rec, value.List([]value.Value{value.Int(1), value.Float(0)}), value.Int(1), value.Null())},
		{"many duplicates", inputsOf(manyTimes, dup...)},
		{"2000 ints", inputsOf(manyTimes, many...)},
		{"wide spread floats", inputsOf(nil, spread...)},
		{"tiny and subnormal", inputsOf(nil, value.Float(5e-324), value.Float(-1e-310), value.Float(2.2250738585072014e-308),
			value.Float(1e-300), value.Float(0), value.Float(-3e-308))},
		{"large cancelling", inputsOf(nil, value.Float(1e15), value.Float(0.125), value.Float(-1e15), value.Float(3),
			value.Int(1<<53+1), value.Int(-(1 << 53)))},
	}
}

// conformanceSpecs is every aggregator of Funcs(), with several parameter
// values for the parameterized ones.
func conformanceSpecs() []Spec {
	var specs []Spec
	for _, fi := range Funcs() {
		switch fi.Param {
		case "quantile":
			for _, q := range []float64{0, 0.3, 0.5, 0.95, 1} {
				specs = append(specs, Spec{Func: fi.Name, Quantile: q})
			}
		case "precision":
			specs = append(specs, Spec{Func: fi.Name}, Spec{Func: fi.Name, Precision: 4}, Spec{Func: fi.Name, Precision: 18})
		default:
			specs = append(specs, Spec{Func: fi.Name})
		}
	}
	return specs
}

// accepted returns the inputs a accepts, checking that the others are
// refused with an *InputError.
func acceptedInputs(t testing.TB, a Aggregator, ins []oracleInput) []oracleInput {
	t.Helper()
	var out []oracleInput
	for _, x := range ins {
		err := a.Accept(x.V)
		if err == nil {
			out = append(out, x)
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Fatalf("%s.Accept(%s): %v is not an *InputError", a.Func(), jsonOf(x.V), err)
		}
	}
	return out
}

// fill adds inputs to cell i of c.
func fillCell(c Column, i int, ins []oracleInput) {
	for _, x := range ins {
		c.Add(i, x.V, x.T, x.Seq)
	}
}

// split deals the inputs into k random parts.
func splitInputs(rng *rand.Rand, ins []oracleInput, k int) [][]oracleInput {
	parts := make([][]oracleInput, k)
	for _, x := range ins {
		p := rng.IntN(k)
		parts[p] = append(parts[p], x)
	}
	return parts
}

func checkCell(t *testing.T, what string, s Spec, c Column, i int, inputs, involved []oracleInput) {
	t.Helper()
	got, err := c.Result(i)
	if e := oracleCheck(s, inputs, involved, got, err); e != nil {
		t.Fatalf("%s: %v", what, e)
	}
}

func TestConformance(t *testing.T) {
	cases := conformanceCases()
	for _, s := range conformanceSpecs() {
		name := s.Func
		if s.Quantile != 0 || s.Precision != 0 {
			name = fmt.Sprintf("%s(q=%v,p=%d)", s.Func, s.Quantile, s.Precision)
		}
		t.Run(name, func(t *testing.T) {
			a := mustAgg(t, s)
			rng := rand.New(rand.NewPCG(uint64(len(name)), 7))
			full := make([][]oracleInput, len(cases))
			for ci, tc := range cases {
				ins := acceptedInputs(t, a, tc.inputs)
				full[ci] = ins
				t.Run(tc.name, func(t *testing.T) { conformanceCase1(t, s, a, ins, rng) })
			}
			// (c) MergeAll of whole columns: one cell per case, the first
			// column holds a random part of each case, the second the rest;
			// (d) RetractAll of the second column leaves the first parts.
			var colA Column
			restOf := make([][]oracleInput, len(cases))
			for round := range 6 {
				var colB Column
				colA, colB = a.NewColumn(), a.NewColumn()
				colA.Resize(len(cases))
				colB.Resize(len(cases))
				for ci := range cases {
					parts := splitInputs(rng, full[ci], 2)
					fillCell(colA, ci, parts[0])
					fillCell(colB, ci, parts[1])
					restOf[ci] = parts[0]
				}
				if err := colA.MergeAll(colB); err != nil {
					t.Fatal(err)
				}
				for ci := range cases {
					checkCell(t, fmt.Sprintf("round %d: MergeAll %s", round, cases[ci].name), s, colA, ci, full[ci], nil)
				}
				if !a.Invertible() {
					if err := colA.RetractAll(colB); !errors.Is(err, ErrNotInvertible) {
						t.Fatalf("RetractAll: %v, want ErrNotInvertible", err)
					}
					continue
				}
				if err := colA.RetractAll(colB); err != nil {
					t.Fatal(err)
				}
				for ci := range cases {
					checkCell(t, fmt.Sprintf("round %d: RetractAll %s", round, cases[ci].name), s, colA, ci, restOf[ci], full[ci])
				}
			}
			inA := full // what colA's cells hold now
			if a.Invertible() {
				inA = restOf
			}
			// Columns of different lengths merge the cells both have, only.
			short := a.NewColumn()
			short.Resize(2)
			fillCell(short, 0, full[3])
			if err := short.MergeAll(colA); err != nil {
				t.Fatal(err)
			}
			checkCell(t, "MergeAll into a shorter column", s, short, 0, append(append([]oracleInput(nil), full[3]...), inA[0]...), nil)
			checkCell(t, "MergeAll into a shorter column", s, short, 1, inA[1], nil)
			wide := a.NewColumn()
			wide.Resize(4)
			for ci := range 4 {
				fillCell(wide, ci, full[4])
			}
			if err := wide.MergeAll(short); err != nil {
				t.Fatal(err)
			}
			checkCell(t, "MergeAll from a shorter column", s, wide, 1, append(append([]oracleInput(nil), full[4]...), inA[1]...), nil)
			checkCell(t, "MergeAll from a shorter column", s, wide, 3, full[4], nil)
			// (e) the whole column encoded cell after cell decodes back.
			var b []byte
			for ci := range cases {
				b = colA.AppendCell(b, ci)
			}
			dec := a.NewColumn()
			dec.Resize(len(cases))
			for ci := range cases {
				var err error
				if b, err = dec.DecodeCell(ci, b); err != nil {
					t.Fatalf("DecodeCell %s: %v", cases[ci].name, err)
				}
				g1, e1 := colA.Result(ci)
				g2, e2 := dec.Result(ci)
				if !sameValue(g1, g2) || !errors.Is(e2, e1) {
					t.Fatalf("%s: round trip gives (%s, %v), was (%s, %v)", cases[ci].name, jsonOf(g2), e2, jsonOf(g1), e1)
				}
			}
			if len(b) != 0 {
				t.Fatalf("%d bytes left after decoding every cell", len(b))
			}
		})
	}
}

// conformanceCase1 checks one aggregator on one case: (a) one cell, (b)
// random splits merged, (d) retracting a part, (e) the encoding round trip.
func conformanceCase1(t *testing.T, s Spec, a Aggregator, ins []oracleInput, rng *rand.Rand) {
	// (a) every input in one cell.
	c := a.NewColumn()
	c.Resize(1)
	fillCell(c, 0, ins)
	checkCell(t, "one cell", s, c, 0, ins, nil)
	// The column Result does not change the cell: ask twice.
	checkCell(t, "one cell, again", s, c, 0, ins, nil)

	for round := range 4 {
		// (b) k random parts in separate cells of one column, merged into a
		// fresh cell (cell 0), then also into a separate column.
		k := 1 + rng.IntN(5)
		parts := splitInputs(rng, ins, k)
		col := a.NewColumn()
		col.Resize(k + 1)
		for p, part := range parts {
			fillCell(col, p+1, part)
		}
		for p := range parts {
			if err := col.Merge(0, col, p+1); err != nil {
				t.Fatal(err)
			}
		}
		checkCell(t, fmt.Sprintf("round %d: %d parts merged", round, k), s, col, 0, ins, nil)
		other := a.NewColumn()
		other.Resize(1)
		for p := range parts {
			if err := other.Merge(0, col, p+1); err != nil {
				t.Fatal(err)
			}
		}
		checkCell(t, fmt.Sprintf("round %d: %d parts merged across columns", round, k), s, other, 0, ins, nil)

		// (d) retract one part: the rest remains.
		p := rng.IntN(k)
		err := col.Retract(0, col, p+1)
		if !a.Invertible() {
			if !errors.Is(err, ErrNotInvertible) {
				t.Fatalf("Retract: %v, want ErrNotInvertible", err)
			}
			checkCell(t, "after a refused Retract", s, col, 0, ins, nil)
		} else {
			if err != nil {
				t.Fatal(err)
			}
			var rest []oracleInput
			for q, part := range parts {
				if q != p {
					rest = append(rest, part...)
				}
			}
			checkCell(t, fmt.Sprintf("round %d: part %d of %d retracted", round, p, k), s, col, 0, rest, ins)
			// and put back
			if err := col.Merge(0, col, p+1); err != nil {
				t.Fatal(err)
			}
			checkCell(t, fmt.Sprintf("round %d: part put back", round), s, col, 0, ins, ins)
		}

		// (e) round trip of every cell, into a column whose cells held
		// something else before.
		dec := a.NewColumn()
		dec.Resize(k + 1)
		fillCell(dec, 0, ins)
		for q := range k + 1 {
			b := col.AppendCell([]byte{0xEE}, q)
			if b[0] != 0xEE {
				t.Fatal("AppendCell overwrote the buffer")
			}
			rest, err := dec.DecodeCell(q, append(b[1:], 0xAB))
			if err != nil {
				t.Fatalf("DecodeCell(%d): %v", q, err)
			}
			if len(rest) != 1 || rest[0] != 0xAB {
				t.Fatalf("DecodeCell(%d) left %x", q, rest)
			}
			g1, e1 := col.Result(q)
			g2, e2 := dec.Result(q)
			if !sameValue(g1, g2) || !errors.Is(e2, e1) {
				t.Fatalf("cell %d: round trip gives (%s, %v), was (%s, %v)", q, jsonOf(g2), e2, jsonOf(g1), e1)
			}
			// The encoding depends on the partial only, not on how the cell
			// was built: the decoded cell encodes to the same bytes. (Not
			// yet for ApproximateSetCardinality: axiomhq/hyperloglog's
			// encoding of a merged sketch keeps its sparse list and temporary
			// set apart, and a decoded one encodes them differently.)
			if again := dec.AppendCell(nil, q); s.Func != "ApproximateSetCardinality" && !bytes.Equal(again, b[1:]) {
				t.Fatalf("cell %d: re-encoded to %x, was %x", q, again, b[1:])
			}
			// A truncated encoding is an error and leaves the cell alone.
			if len(b) > 2 {
				if _, err := dec.DecodeCell(q, b[1:len(b)-1]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("truncated cell %d: %v", q, err)
				}
				if g3, e3 := dec.Result(q); !sameValue(g3, g2) || !errors.Is(e3, e2) {
					t.Fatalf("a failed DecodeCell changed cell %d", q)
				}
			}
		}
	}
}

// FuzzDecodeCell feeds arbitrary bytes to DecodeCell of every aggregator: it
// must never panic, and what it accepts must give a Result, merge, and
// encode again to a cell that decodes to the same Result.
func FuzzDecodeCell(f *testing.F) {
	specs := conformanceSpecs()
	cases := conformanceCases()
	for si, s := range specs {
		a, err := New(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, tc := range cases[:12] {
			c := a.NewColumn()
			c.Resize(1)
			fillCell(c, 0, acceptedInputs(f, a, tc.inputs))
			f.Add(uint8(si), c.AppendCell(nil, 0))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		s := specs[int(which)%len(specs)]
		a, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		c := a.NewColumn()
		c.Resize(2)
		c.Add(0, value.Int(1), 0, 0)
		if _, err := c.DecodeCell(1, data); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		r1, e1 := c.Result(1)
		_ = c.Merge(0, c, 1)
		_, _ = c.Result(0)
		b := c.AppendCell(nil, 1)
		d := a.NewColumn()
		d.Resize(1)
		if _, err := d.DecodeCell(0, b); err != nil {
			t.Fatalf("re-encoded cell does not decode: %v", err)
		}
		r2, e2 := d.Result(0)
		if !sameValue(r1, r2) || !errors.Is(e2, e1) {
			t.Fatalf("re-encoded cell gives (%s, %v), was (%s, %v)", jsonOf(r2), e2, jsonOf(r1), e1)
		}
	})
}
