package aggregate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/scenario-server/scenario-server/value"
)

// The oracle computes every aggregator's result from the raw list of its
// inputs, by brute force and independently of the columns: sort, sum with
// math/big (exact big.Float sums), two-pass variance, exact distinct sets. The window operators'
// tests use it too.

// oracleInput is one input value with its event time and arrival number.
type oracleInput struct {
	V   value.Value
	T   int64
	Seq uint64
}

// oracleResult returns what an aggregator's Result must be (docs/semantics.md §5) for
// a cell holding exactly these inputs. For the two approximate aggregators it
// returns the exact quantity the approximation targets: the exact number of
// distinct values for ApproximateSetCardinality, and for
// ApproximatePercentile the input the DDSketch guarantee is relative to (see
// oracleDDRank). Compare with resultClose or oracleCheck, which know the
// error bounds.
func oracleResult(spec Spec, inputs []oracleInput) (value.Value, error) {
	nums := oracleNumbers(inputs)
	switch spec.Func {
	case "Count":
		return value.Int(int64(len(inputs))), nil
	case "CountWhen":
		n := 0
		for _, in := range inputs {
			if in.V.Kind() == value.KindBool && in.V.Bool() {
				n++
			}
		}
		return value.Int(int64(n)), nil
	case "Sum":
		return oracleSum(inputs)
	case "Average":
		if len(nums) == 0 {
			return value.Null(), nil
		}
		sum := exact()
		for _, in := range inputs {
			if in.V.IsNumber() {
				sum.Add(sum, oracleExact(in.V))
			}
		}
		if f, _ := sum.Float64(); math.IsInf(f, 0) {
			return value.Null(), ErrFloatOverflow
		}
		sum.Quo(sum, exact().SetInt64(int64(len(nums))))
		f, _ := sum.Float64()
		return value.Float(f), nil
	case "Min", "Max":
		var vals []value.Value
		for _, in := range inputs {
			if !in.V.IsNull() {
				vals = append(vals, in.V)
			}
		}
		if len(vals) == 0 {
			return value.Null(), nil
		}
		slices.SortStableFunc(vals, value.Compare)
		r := vals[0]
		if spec.Func == "Max" {
			r = vals[len(vals)-1]
		}
		if r.Kind() == value.KindFloat && r.Float() == 0 {
			// Among ±0.0, Min prefers -0.0 and Max +0.0.
			wantNeg := spec.Func == "Min"
			for _, v := range vals {
				if v.Kind() == value.KindFloat && v.Float() == 0 && math.Signbit(v.Float()) == wantNeg {
					r = v
				}
			}
		}
		return r, nil
	case "First", "Last", "List":
		if len(inputs) == 0 {
			if spec.Func == "List" {
				return value.List([]value.Value{}), nil
			}
			return value.Null(), nil
		}
		sorted := slices.Clone(inputs)
		slices.SortFunc(sorted, func(a, b oracleInput) int {
			return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(a.Seq, b.Seq))
		})
		switch spec.Func {
		case "First":
			return sorted[0].V, nil
		case "Last":
			return sorted[len(sorted)-1].V, nil
		}
		out := make([]value.Value, len(sorted))
		for i, in := range sorted {
			out[i] = in.V
		}
		return value.List(out), nil
	case "Set", "CountDistinct", "ApproximateSetCardinality":
		set := oracleDistinct(inputs)
		if spec.Func == "Set" {
			return value.List(set), nil
		}
		return value.Int(int64(len(set))), nil
	case "Median", "Percentile", "P50", "P95", "P99":
		if len(nums) == 0 {
			return value.Null(), nil
		}
		slices.Sort(nums)
		n := len(nums)
		if spec.Func == "Median" {
			if n%2 == 1 {
				return value.Float(nums[n/2]), nil
			}
			// Mean of the two middle values, computed exactly.
			s := exact().Add(exact().SetFloat64(nums[n/2-1]), exact().SetFloat64(nums[n/2]))
			s.Quo(s, exact().SetInt64(2))
			f, _ := s.Float64()
			return value.Float(f), nil
		}
		q := map[string]float64{"P50": 0.5, "P95": 0.95, "P99": 0.99, "Percentile": spec.Quantile}[spec.Func]
		h := float64(n-1) * q
		lo := int(math.Floor(h))
		if lo >= n-1 {
			return value.Float(nums[n-1]), nil
		}
		frac := h - float64(lo)
		// x[lo] + frac·(x[lo+1] - x[lo]) in exact arithmetic, rounded once.
		a, b := exact().SetFloat64(nums[lo]), exact().SetFloat64(nums[lo+1])
		d := exact().Sub(b, a)
		d.Mul(d, exact().SetFloat64(frac))
		f, _ := d.Add(d, a).Float64()
		return value.Float(f), nil
	case "ApproximatePercentile":
		if len(nums) == 0 {
			return value.Null(), nil
		}
		slices.Sort(nums)
		return value.Float(nums[oracleDDRank(nums, spec.Quantile)]), nil
	case "VarPop", "VarSamp", "StddevPop", "StddevSamp":
		n := len(nums)
		samp := spec.Func == "VarSamp" || spec.Func == "StddevSamp"
		if n == 0 || (n == 1 && samp) {
			return value.Null(), nil
		}
		// Two passes at 4400 bits: the mean, then Σ(x - mean)².
		mean := exact()
		for _, x := range nums {
			mean.Add(mean, exact().SetFloat64(x))
		}
		mean.Quo(mean, exact().SetInt64(int64(n)))
		m2 := exact()
		for _, x := range nums {
			d := exact().Sub(exact().SetFloat64(x), mean)
			m2.Add(m2, d.Mul(d, d))
		}
		div := int64(n)
		if samp {
			div--
		}
		v, _ := m2.Quo(m2, exact().SetInt64(div)).Float64()
		if spec.Func == "StddevPop" || spec.Func == "StddevSamp" {
			v = math.Sqrt(v)
		}
		return value.Float(v), nil
	}
	return value.Null(), fmt.Errorf("oracle: %w %q", ErrUnknownFunc, spec.Func)
}

