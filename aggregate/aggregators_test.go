package aggregate

import (
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// Hand-worked expectations: every expected value below was computed by hand
// (the working is in the comments), never taken from the program.

func mustAgg(t testing.TB, s Spec) Aggregator {
	t.Helper()
	a, err := New(s)
	if err != nil {
		t.Fatalf("New(%+v): %v", s, err)
	}
	return a
}

type hin struct {
	v   value.Value
	t   int64
	seq uint64
}

// resultOf adds the inputs to one cell (checking Accept) and returns Result.
func resultOfInputs(t testing.TB, s Spec, ins ...hin) (value.Value, error) {
	t.Helper()
	a := mustAgg(t, s)
	c := a.NewColumn()
	c.Resize(1)
	for _, x := range ins {
		if err := a.Accept(x.v); err != nil {
			t.Fatalf("%s: Accept(%s): %v", s.Func, jsonOf(x.v), err)
		}
		c.Add(0, x.v, x.t, x.seq)
	}
	return c.Result(0)
}

// vals turns plain values into inputs at t = seq = position.
func hVals(vs ...value.Value) []hin {
	out := make([]hin, len(vs))
	for i, v := range vs {
		out[i] = hin{v, int64(i), uint64(i)}
	}
	return out
}

func hInts(xs ...int64) []hin {
	vs := make([]value.Value, len(xs))
	for i, x := range xs {
		vs[i] = value.Int(x)
	}
	return hVals(vs...)
}

func hFloats(xs ...float64) []hin {
	vs := make([]value.Value, len(xs))
	for i, x := range xs {
		vs[i] = value.Float(x)
	}
	return hVals(vs...)
}

func hRange(lo, hi int64) []hin {
	var xs []int64
	for x := lo; x <= hi; x++ {
		xs = append(xs, x)
	}
	return hInts(xs...)
}

var (
	vInt   = value.Int
	vFloat = value.Float
	vStr   = value.String
	vNull  = value.Null()
)

func TestHandWorked(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	tests := []struct {
		name string
		spec Spec
		ins  []hin
		want value.Value
		err  error
		tol  float64 // absolute tolerance for a float result
	}{
		// Variance: {5, 7}: mean 6, M2 = 1 + 1 = 2; VarSamp = 2/1 = 2,
		// StddevSamp = √2; VarPop = 2/2 = 1, StddevPop = 1.
		{"StddevSamp one value", Spec{Func: "StddevSamp"}, hInts(5), vNull, nil, 0},
		{"VarSamp one value", Spec{Func: "VarSamp"}, hInts(5), vNull, nil, 0},
		{"VarPop one value", Spec{Func: "VarPop"}, hInts(5), vFloat(0), nil, 0},
		{"StddevPop one value", Spec{Func: "StddevPop"}, hFloats(2.5), vFloat(0), nil, 0},
		{"StddevSamp 5 7", Spec{Func: "StddevSamp"}, hInts(5, 7), vFloat(1.4142135623730951), nil, 1e-12},
		{"VarSamp 5 7", Spec{Func: "VarSamp"}, hInts(5, 7), vFloat(2), nil, 1e-12},
		{"VarPop 5 7", Spec{Func: "VarPop"}, hInts(5, 7), vFloat(1), nil, 1e-12},
		// {2,4,4,4,5,5,7,9}: mean 5, deviations² 9+1+1+1+0+0+4+16 = 32;
		// VarPop 32/8 = 4, StddevPop 2, VarSamp 32/7.
		{"VarPop classic", Spec{Func: "VarPop"}, hInts(2, 4, 4, 4, 5, 5, 7, 9), vFloat(4), nil, 1e-12},
		{"StddevPop classic", Spec{Func: "StddevPop"}, hInts(2, 4, 4, 4, 5, 5, 7, 9), vFloat(2), nil, 1e-12},
		{"VarSamp classic", Spec{Func: "VarSamp"}, hInts(2, 4, 4, 4, 5, 5, 7, 9), vFloat(32.0 / 7), nil, 1e-12},
		{"VarPop ignores null", Spec{Func: "VarPop"}, hVals(vInt(1), vNull, vInt(3)), vFloat(1), nil, 1e-12},
		// Average.
		{"Average 1..4", Spec{Func: "Average"}, hInts(1, 2, 3, 4), vFloat(2.5), nil, 1e-12},
		{"Average ignores null", Spec{Func: "Average"}, hVals(vNull, vInt(1), vFloat(2.5), vNull), vFloat(1.75), nil, 1e-12},
		{"Average only nulls", Spec{Func: "Average"}, hVals(vNull, vNull), vNull, nil, 0},
		// Integers are summed exactly: (2^63-1) + (-2^63) + (-1) = -2, and
		// -2/3 rounds to -0.6666666666666666. (A float64 running sum rounds
		// 2^63-1 up to 2^63, cancels it to 0 and gives -1/3.)
		{"Average exact around ±2^63", Spec{Func: "Average"}, hInts(maxI, minI, -1), vFloat(-0.6666666666666666), nil, 0},
		// 2^62 + 2^62 carries out of int64, -2^62 borrows back: 2^62/3 =
		// 1537228672809129301.33…, as a float64 1537228672809129216.
		{"Average through a carry", Spec{Func: "Average"}, hInts(1<<62, 1<<62, -(1 << 62)), vFloat(1.5372286728091292e18), nil, 0},
		// Integer and float parts: (1 + 2) + (0.5 + 0.25) = 3.75, /4.
		{"Average ints and floats", Spec{Func: "Average"}, hVals(vInt(1), vFloat(0.5), vInt(2), vFloat(0.25)), vFloat(0.9375), nil, 0},
		// Sum: exact 128-bit integer part.
		{"Sum max-1", Spec{Func: "Sum"}, hInts(maxI, -1), vInt(9223372036854775806), nil, 0},
		{"Sum overflow up", Spec{Func: "Sum"}, hInts(maxI, 1), vNull, ErrSumOverflow, 0},
		{"Sum overflow down", Spec{Func: "Sum"}, hInts(minI, -1), vNull, ErrSumOverflow, 0},
		{"Sum back in range", Spec{Func: "Sum"}, hInts(maxI, 1, -1), vInt(maxI), nil, 0},
		{"Sum back in range down", Spec{Func: "Sum"}, hInts(minI, -1, 1), vInt(minI), nil, 0},
		// maxI + maxI + minI + minI = -2 exactly, through two carries.
		{"Sum two carries", Spec{Func: "Sum"}, hInts(maxI, maxI, minI, minI), vInt(-2), nil, 0},
		{"Sum mixed", Spec{Func: "Sum"}, hVals(vInt(1), vFloat(2.5), vNull), vFloat(3.5), nil, 0},
		// 2·maxI = 2^64 - 2 → nearest float64 is 2^64; + 0.5 rounds back to 2^64.
		{"Sum big ints plus float", Spec{Func: "Sum"}, hVals(vInt(maxI), vInt(maxI), vFloat(0.5)), vFloat(18446744073709551616), nil, 0},
		{"Sum only nulls", Spec{Func: "Sum"}, hVals(vNull), vInt(0), nil, 0},
		// 1e308 + 1e308 = 2e308 is beyond MaxFloat64 (1.797…e308): an error,
		// not a silent null; 1e308 + 1e308 - 1e308 cancels back within it.
		{"Sum float overflow", Spec{Func: "Sum"}, hFloats(1e308, 1e308), vNull, ErrFloatOverflow, 0},
		{"Sum float overflow down", Spec{Func: "Sum"}, hFloats(-1e308, -1e308), vNull, ErrFloatOverflow, 0},
		{"Sum float near max", Spec{Func: "Sum"}, hFloats(1e308, 7e307), vFloat(1.7e308), nil, 1e293},
		{"Average float overflow", Spec{Func: "Average"}, hFloats(1e308, 1e308), vNull, ErrFloatOverflow, 0},
		// Variances: 1e150 and -1e150 have mean 0 and M2 = 2·(1e150)² = 2e300, VarPop 1e300.
		// 1e154 and -1e154 have M2 = 2e308, past MaxFloat64 (VarPop 1e308 would fit, M2 does
		// not); 1e308 and -1e308 deviate by 2e308 (their M2 used to come out -Inf, taken as 0);
		// 0 and 1e308 have M2 = 5e615. Each is an error, never 0 or a silent null.
		{"VarPop 1e150 apart", Spec{Func: "VarPop"}, hFloats(1e150, -1e150), vFloat(1e300), nil, 1e288},
		{"VarPop M2 overflow", Spec{Func: "VarPop"}, hFloats(1e154, -1e154), vNull, ErrFloatOverflow, 0},
		{"VarPop deviation overflow", Spec{Func: "VarPop"}, hFloats(1e308, -1e308), vNull, ErrFloatOverflow, 0},
		{"VarSamp overflow", Spec{Func: "VarSamp"}, hFloats(0, 1e308), vNull, ErrFloatOverflow, 0},
		{"StddevPop overflow", Spec{Func: "StddevPop"}, hFloats(1e308, -1e308), vNull, ErrFloatOverflow, 0},
		// Count counts events, CountWhen trues.
		{"Count", Spec{Func: "Count"}, hVals(vNull, vInt(1), vStr("x")), vInt(3), nil, 0},
		{"CountWhen with nulls", Spec{Func: "CountWhen"}, hVals(value.Bool(true), vNull, value.Bool(false), value.Bool(true), vNull), vInt(2), nil, 0},
		// Min/Max.
		{"Min ints", Spec{Func: "Min"}, hInts(3, -7, 12), vInt(-7), nil, 0},
		{"Max ints", Spec{Func: "Max"}, hInts(3, -7, 12), vInt(12), nil, 0},
		{"Min floats", Spec{Func: "Min"}, hFloats(2.5, -1.25, 0.5), vFloat(-1.25), nil, 0},
		{"Max floats", Spec{Func: "Max"}, hFloats(2.5, -1.25, 0.5), vFloat(2.5), nil, 0},
		{"Min strings", Spec{Func: "Min"}, hVals(vStr("pear"), vStr("apple"), vStr("zoo")), vStr("apple"), nil, 0},
		{"Max strings", Spec{Func: "Max"}, hVals(vStr("pear"), vStr("apple"), vStr("zoo")), vStr("zoo"), nil, 0},
		{"Min mixed", Spec{Func: "Min"}, hVals(vInt(5), vStr("a"), vFloat(2.5), vNull), vFloat(2.5), nil, 0},
		{"Max mixed", Spec{Func: "Max"}, hVals(vInt(5), vStr("a"), vFloat(2.5)), vStr("a"), nil, 0},
		{"Max ints and floats", Spec{Func: "Max"}, hVals(vFloat(2.5), vInt(3)), vInt(3), nil, 0},
		{"Min int before equal float", Spec{Func: "Min"}, hVals(vFloat(1), vInt(1)), vInt(1), nil, 0},
		{"Max float after equal int", Spec{Func: "Max"}, hVals(vFloat(1), vInt(1)), vFloat(1), nil, 0},
		{"Min big ints", Spec{Func: "Min"}, hInts(maxI, minI, 0), vInt(minI), nil, 0},
		// First/Last by event time; arrival order (seq) 1,2,3 at t = 30,10,20.
		{"First out of order", Spec{Func: "First"}, []hin{{vStr("a"), 30, 1}, {vStr("b"), 10, 2}, {vStr("c"), 20, 3}}, vStr("b"), nil, 0},
		{"Last out of order", Spec{Func: "Last"}, []hin{{vStr("a"), 30, 1}, {vStr("b"), 10, 2}, {vStr("c"), 20, 3}}, vStr("a"), nil, 0},
		{"First tie keeps first arrival", Spec{Func: "First"}, []hin{{vStr("a"), 10, 1}, {vStr("b"), 10, 2}}, vStr("a"), nil, 0},
		{"Last tie keeps last arrival", Spec{Func: "Last"}, []hin{{vStr("a"), 10, 1}, {vStr("b"), 10, 2}}, vStr("b"), nil, 0},
		{"First null is a value", Spec{Func: "First"}, []hin{{vInt(1), 20, 1}, {vNull, 5, 2}}, vNull, nil, 0},
		{"Last null is a value", Spec{Func: "Last"}, []hin{{vNull, 20, 1}, {vInt(1), 5, 2}}, vNull, nil, 0},
		// Exact percentiles of 1..8: median = (4+5)/2 = 4.5.
		{"Median 1..8", Spec{Func: "Median"}, hRange(1, 8), vFloat(4.5), nil, 0},
		{"Median 1..7", Spec{Func: "Median"}, hRange(1, 7), vFloat(4), nil, 0},
		{"Median unsorted", Spec{Func: "Median"}, hVals(vInt(9), vNull, vFloat(-1.5), vInt(3)), vFloat(3), nil, 0},
		// 1..20: h = 19·0.95 = 18.05 → x[18] + 0.05·(x[19] - x[18]) = 19 + 0.05.
		{"Percentile 0.95 of 1..20", Spec{Func: "Percentile", Quantile: 0.95}, hRange(1, 20), vFloat(19.05), nil, 1e-12},
		{"P95 of 1..20", Spec{Func: "P95"}, hRange(1, 20), vFloat(19.05), nil, 1e-12},
		// h = 19·0.99 = 18.81 → 19.81.
		{"P99 of 1..20", Spec{Func: "P99"}, hRange(1, 20), vFloat(19.81), nil, 1e-12},
		// 1..4: h = 3·0.5 = 1.5 → 2 + 0.5 = 2.5.
		{"P50 of 1..4", Spec{Func: "P50"}, hRange(1, 4), vFloat(2.5), nil, 0},
		// 10,20,30,40: h = 3·0.25 = 0.75 → 10 + 0.75·10 = 17.5.
		{"Percentile 0.25", Spec{Func: "Percentile", Quantile: 0.25}, hInts(40, 10, 30, 20), vFloat(17.5), nil, 1e-12},
		{"Percentile 0 is the min", Spec{Func: "Percentile", Quantile: 0}, hInts(40, 10, 30, 20), vFloat(10), nil, 0},
		{"Percentile 1 is the max", Spec{Func: "Percentile", Quantile: 1}, hInts(40, 10, 30, 20), vFloat(40), nil, 0},
		{"Percentile one value", Spec{Func: "Percentile", Quantile: 0.3}, hFloats(-2.5), vFloat(-2.5), nil, 0},
		// Median of the two extreme floats: their mean is 0 (no overflow).
		{"Median extremes", Spec{Func: "Median"}, hFloats(-math.MaxFloat64, math.MaxFloat64), vFloat(0), nil, 0},
		// ApproximatePercentile: rank ⌊0.5·99⌋ = 49 of 1..100 is 50; the
		// DDSketch answer is within 1%: [49.5, 50.5].
		{"ApproximatePercentile 1..100", Spec{Func: "ApproximatePercentile", Quantile: 0.5}, hRange(1, 100), vFloat(50), nil, 0.5},
		{"ApproximatePercentile min", Spec{Func: "ApproximatePercentile", Quantile: 0}, hRange(-100, -1), vFloat(-100), nil, 1},
		{"ApproximatePercentile max", Spec{Func: "ApproximatePercentile", Quantile: 1}, hRange(-100, -1), vFloat(-1), nil, 0.0101},
		{"ApproximatePercentile zeros", Spec{Func: "ApproximatePercentile", Quantile: 0.5}, hFloats(0, 0, 0), vFloat(0), nil, 0},
		// -100..-1 at q = 0.5: h = 49.5; the library reads the negative store
		// from its end at rank 100-1-49.5 = 49.5, i.e. the 50th smallest |x|
		// (0-based 49), which is -50 = sorted rank 50 = ⌈h⌉ (not -51 at ⌊h⌋);
		// within 1%: [-50.5, -49.5].
		{"ApproximatePercentile negative ⌈h⌉", Spec{Func: "ApproximatePercentile", Quantile: 0.5}, hRange(-100, -1), vFloat(-50), nil, 0.5},
		// Beyond the library's MaxIndexableValue (MaxFloat64/1.01): the median
		// of 1e308, MaxFloat64/1.005 and MaxFloat64 is the middle one, within
		// 1%; q = 1 and q = 0 are the exact extremes.
		{"ApproximatePercentile huge", Spec{Func: "ApproximatePercentile", Quantile: 0.5}, hFloats(math.MaxFloat64, 1e308, math.MaxFloat64/1.005), vFloat(math.MaxFloat64 / 1.005), nil, 0.01 * math.MaxFloat64 / 1.005},
		{"ApproximatePercentile huge max", Spec{Func: "ApproximatePercentile", Quantile: 1}, hFloats(1e308, math.MaxFloat64, math.MaxFloat64/1.005), vFloat(math.MaxFloat64), nil, 0},
		{"ApproximatePercentile huge negative", Spec{Func: "ApproximatePercentile", Quantile: 0.5}, hFloats(-math.MaxFloat64, -1e308, -math.MaxFloat64/1.005), vFloat(-math.MaxFloat64 / 1.005), nil, 0.01 * math.MaxFloat64 / 1.005},
		{"ApproximatePercentile huge min", Spec{Func: "ApproximatePercentile", Quantile: 0}, hFloats(-1e308, -math.MaxFloat64, 5), vFloat(-math.MaxFloat64), nil, 0},
		// -5, 0, 0, 7: rank ⌊0.5·3⌋ = 1 → 0 (the zero bucket).
		{"ApproximatePercentile mixed signs", Spec{Func: "ApproximatePercentile", Quantile: 0.5}, hVals(vFloat(-5), vInt(0), vFloat(0), vInt(7)), vFloat(0), nil, 0},
		// HyperLogLog: three distinct values (1 and 1.0 are distinct) → 3.
		{"HLL three", Spec{Func: "ApproximateSetCardinality"}, hVals(vInt(1), vFloat(1), vStr("1"), vInt(1), vStr("1")), vInt(3), nil, 0},
		{"HLL null is one value", Spec{Func: "ApproximateSetCardinality"}, hVals(vNull, vNull, vInt(0)), vInt(2), nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resultOfInputs(t, tc.spec, tc.ins...)
			if !errors.Is(err, tc.err) || (err != nil && tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if got.Kind() != tc.want.Kind() {
				t.Fatalf("got %s (%s), want %s (%s)", jsonOf(got), got.Kind(), jsonOf(tc.want), tc.want.Kind())
			}
			if tc.want.Kind() == value.KindFloat {
				if d := math.Abs(got.Float() - tc.want.Float()); d > tc.tol {
					t.Fatalf("got %v, want %v ± %g", got.Float(), tc.want.Float(), tc.tol)
				}
				return
			}
			if !sameValue(got, tc.want) {
				t.Fatalf("got %s, want %s", jsonOf(got), jsonOf(tc.want))
			}
		})
	}
}

// Set, List and CountDistinct with nulls and mixed kinds. Compare's order is
// null < boolean < numbers < strings < lists; an integer sorts before an
// equal float; -0.0 and 0.0 are one value (kept as 0.0).
func TestCollectionsMixedKinds(t *testing.T) {
	list := value.List([]value.Value{vInt(1)})
	ins := []hin{
		{vInt(1), 50, 1},
		{vFloat(1), 40, 2},
		{vNull, 30, 3},
		{vStr("a"), 20, 4},
		{vInt(1), 10, 5},
		{vNull, 60, 6},
		{value.Bool(true), 70, 7},
		{vFloat(math.Copysign(0, -1)), 80, 8},
		{vFloat(0), 90, 9},
		{list, 25, 10},
		{list, 25, 11},
	}
	set, err := resultOfInputs(t, Spec{Func: "Set"}, ins...)
	if err != nil {
		t.Fatal(err)
	}
	wantSet := value.List([]value.Value{vNull, value.Bool(true), vFloat(0), vInt(1), vFloat(1), vStr("a"), list})
	if !sameValue(set, wantSet) || len(set.List()) != 7 {
		t.Fatalf("Set = %s, want %s", jsonOf(set), jsonOf(wantSet))
	}
	if z := set.List()[2]; z.Kind() != value.KindFloat || math.Signbit(z.Float()) {
		t.Fatalf("Set keeps %s for ±0.0, want 0.0", jsonOf(z))
	}
	cd, _ := resultOfInputs(t, Spec{Func: "CountDistinct"}, ins...)
	if !sameValue(cd, vInt(7)) {
		t.Fatalf("CountDistinct = %s, want 7", jsonOf(cd))
	}
	hll, _ := resultOfInputs(t, Spec{Func: "ApproximateSetCardinality"}, ins...)
	if !sameValue(hll, vInt(7)) {
		t.Fatalf("ApproximateSetCardinality = %s, want 7", jsonOf(hll))
	}
	// List by t: 10:1, 20:"a", 25:[1] (seq 10), 25:[1] (seq 11), 30:null,
	// 40:1.0, 50:1, 60:null, 70:true, 80:-0.0, 90:0.0.
	l, _ := resultOfInputs(t, Spec{Func: "List"}, ins...)
	wantList := []value.Value{vInt(1), vStr("a"), list, list, vNull, vFloat(1), vInt(1), vNull, value.Bool(true), vFloat(math.Copysign(0, -1)), vFloat(0)}
	if !sameValue(l, value.List(wantList)) {
		t.Fatalf("List = %s, want %s", jsonOf(l), jsonOf(value.List(wantList)))
	}
	if z := l.List()[9]; !math.Signbit(z.Float()) {
		t.Fatalf("List changed -0.0 into %s", jsonOf(z))
	}
}

// Min keeps -0.0 over 0.0 and Max 0.0 over -0.0 whatever the order, so the
// result never depends on arrival order.
func TestMinMaxSignedZero(t *testing.T) {
	negZero := vFloat(math.Copysign(0, -1))
	for _, order := range [][]value.Value{{negZero, vFloat(0)}, {vFloat(0), negZero}} {
		mn, _ := resultOfInputs(t, Spec{Func: "Min"}, hVals(order...)...)
		mx, _ := resultOfInputs(t, Spec{Func: "Max"}, hVals(order...)...)
		if !math.Signbit(mn.Float()) || math.Signbit(mx.Float()) {
			t.Fatalf("order %s: Min %s, Max %s", jsonOf(value.List(order)), jsonOf(mn), jsonOf(mx))
		}
		// The same through Merge.
		for _, fn := range []string{"Min", "Max"} {
			c := mustAgg(t, Spec{Func: fn}).NewColumn()
			c.Resize(2)
			c.Add(0, order[0], 0, 0)
			c.Add(1, order[1], 0, 1)
			_ = c.Merge(0, c, 1)
			got, _ := c.Result(0)
			if math.Signbit(got.Float()) != (fn == "Min") {
				t.Fatalf("%s merged in order %s: %s", fn, jsonOf(value.List(order)), jsonOf(got))
			}
		}
	}
}

func TestEmptyResults(t *testing.T) {
	want := map[string]value.Value{
		"Count": vInt(0), "CountWhen": vInt(0), "Sum": vInt(0), "Average": vNull,
		"Min": vNull, "Max": vNull, "First": vNull, "Last": vNull,
		"List": value.List([]value.Value{}), "Set": value.List([]value.Value{}),
		"CountDistinct": vInt(0), "ApproximateSetCardinality": vInt(0),
		"Median": vNull, "Percentile": vNull, "P50": vNull, "P95": vNull, "P99": vNull,
		"ApproximatePercentile": vNull,
		"VarPop":                vNull, "VarSamp": vNull, "StddevPop": vNull, "StddevSamp": vNull,
	}
	infos := Funcs()
	if len(infos) != len(want) {
		t.Fatalf("Funcs lists %d functions, want %d", len(infos), len(want))
	}
	for _, fi := range infos {
		w, ok := want[fi.Name]
		if !ok {
			t.Fatalf("unexpected function %s", fi.Name)
		}
		c := mustAgg(t, Spec{Func: fi.Name}).NewColumn()
		if c.Len() != 0 {
			t.Fatalf("%s: new column has %d cells", fi.Name, c.Len())
		}
		c.Resize(3)
		for i := range 3 {
			got, err := c.Result(i)
			if err != nil || !sameValue(got, w) {
				t.Fatalf("%s: empty cell %d = (%s, %v), want %s", fi.Name, i, jsonOf(got), err, jsonOf(w))
			}
		}
		if w.Kind() == value.KindList {
			got, _ := c.Result(0)
			if got.List() == nil || jsonOf(got) != "[]" {
				t.Fatalf("%s: empty list is %s / nil", fi.Name, jsonOf(got))
			}
		}
	}
}

// A cell that was added to, then Reset, or cut off by Resize and grown back,
// is empty again.
func TestResetAndResizeEmpty(t *testing.T) {
	for _, fi := range Funcs() {
		a := mustAgg(t, Spec{Func: fi.Name})
		c := a.NewColumn()
		c.Resize(4)
		empty, _ := c.Result(3)
		v, w := value.Int(7), value.Int(8)
		if fi.Input == "boolean" {
			v, w = value.Bool(true), value.Bool(true)
		}
		for i := range 4 {
			c.Add(i, v, 1, uint64(2*i))
			c.Add(i, w, 2, uint64(2*i+1))
		}
		c.Reset(0)
		c.Resize(2)
		c.Resize(4)
		for _, i := range []int{0, 2, 3} {
			got, err := c.Result(i)
			if err != nil || !sameValue(got, empty) {
				t.Fatalf("%s: cell %d = %s, want empty %s", fi.Name, i, jsonOf(got), jsonOf(empty))
			}
		}
		if got, _ := c.Result(1); sameValue(got, empty) {
			t.Fatalf("%s: cell 1 lost its input", fi.Name)
		}
		c.ResetAll()
		for i := range 4 {
			if got, _ := c.Result(i); !sameValue(got, empty) {
				t.Fatalf("%s: after ResetAll cell %d = %s", fi.Name, i, jsonOf(got))
			}
		}
	}
}

func TestSumRetractExact(t *testing.T) {
	a := mustAgg(t, Spec{Func: "Sum"})
	c := a.NewColumn()
	c.Resize(3)
	c.Add(0, vInt(math.MaxInt64), 0, 0)
	c.Add(1, vInt(1), 0, 1)
	if err := c.Merge(2, c, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Merge(2, c, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Result(2); !errors.Is(err, ErrSumOverflow) {
		t.Fatalf("MaxInt64 + 1: %v, want ErrSumOverflow", err)
	}
	if err := c.Retract(2, c, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Result(2); err != nil || !sameValue(got, vInt(math.MaxInt64)) {
		t.Fatalf("after retracting 1: (%s, %v), want MaxInt64", jsonOf(got), err)
	}
	// A float partial leaves the cell an integer sum again once retracted.
	c.Reset(1)
	c.Add(1, vFloat(0.1), 0, 2)
	_ = c.Merge(2, c, 1)
	if got, _ := c.Result(2); got.Kind() != value.KindFloat {
		t.Fatalf("with a float: %s", jsonOf(got))
	}
	_ = c.Retract(2, c, 1)
	if got, err := c.Result(2); err != nil || !sameValue(got, vInt(math.MaxInt64)) {
		t.Fatalf("float retracted: (%s, %v), want MaxInt64", jsonOf(got), err)
	}
}

// Average and Sum come back to exactly empty when everything is retracted, and then to
// exact small results.
func TestRetractToEmptyLeavesNoDrift(t *testing.T) {
	for _, fn := range []string{"Average", "Sum"} {
		a := mustAgg(t, Spec{Func: fn})
		c := a.NewColumn()
		c.Resize(2)
		for k, x := range []float64{0.1, 0.2, 1e17, 0.3} {
			c.Add(1, vFloat(x), 0, uint64(k))
		}
		_ = c.Merge(0, c, 1)
		_ = c.Retract(0, c, 1)
		c.Add(0, vInt(3), 0, 9)
		got, err := c.Result(0)
		want := map[string]value.Value{"Average": vFloat(3), "VarPop": vFloat(0), "Sum": vInt(3)}[fn]
		if err != nil || !sameValue(got, want) {
			t.Fatalf("%s: (%s, %v), want %s", fn, jsonOf(got), err, jsonOf(want))
		}
	}
}

func TestHLLLarge(t *testing.T) {
	a := mustAgg(t, Spec{Func: "ApproximateSetCardinality"})
	c := a.NewColumn()
	c.Resize(3)
	const n = 100000
	for k := range n {
		c.Add(k%2, value.Int(int64(k)), 0, uint64(k)) // two halves
	}
	_ = c.Merge(2, c, 0)
	_ = c.Merge(2, c, 1)
	for _, cell := range []int{0, 2} {
		got, _ := c.Result(cell)
		want := float64(n)
		if cell == 0 {
			want = n / 2
		}
		d := math.Abs(float64(got.Int())-want) / want
		if d > 0.02 {
			t.Fatalf("cell %d: estimate %d for %v distinct values (%.2f%% off)", cell, got.Int(), want, 100*d)
		}
		t.Logf("estimate %d for %v distinct values (%.2f%% off)", got.Int(), want, 100*d)
	}
	if !regsOK {
		t.Fatalf("the dense-register accessor failed its self-check")
	}
	if denseRegs(c.(*hllColumn).cells[2]) == nil {
		t.Fatalf("a 100,000-value sketch at precision 14 should be dense")
	}
}

// The kernel merge of dense registers gives the same registers as the
// library's own Merge.
func TestHLLKernelMergeMatchesLibrary(t *testing.T) {
	a := mustAgg(t, Spec{Func: "ApproximateSetCardinality", Precision: 10})
	c := a.NewColumn().(*hllColumn)
	c.Resize(2)
	for k := range 20000 {
		c.Add(k%2, value.String(strconv.Itoa(k)), 0, uint64(k))
	}
	x, y := c.cells[0], c.cells[1]
	if denseRegs(x) == nil || denseRegs(y) == nil {
		t.Fatal("expected dense sketches")
	}
	lib := x.Clone()
	if err := lib.Merge(y); err != nil {
		t.Fatal(err)
	}
	mergeSketch(x, y)
	rx, rl := denseRegs(x), denseRegs(lib)
	for i := range rl {
		if rx[i] != rl[i] {
			t.Fatalf("register %d: kernel %d, library %d", i, rx[i], rl[i])
		}
	}
}

func TestNewErrors(t *testing.T) {
	bad := []struct {
		s    Spec
		want error
	}{
		{Spec{Func: "sum"}, ErrUnknownFunc},
		{Spec{Func: ""}, ErrUnknownFunc},
		{Spec{Func: "Percentile", Quantile: 1.5}, ErrBadParam},
		{Spec{Func: "Percentile", Quantile: -0.1}, ErrBadParam},
		{Spec{Func: "ApproximatePercentile", Quantile: math.NaN()}, ErrBadParam},
		{Spec{Func: "ApproximateSetCardinality", Precision: 3}, ErrBadParam},
		{Spec{Func: "ApproximateSetCardinality", Precision: 19}, ErrBadParam},
		{Spec{Func: "Sum", Quantile: 0.5}, ErrBadParam},
		{Spec{Func: "P95", Quantile: 0.5}, ErrBadParam},
		{Spec{Func: "Count", Precision: 14}, ErrBadParam},
	}
	for _, b := range bad {
		if _, err := New(b.s); !errors.Is(err, b.want) {
			t.Errorf("New(%+v) = %v, want %v", b.s, err, b.want)
		}
	}
	for _, ok := range []Spec{
		{Func: "Percentile", Quantile: 0}, {Func: "Percentile", Quantile: 1},
		{Func: "ApproximateSetCardinality", Precision: 4}, {Func: "ApproximateSetCardinality", Precision: 18},
	} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%+v): %v", ok, err)
		}
	}
	a := mustAgg(t, Spec{Func: "ApproximateSetCardinality"})
	if a.(*hllAgg).spec.Precision != DefaultHLLPrecision {
		t.Errorf("default precision %d", a.(*hllAgg).spec.Precision)
	}
}

func TestFuncsInfo(t *testing.T) {
	names := []string{"Count", "CountWhen", "Sum", "Average", "Min", "Max", "First", "Last", "List", "Set",
		"CountDistinct", "ApproximateSetCardinality", "Median", "Percentile", "P50", "P95", "P99",
		"ApproximatePercentile", "VarPop", "VarSamp", "StddevPop", "StddevSamp"}
	// The variances are not: see varianceAgg, and TestVarianceWindowsAfterALargeValue.
	invertible := map[string]bool{"Count": true, "CountWhen": true, "Sum": true, "Average": true}
	infos := Funcs()
	for i, fi := range infos {
		if fi.Name != names[i] {
			t.Fatalf("Funcs()[%d] = %s, want %s", i, fi.Name, names[i])
		}
		s := Spec{Func: fi.Name}
		a := mustAgg(t, s)
		if a.Func() != fi.Name || a.Invertible() != invertible[fi.Name] || fi.Invertible != invertible[fi.Name] {
			t.Fatalf("%s: Func %s, Invertible %v/%v", fi.Name, a.Func(), a.Invertible(), fi.Invertible)
		}
		c := a.NewColumn()
		c.Resize(1)
		err := c.Retract(0, c, 0)
		if invertible[fi.Name] != (err == nil) || (!invertible[fi.Name] && !errors.Is(err, ErrNotInvertible)) {
			t.Fatalf("%s: Retract = %v", fi.Name, err)
		}
		if err := c.RetractAll(c); invertible[fi.Name] != (err == nil) {
			t.Fatalf("%s: RetractAll = %v", fi.Name, err)
		}
	}
	infos[0].Name = "changed"
	if Funcs()[0].Name != "Count" {
		t.Fatal("Funcs returns shared state")
	}
}

func TestAccept(t *testing.T) {
	list := value.List(nil)
	cases := []struct {
		fn   string
		v    value.Value
		want string // "" accepted, else InputError.Want
	}{
		{"Count", list, ""},
		{"CountWhen", value.Bool(false), ""},
		{"CountWhen", vNull, ""},
		{"CountWhen", vInt(1), "boolean"},
		{"Sum", vStr("1"), "number"},
		{"Sum", value.Bool(true), "number"},
		{"Sum", vNull, ""},
		{"Average", vFloat(1), ""},
		{"Min", vStr("a"), ""},
		{"Max", value.Bool(true), "number or string"},
		{"Min", list, "number or string"},
		{"First", list, ""},
		{"Set", value.NewRecord([]string{"a"}, []value.Value{vNull}), ""},
		{"Median", vStr("x"), "number"},
		{"ApproximatePercentile", list, "number"},
		{"StddevSamp", vStr("x"), "number"},
	}
	for _, tc := range cases {
		err := mustAgg(t, Spec{Func: tc.fn}).Accept(tc.v)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s.Accept(%s) = %v", tc.fn, jsonOf(tc.v), err)
			}
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) || ie.Want != tc.want || ie.Got != tc.v.Kind() || ie.Func != tc.fn {
			t.Errorf("%s.Accept(%s) = %#v, want InputError wanting %q", tc.fn, jsonOf(tc.v), err, tc.want)
		}
	}
}

func TestColumnMismatch(t *testing.T) {
	sum := mustAgg(t, Spec{Func: "Sum"}).NewColumn()
	cnt := mustAgg(t, Spec{Func: "Count"}).NewColumn()
	p5 := mustAgg(t, Spec{Func: "Percentile", Quantile: 0.5}).NewColumn()
	p9 := mustAgg(t, Spec{Func: "Percentile", Quantile: 0.9}).NewColumn()
	mn := mustAgg(t, Spec{Func: "Min"}).NewColumn()
	mx := mustAgg(t, Spec{Func: "Max"}).NewColumn()
	for _, c := range []Column{sum, cnt, p5, p9, mn, mx} {
		c.Resize(1)
	}
	sum.Add(0, vInt(5), 0, 0)
	for _, pair := range [][2]Column{{sum, cnt}, {cnt, sum}, {p5, p9}, {mn, mx}} {
		if err := pair[0].Merge(0, pair[1], 0); !errors.Is(err, ErrColumnMismatch) {
			t.Errorf("Merge across aggregators: %v", err)
		}
		if err := pair[0].MergeAll(pair[1]); !errors.Is(err, ErrColumnMismatch) {
			t.Errorf("MergeAll across aggregators: %v", err)
		}
	}
	if err := sum.Retract(0, cnt, 0); !errors.Is(err, ErrColumnMismatch) {
		t.Errorf("Retract across aggregators: %v", err)
	}
	if got, _ := sum.Result(0); !sameValue(got, vInt(5)) {
		t.Errorf("a refused merge changed the cell: %s", jsonOf(got))
	}
	// Two aggregators built from equal specs are compatible.
	other := mustAgg(t, Spec{Func: "Sum"}).NewColumn()
	other.Resize(1)
	if err := sum.Merge(0, other, 0); err != nil {
		t.Errorf("same spec: %v", err)
	}
	// A cell encoded by one function does not decode as another.
	b := sum.AppendCell(nil, 0)
	if _, err := cnt.DecodeCell(0, b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Sum cell decoded as Count: %v", err)
	}
}