// oracleDDRank is the 0-based rank, in the sorted inputs x, of the input
// whose bucket github.com/DataDog/sketches-go's DDSketch.GetValueAtQuantile(q)
// answers with (v1.4.8, ddsketch.go and store.KeyAtRank), computed with the
// same float64 operations: h = q·(n-1); with neg inputs below -ddTiny in the
// negative store (which orders |x|), h < neg reads that store at rank
// r = neg-1-h from its own end, i.e. the |x|-rank ⌊r⌋ (0 when r < 0), which
// is sorted rank neg-1-⌊r⌋: ⌈h⌉, except where neg-1-h rounds (h = 1e-300
// gives r = neg-1 exactly, so rank 0 = ⌊h⌋). Otherwise it is the rank ⌊h⌋ (in
// the zero bucket or the positive store, whose rank h-neg-zeros is exact).
// The library's guarantee (its README: "|x-y| / x < e"; Masson et al. 2019)
// is that the answer is within relative error α of that input: see ddRel.
func oracleDDRank(x []float64, q float64) int {
	h := q * float64(len(x)-1)
	neg := 0
	for neg < len(x) && x[neg] < -ddTiny {
		neg++
	}
	if h < float64(neg) {
		j := 0
		if r := float64(neg) - 1 - h; r > 0 {
			j = int(math.Floor(r))
		}
		return neg - 1 - j
	}
	return min(int(math.Floor(h)), len(x)-1)
}

// oracleNumbers returns the numeric inputs as float64.
func oracleNumbers(inputs []oracleInput) []float64 {
	var out []float64
	for _, in := range inputs {
		if in.V.IsNumber() {
			out = append(out, in.V.Float())
		}
	}
	return out
}

// exact returns a big.Float of 4400 bits: sums of float64 values (which are
// multiples of 2^-1074 below 2^1024) are exact at 2200 bits, and sums of
// their squares and products at 4400, for up to 2^100 terms.
func exact() *big.Float { return new(big.Float).SetPrec(4400) }

// oracleExact is a number's exact value.
func oracleExact(v value.Value) *big.Float {
	if v.Kind() == value.KindInt {
		return exact().SetInt64(v.Int())
	}
	return exact().SetFloat64(v.Float())
}

func oracleSum(inputs []oracleInput) (value.Value, error) {
	sum := exact()
	floats := false
	for _, in := range inputs {
		if in.V.IsNumber() {
			sum.Add(sum, oracleExact(in.V))
			floats = floats || in.V.Kind() == value.KindFloat
		}
	}
	if floats {
		f, _ := sum.Float64()
		if math.IsInf(f, 0) {
			return value.Null(), ErrFloatOverflow
		}
		return value.Float(f), nil
	}
	n, acc := sum.Int64()
	if acc != big.Exact {
		return value.Null(), ErrSumOverflow
	}
	return value.Int(n), nil
}

// oracleDistinct returns the distinct inputs sorted by value.Compare, -0.0
// counted as 0.0, using a map keyed by the binary encoding.
func oracleDistinct(inputs []oracleInput) []value.Value {
	seen := map[string]value.Value{}
	for _, in := range inputs {
		v := oracleNoNegZero(in.V)
		seen[string(value.AppendBinary(nil, v))] = v
	}
	out := make([]value.Value, 0, len(seen))
	for _, v := range seen {
		out = append(out, v)
	}
	slices.SortFunc(out, value.Compare)
	return out
}