// The memory budget of the window operators: a sliding window of 60 slices
// with Count, Sum, Average, Min and Max must fit in 4 KiB a key, about 50
// to 60 bytes a cell for the five together (integers only).
func TestCompactCells(t *testing.T) {
	const cells = 6000
	total := 0
	for _, fn := range []string{"Count", "Sum", "Average", "Min", "Max"} {
		c := mustAgg(t, Spec{Func: fn}).NewColumn()
		c.Resize(cells)
		before := c.SizeBytes()
		for i := range cells {
			c.Add(i, vInt(int64(i)), 0, uint64(i))
		}
		if c.SizeBytes() != before {
			t.Errorf("%s: integer inputs grew the column from %d to %d bytes", fn, before, c.SizeBytes())
		}
		total += before
	}
	perCell := float64(total) / cells
	if perCell > 60 || perCell*60 > 4096 {
		t.Fatalf("%.1f bytes a cell for the five aggregators, want ≤ 60 (%.0f bytes for 60 slices)", perCell, perCell*60)
	}
	t.Logf("%.1f bytes a cell for Count+Sum+Average+Min+Max", perCell)
}

func TestAddAllocations(t *testing.T) {
	for _, fn := range []string{"Count", "CountWhen", "Sum", "Average", "Min", "Max", "First", "Last", "VarPop"} {
		c := mustAgg(t, Spec{Func: fn}).NewColumn()
		c.Resize(16)
		v := vInt(3)
		if fn == "CountWhen" {
			v = value.Bool(true)
		}
		k := 0
		allocs := testing.AllocsPerRun(1000, func() {
			c.Add(k%16, v, int64(k), uint64(k))
			k++
		})
		if allocs != 0 {
			t.Errorf("%s: Add allocates %.1f times", fn, allocs)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, fn := range []string{"Count", "Sum", "Average", "Min", "Max"} {
		b.Run(fn, func(b *testing.B) {
			c := mustAgg(b, Spec{Func: fn}).NewColumn()
			c.Resize(1024)
			v := vInt(12345)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.Add(i&1023, v, 0, 0)
				i++
			}
		})
	}
}

// The Add methods read numbers and booleans through value.Value.KindBits:
// its bits must be what the accessors say (1/0 for a boolean, an int64's or a
// float64's bits, 0 for every other kind, which Add then ignores).
func TestKindBitsContract(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		v    value.Value
		bits uint64
	}{
		{value.Null(), 0},
		{value.Bool(true), 1},
		{value.Bool(false), 0},
		{value.Int(-5), 0xFFFF_FFFF_FFFF_FFFB},
		{value.Int(math.MaxInt64), 1<<63 - 1},
		{value.Int(math.MinInt64), 1 << 63},
		{value.Float(-2.5), 0xC004_0000_0000_0000},
		{value.Float(negZero), 1 << 63},
		{value.String("x"), 0},
		{value.List([]value.Value{value.Int(1)}), 0},
	} {
		k, bits := tc.v.KindBits()
		if k != tc.v.Kind() || bits != tc.bits {
			t.Errorf("%s: KindBits = (%s, %#x), want (%s, %#x)", jsonOf(tc.v), k, bits, tc.v.Kind(), tc.bits)
		}
	}
}