func oracleNoNegZero(v value.Value) value.Value {
	switch v.Kind() {
	case value.KindFloat:
		if v.Float() == 0 {
			return value.Float(0)
		}
	case value.KindList:
		items := make([]value.Value, len(v.List()))
		for i, it := range v.List() {
			items[i] = oracleNoNegZero(it)
		}
		return value.List(items)
	case value.KindRecord:
		r := v.Record()
		vals := make([]value.Value, len(r.Values))
		for i, it := range r.Values {
			vals[i] = oracleNoNegZero(it)
		}
		return value.NewRecord(r.Keys, vals)
	}
	return v
}

// Error bounds.
//
// DDSketch: the library's bucket k holds [γ^k, γ^(k+1)), γ = (1+α)/(1-α),
// and answers v = γ^k(1+α): at x = γ^k, (v-x)/x = α, and as x nears
// γ^(k+1), (x-v)/x nears 1 - (1+α)/γ = α, so |v - x| ≤ α|x| for every x of
// the bucket; ddRel adds 1e-9 of that for the rounding of the log and exp
// that compute the bucket and its value. |x| ≤ ddTiny (the smallest normal
// float64 times γ, about 2.27e-308) counts as zero: ddAbs covers that
// absolute error. α is ddAlpha (0.01), as docs/semantics.md §5 states. Clamping to
// the cell's exact minimum and maximum only moves a result toward its target,
// which lies between them.
const (
	floatRel = 1e-9 // relative tolerance of float results
	ddRel    = ddAlpha * (1 + 1e-9)
	ddAbs    = 1e-307
)

// ddTiny is the library's threshold itself (the documented
// IndexMapping.MinIndexableValue), so that the oracle splits the inputs
// where the sketch does, to the last bit.
var ddTiny = ddMapping.MinIndexableValue()

// hllTolerance is the allowed |estimate - exact| for a HyperLogLog of
// precision p: max(2, 3% of the exact count) at p >= 14, where the standard
// error 1.04/sqrt(2^p) is at most 0.81%; at lower precisions five standard
// errors.
func hllTolerance(p int, exact int64) float64 {
	if p == 0 {
		p = DefaultHLLPrecision
	}
	frac := 0.03
	if p < 14 {
		frac = 5 * 1.04 / math.Sqrt(float64(int64(1)<<p))
	}
	return max(2, frac*float64(exact))
}

// resultClose compares a result with oracleResult's without knowing the
// inputs, for moderate inputs (|x| up to about 1e6, at most a few thousand
// of them): exact for every exact aggregator (same kinds, value.Equal),
// relative 1e-9 (absolute 1e-9 near zero) for Sum, Average and the exact
// percentiles, relative and absolute 1e-6 for variances (standard
// deviations are compared squared), and the sketches' bounds for the
// approximate ones: HyperLogLog max(2, 3%) at precision 14 (see
// hllTolerance), DDSketch relative 1% of the target input (oracleDDRank).
// oracleCheck is the stricter comparison that knows the inputs.
func resultClose(s Spec, got, want value.Value) bool {
	if got.Kind() != want.Kind() {
		return false
	}
	switch s.Func {
	case "ApproximateSetCardinality":
		return math.Abs(float64(got.Int()-want.Int())) <= hllTolerance(s.Precision, want.Int())
	}
	if want.Kind() != value.KindFloat {
		return sameValue(got, want)
	}
	g, w := got.Float(), want.Float()
	switch s.Func {
	case "ApproximatePercentile":
		return math.Abs(g-w) <= ddRel*math.Abs(w)+ddAbs
	case "VarPop", "VarSamp":
		return math.Abs(g-w) <= 1e-6*max(1, math.Abs(w))
	case "StddevPop", "StddevSamp":
		return math.Abs(g*g-w*w) <= 1e-6*max(1, w*w)
	}
	return math.Abs(g-w) <= floatRel*max(1, math.Abs(w))
}

// sameValue reports whether a and b are identical: equal by value.Compare
// (which already tells Int(1) from Float(1.0)) and with the same sign on
// every zero float, all the way down.
func sameValue(a, b value.Value) bool {
	return a.Kind() == b.Kind() && value.Compare(a, b) == 0 && sameZeroSigns(a, b)
}

func sameZeroSigns(a, b value.Value) bool {
	switch a.Kind() {
	case value.KindFloat:
		return math.Signbit(a.Float()) == math.Signbit(b.Float())
	case value.KindList:
		for i, x := range a.List() {
			if !sameZeroSigns(x, b.List()[i]) {
				return false
			}
		}
	case value.KindRecord:
		for i, x := range a.Record().Values {
			if !sameZeroSigns(x, b.Record().Values[i]) {
				return false
			}
		}
	}
	return true
}

// oracleCheck compares a column's result (got, gotErr) for a cell holding
// inputs with the oracle. involved lists every input that went through the
// cell, including ones later retracted (for the rounding bounds of
// invertible aggregators); nil means inputs. It returns a description of the
// difference, or nil.
//
// Bounds, with N, A = Σ|x| and S = Σx² taken over the involved numbers and
// ε = 2^-52:
//   - Sum (float) and Average: |got - want| ≤ 1e-9·max(1, A).
//   - Median, Percentile, P50/P95/P99: |got - want| ≤ 1e-9·max(1, max |x|).
//   - VarPop/VarSamp: |got - want| ≤ 1e-9·|want| + 64·N·ε·S/max(1, n-1),
//     a bound on Welford's and Chan's rounding (every intermediate M2 and
//     between-group term is at most S); Stddev: the square root of that
//     added to 1e-9·|want|.
//   - ApproximatePercentile: got lies within 1% (relative, plus 1e-307) of
//     the input of rank oracleDDRank: ⌊q(n-1)⌋, or mostly ⌈q(n-1)⌉ when
//     that input is negative.
//   - ApproximateSetCardinality: hllTolerance.
//   - everything else: exactly equal, kinds included.
func oracleCheck(s Spec, inputs, involved []oracleInput, got value.Value, gotErr error) error {
	want, wantErr := oracleResult(s, inputs)
	if wantErr != nil || gotErr != nil {
		if !errors.Is(gotErr, wantErr) {
			return fmt.Errorf("%s: got (%v, %v), want (%v, %v)", s.Func, jsonOf(got), gotErr, jsonOf(want), wantErr)
		}
		return nil
	}
	if involved == nil {
		involved = inputs
	}
	fail := func() error {
		return fmt.Errorf("%s: got %v (%s), want %v (%s)", s.Func, jsonOf(got), got.Kind(), jsonOf(want), want.Kind())
	}
	if got.Kind() != want.Kind() {
		return fail()
	}
	switch s.Func {
	case "ApproximateSetCardinality":
		if math.Abs(float64(got.Int()-want.Int())) > hllTolerance(s.Precision, want.Int()) {
			return fail()
		}
		return nil
	}
	if want.Kind() != value.KindFloat {
		if !sameValue(got, want) {
			return fail()
		}
		return nil
	}
	g, w := got.Float(), want.Float()
	var absSum, sumSq, maxAbs float64
	n := 0
	for _, x := range oracleNumbers(involved) {
		absSum += math.Abs(x)
		sumSq += x * x
		maxAbs = max(maxAbs, math.Abs(x))
		n++
	}
	rest := len(oracleNumbers(inputs))
	var tol float64
	switch s.Func {
	case "Sum", "Average":
		tol = floatRel * max(1, absSum)
	case "Median", "Percentile", "P50", "P95", "P99":
		tol = floatRel * max(1, maxAbs)
	case "VarPop", "VarSamp":
		tol = floatRel*math.Abs(w) + varianceRounding(n, rest, sumSq)
	case "StddevPop", "StddevSamp":
		tol = floatRel*math.Abs(w) + math.Sqrt(varianceRounding(n, rest, sumSq))
	case "ApproximatePercentile":
		tol = ddRel*math.Abs(w) + ddAbs
	default:
		tol = 0
	}
	if math.Abs(g-w) > tol {
		return fmt.Errorf("%s: got %v, want %v (|diff| %g > tolerance %g)", s.Func, g, w, math.Abs(g-w), tol)
	}
	return nil
}

// varianceRounding bounds the rounding error of a variance kept as running
// moments over n numbers (rest of them still in the cell) whose squares sum to
// sumSq: 64·n relative ulps of the squares' scale, and, because each step
// rounds to at least the smallest subnormal (2^-1074) however tiny its
// operands, 64·n of those as an absolute floor. Without the floor a cell of
// values near 1e-158, whose squares are subnormal, is held to exact equality.
func varianceRounding(n, rest int, sumSq float64) float64 {
	const eps = 0x1p-52
	return 64*float64(n)*eps*sumSq/float64(max(1, rest-1)) + 64*float64(n)*math.SmallestNonzeroFloat64
}

func jsonOf(v value.Value) string { return string(value.AppendJSON(nil, v)) }
