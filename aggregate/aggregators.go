package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/scenario-server/scenario-server/value"
)

// Spec names an aggregator and its parameters, as a scenario writes them.
type Spec struct {
	// Func is the function's name, exactly as listed by Funcs: "Count",
	// "CountWhen", "Sum", "Average", "Min", "Max", "First", "Last", "List",
	// "Set", "CountDistinct", "ApproximateSetCardinality", "Median",
	// "Percentile", "P50", "P95", "P99", "ApproximatePercentile", "VarPop",
	// "VarSamp", "StddevPop", "StddevSamp".
	Func string
	// Quantile is the parameter of Percentile and ApproximatePercentile:
	// 0 <= q <= 1 (0 is the minimum, 1 the maximum). It must be 0 for the
	// other functions.
	Quantile float64
	// Precision is the parameter of ApproximateSetCardinality: the
	// HyperLogLog uses 2^Precision registers, 4..18; 0 means 14. It must be 0
	// for the other functions.
	Precision int
}

// FuncInfo describes one function for validation and the UI palette.
type FuncInfo struct {
	Name        string // as in Spec.Func
	Input       string // "none", "boolean", "number", "number or string", "any"
	Result      string // the result's type
	Empty       string // the result of an empty window: "0", "null", "[]"
	Description string // the palette's description (GET /api/components)
	Invertible  bool   // Retract is supported
	Param       string // "", "quantile" or "precision"
}

// Default and limits of ApproximateSetCardinality's precision.
const (
	DefaultHLLPrecision = 14
	MinHLLPrecision     = 4
	MaxHLLPrecision     = 18
)

// funcDef is one entry of the registry: its public description, the byte
// that tags its encoded cells (stable: checkpoints keep it), and how to build
// it from a normalized Spec.
type funcDef struct {
	info FuncInfo
	code byte
	make func(base) Aggregator
}

// registry lists every function of docs/semantics.md §5 in the order Funcs returns.
var registry = []funcDef{
	{FuncInfo{"Count", "none", "int64", "0", "Number of events (integer; 0 for an empty window).", true, ""}, 1,
		func(b base) Aggregator { return &countAgg{base: b} }},
	{FuncInfo{"CountWhen", "boolean", "int64", "0", "Number of events for which aggregateBy is true (integer; 0 for an empty window).", true, ""}, 2,
		func(b base) Aggregator { return &countAgg{base: b, when: true} }},
	{FuncInfo{"Sum", "number", "int64, or float64 once an input is a float", "0", "Sum: an exact integer while every input is an integer, a float once one is fractional; 0 for an empty window.", true, ""}, 3,
		func(b base) Aggregator { return &sumAgg{base: b} }},
	{FuncInfo{"Average", "number", "float64", "null", "Mean (float; null for an empty window).", true, ""}, 4,
		func(b base) Aggregator { return &averageAgg{base: b} }},
	{FuncInfo{"Min", "number or string", "same as input", "null", "Smallest value, of the input's type (null for an empty window).", false, ""}, 5,
		func(b base) Aggregator { return &minMaxAgg{base: b} }},
	{FuncInfo{"Max", "number or string", "same as input", "null", "Largest value, of the input's type (null for an empty window).", false, ""}, 6,
		func(b base) Aggregator { return &minMaxAgg{base: b, max: true} }},
	{FuncInfo{"First", "any", "same as input", "null", "Value of the earliest event by event time, ties in arrival order (null for an empty window).", false, ""}, 7,
		func(b base) Aggregator { return &firstLastAgg{base: b} }},
	{FuncInfo{"Last", "any", "same as input", "null", "Value of the latest event by event time, ties in arrival order (null for an empty window).", false, ""}, 8,
		func(b base) Aggregator { return &firstLastAgg{base: b, last: true} }},
	{FuncInfo{"List", "any", "list", "[]", "Values in event-time order ([] for an empty window).", false, ""}, 9,
		func(b base) Aggregator { return &listAgg{base: b} }},
	{FuncInfo{"Set", "any", "list", "[]", "Distinct values, sorted ([] for an empty window).", false, ""}, 10,
		func(b base) Aggregator { return &distinctAgg{base: b} }},
	{FuncInfo{"CountDistinct", "any", "int64", "0", "Number of distinct values, exact (0 for an empty window).", false, ""}, 11,
		func(b base) Aggregator { return &distinctAgg{base: b, count: true} }},
	{FuncInfo{"ApproximateSetCardinality", "any", "int64", "0", "Number of distinct values, estimated with HyperLogLog (null counts as one value).", false, "precision"}, 12,
		func(b base) Aggregator { return &hllAgg{base: b} }},
	{FuncInfo{"Median", "number", "float64", "null", "Median, exact; the mean of the two middle values for an even count (null for an empty window).", false, ""}, 13,
		func(b base) Aggregator { return &exactPctAgg{base: b, q: 0.5, median: true} }},
	{FuncInfo{"Percentile", "number", "float64", "null", "Percentile q, exact, interpolating linearly between the closest ranks (null for an empty window).", false, "quantile"}, 14,
		func(b base) Aggregator { return &exactPctAgg{base: b, q: b.spec.Quantile} }},
	{FuncInfo{"P50", "number", "float64", "null", "Percentile 0.5.", false, ""}, 15,
		func(b base) Aggregator { return &exactPctAgg{base: b, q: 0.5} }},
	{FuncInfo{"P95", "number", "float64", "null", "Percentile 0.95.", false, ""}, 16,
		func(b base) Aggregator { return &exactPctAgg{base: b, q: 0.95} }},
	{FuncInfo{"P99", "number", "float64", "null", "Percentile 0.99.", false, ""}, 17,
		func(b base) Aggregator { return &exactPctAgg{base: b, q: 0.99} }},
	{FuncInfo{"ApproximatePercentile", "number", "float64", "null", "Percentile q from a mergeable sketch with 1 % relative error (null for an empty window).", false, "quantile"}, 18,
		func(b base) Aggregator { return &ddAgg{base: b} }},
	{FuncInfo{"VarPop", "number", "float64", "null", "Population variance (null for an empty window; 0 for one value).", false, ""}, 19,
		func(b base) Aggregator { return &varianceAgg{base: b, kind: varPop} }},
	{FuncInfo{"VarSamp", "number", "float64", "null", "Sample variance (null for an empty window and for one value).", false, ""}, 20,
		func(b base) Aggregator { return &varianceAgg{base: b, kind: varSamp} }},
	{FuncInfo{"StddevPop", "number", "float64", "null", "Population standard deviation (null for an empty window; 0 for one value).", false, ""}, 21,
		func(b base) Aggregator { return &varianceAgg{base: b, kind: stddevPop} }},
	{FuncInfo{"StddevSamp", "number", "float64", "null", "Sample standard deviation (null for an empty window and for one value).", false, ""}, 22,
		func(b base) Aggregator { return &varianceAgg{base: b, kind: stddevSamp} }},
}

// Funcs returns every aggregation function, in a stable order (the order of
// docs/semantics.md §5). The slice is a copy.
func Funcs() []FuncInfo {
	out := make([]FuncInfo, len(registry))
	for i := range registry {
		out[i] = registry[i].info
	}
	return out
}

// New returns the aggregator s names. Errors wrap ErrUnknownFunc for a name
// not listed by Funcs, and ErrBadParam for a quantile outside [0, 1], a
// precision outside 4..18, or a parameter given to a function that takes
// none.
func New(s Spec) (Aggregator, error) {
	var def *funcDef
	for i := range registry {
		if registry[i].info.Name == s.Func {
			def = &registry[i]
			break
		}
	}
	if def == nil {
		names := make([]string, len(registry))
		for i := range registry {
			names[i] = registry[i].info.Name
		}
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFunc, s.Func, strings.Join(names, ", "))
	}
	switch def.info.Param {
	case "quantile":
		if !(s.Quantile >= 0 && s.Quantile <= 1) { // also refuses NaN
			return nil, fmt.Errorf("%w: %s quantile %v is outside [0, 1]", ErrBadParam, s.Func, s.Quantile)
		}
	case "precision":
		if s.Precision == 0 {
			s.Precision = DefaultHLLPrecision
		}
		if s.Precision < MinHLLPrecision || s.Precision > MaxHLLPrecision {
			return nil, fmt.Errorf("%w: %s precision %d is outside %d..%d", ErrBadParam, s.Func, s.Precision, MinHLLPrecision, MaxHLLPrecision)
		}
	}
	if def.info.Param != "quantile" && s.Quantile != 0 {
		return nil, fmt.Errorf("%w: %s takes no quantile (got %v)", ErrBadParam, s.Func, s.Quantile)
	}
	if def.info.Param != "precision" && s.Precision != 0 {
		return nil, fmt.Errorf("%w: %s takes no precision (got %d)", ErrBadParam, s.Func, s.Precision)
	}
	return def.make(base{spec: s, def: def}), nil
}

// base is embedded in every aggregator: the normalized Spec (which also
// identifies columns of the same aggregator) and the registry entry.
type base struct {
	spec Spec
	def  *funcDef
}

func (b base) Func() string     { return b.spec.Func }
func (b base) Invertible() bool { return b.def.info.Invertible }
func (b base) NumericResult() bool {
	in := b.def.info.Input
	return in == "none" || in == "boolean" || in == "number"
}

// Input checks shared by the aggregators.

func acceptNumber(fn string, v value.Value) error {
	if v.IsNumber() || v.IsNull() {
		return nil
	}
	return &InputError{Func: fn, Got: v.Kind(), Want: "number"}
}

// resize sets len(s) to n; cells below n are kept and new cells are zero.
// The part cut off is cleared so that it holds no references and reads as
// empty if the slice grows again.
//
// A growth of at least exactGrowth cells asked at once (a count window's new keys, a
// restored snapshot, a session doubling its cells) makes an array of n exactly: the caller
// has sized it, and what it reserved for it (WindowSpec.Reserve) is what it takes. Smaller
// steps (a block's few more keys) grow as append does, amortized.
func resize[T any](s []T, n int) []T {
	if n < 0 {
		n = 0
	}
	if n <= len(s) {
		clear(s[n:])
		return s[:n]
	}
	old := len(s)
	if n > cap(s) && n-old >= exactGrowth {
		out := make([]T, n)
		copy(out, s)
		return out
	}
	s = slices.Grow(s, n-old)[:n]
	clear(s[old:])
	return s
}

// exactGrowth is the growth, in cells, from which resize sizes an array exactly.
const exactGrowth = 1 << 10

// resizeLazy is resize for a lazily allocated side array: nil stays nil.
func resizeLazy[T any](s []T, n int) []T {
	if s == nil {
		return nil
	}
	return resize(s, n)
}

// Encoding helpers. Every encoded cell starts with its function's code byte
// (funcDef.code), so that a cell restored into a column of another function
// is reported as corrupt instead of misread.

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func checkTag(b []byte, code byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, corrupt("empty cell")
	}
	if b[0] != code {
		return nil, corrupt("cell of function code %d, want %d", b[0], code)
	}
	return b[1:], nil
}

func getByte(b []byte) (byte, []byte, error) {
	if len(b) == 0 {
		return 0, nil, corrupt("truncated")
	}
	return b[0], b[1:], nil
}

func getUvarint(b []byte) (uint64, []byte, error) {
	x, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, corrupt("bad uvarint")
	}
	return x, b[n:], nil
}

func getVarint(b []byte) (int64, []byte, error) {
	x, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, corrupt("bad varint")
	}
	return x, b[n:], nil
}

func getUint64(b []byte) (uint64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, corrupt("truncated")
	}
	return binary.LittleEndian.Uint64(b), b[8:], nil
}

func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

func getFloat(b []byte) (float64, []byte, error) {
	u, rest, err := getUint64(b)
	return math.Float64frombits(u), rest, err
}

// getFiniteFloat reads a float that must be finite.
func getFiniteFloat(b []byte) (float64, []byte, error) {
	f, rest, err := getFloat(b)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return 0, nil, corrupt("non-finite float")
	}
	return f, rest, err
}

// getCount reads a uvarint element count that cannot exceed the bytes left
// (every element takes at least one byte), so a corrupt count never makes
// DecodeCell allocate more than its input's size.
func getCount(b []byte) (int, []byte, error) {
	n, rest, err := getUvarint(b)
	if err != nil {
		return 0, nil, err
	}
	if n > uint64(len(rest)) {
		return 0, nil, corrupt("count %d overruns the input", n)
	}
	return int(n), rest, nil
}

// canonValue returns v with every -0.0 float replaced by +0.0, so that values
// that are value.Equal have one representation (Set, CountDistinct and
// ApproximateSetCardinality treat Float(-0.0) and Float(0.0) as one value).
// It allocates only when v contains a negative zero.
func canonValue(v value.Value) value.Value {
	if !hasNegZero(v) {
		return v
	}
	switch v.Kind() {
	case value.KindFloat:
		return value.Float(0)
	case value.KindList:
		items := v.List()
		out := make([]value.Value, len(items))
		for i, it := range items {
			out[i] = canonValue(it)
		}
		return value.List(out)
	case value.KindRecord:
		r := v.Record()
		vals := make([]value.Value, len(r.Values))
		for i, it := range r.Values {
			vals[i] = canonValue(it)
		}
		return value.NewRecord(slices.Clone(r.Keys), vals)
	}
	return v
}

func hasNegZero(v value.Value) bool {
	switch v.Kind() {
	case value.KindFloat:
		f := v.Float()
		return f == 0 && math.Signbit(f)
	case value.KindList:
		for _, it := range v.List() {
			if hasNegZero(it) {
				return true
			}
		}
	case value.KindRecord:
		for _, it := range v.Record().Values {
			if hasNegZero(it) {
				return true
			}
		}
	}
	return false
}

// stateSizer estimates the heap bytes the values of a state hold beyond their Value headers.
// A string of sharedBytes or more, or a list or record of sharedItems or more, held by
// several values (one list of a Variable kept by Last in each cell a for-each's events reach)
// is counted once, as it is held once: a count window's cells sharing 4.5-million-item lists
// were reported as 42 GB (round 25). Shorter ones are counted each time (a map entry each
// would cost more than it saves): at most sharedBytes, or sharedItems values, too many each.
type stateSizer struct {
	seen map[sharedData]struct{}
	// all counts every string, list and record each time it is met, shared or not.
	all bool
}

// HeldBytes is what v may hold once kept in a window's state, as StateBytes counts a value
// beyond its header: a string's bytes, a value header an item of a list, 48 bytes a record
// and, an entry, its key's bytes and 16 bytes more. What several items of v share is
// counted each time (an aggregator keeps its own copy of an input: List, Set). It walks v:
// its cost is the number of items.
func HeldBytes(v value.Value) int {
	s := stateSizer{all: true}
	return s.size(v)
}

// HeldBytesOf is the sum of HeldBytes of vals (their strings, lists and records), counted
// until it passes stop: a list whose value headers alone pass what is left of stop counts
// them without its items being walked.
func HeldBytesOf(vals []value.Value, stop int) int {
	n := 0
	for _, v := range vals {
		if n > stop {
			break
		}
		switch v.Kind() {
		case value.KindString:
			n += len(v.Str())
		case value.KindList:
			if h := len(v.List()) * valueHeader; h > stop-n {
				n += h
				continue
			}
			n += HeldBytes(v)
		case value.KindRecord:
			n += HeldBytes(v)
		}
	}
	return n
}

// sharedData is where a string's bytes or a list's items start, and how many: a shorter part
// of the same array is another (counted again: never less than what is held).
type sharedData struct {
	p unsafe.Pointer
	n int
}

const (
	sharedBytes = 1 << 10
	sharedItems = 64
)

// first reports whether the data at p, n long, is met for the first time.
func (s *stateSizer) first(p unsafe.Pointer, n int) bool {
	if s.all {
		return true
	}
	if s.seen == nil {
		s.seen = map[sharedData]struct{}{}
	}
	k := sharedData{p, n}
	if _, ok := s.seen[k]; ok {
		return false
	}
	s.seen[k] = struct{}{}
	return true
}

func (s *stateSizer) size(v value.Value) int {
	switch v.Kind() {
	case value.KindString:
		str := v.Str()
		if len(str) >= sharedBytes && !s.first(unsafe.Pointer(unsafe.StringData(str)), len(str)) {
			return 0
		}
		return len(str)
	case value.KindList:
		l := v.List()
		if len(l) >= sharedItems && !s.first(unsafe.Pointer(unsafe.SliceData(l)), len(l)) {
			return 0
		}
		n := 0
		for _, it := range l {
			n += valueHeader + s.size(it)
		}
		return n
	case value.KindRecord:
		r := v.Record()
		if len(r.Keys) >= sharedItems && !s.first(unsafe.Pointer(r), -1) {
			return 0
		}
		n := 48
		for i, k := range r.Keys {
			n += 16 + len(k) + valueHeader + s.size(r.Values[i])
		}
		return n
	}
	return 0
}

// valueHeader is the size of a value.Value.
const valueHeader = int(unsafe.Sizeof(value.Value{}))

// Reading a value.Value on the hot path.
//
// value.Value's accessors have value receivers, and inlined accessor calls
// on a Value held in memory copy it (24 bytes), which can cost more than Add
// itself. The Add methods read the
// kind and the 8-byte payload with the pointer-receiver v.KindBits() on
// their own parameter instead: no second copy.

// numberOf returns the float64 of a number given by value.Value.KindBits.
func numberOf(k value.Kind, bits uint64) (float64, bool) {
	switch k {
	case value.KindInt:
		return float64(int64(bits)), true
	case value.KindFloat:
		return math.Float64frombits(bits), true
	}
	return 0, false
}

// owned is v with its strings (nested ones too) in memory of their own. A decoder hands out
// the strings of an event in one block shared with the whole event (value.Decoder), so a
// short string kept in window state (a group key, a Last or Min of a name) kept the event's
// megabytes alive, which the state budget does not count: 2,940 events of a 1 MB field held
// 4 GB for 0.5 MB of state, and the server died (round 13 A). Called when a value enters
// state: a new key, a value an aggregator keeps.
func owned(v value.Value) value.Value {
	switch v.Kind() {
	case value.KindString:
		return value.String(strings.Clone(v.Str()))
	case value.KindList:
		items := v.List()
		out := make([]value.Value, len(items))
		for i, x := range items {
			out[i] = owned(x)
		}
		return value.List(out)
	case value.KindRecord:
		r := v.Record()
		keys := make([]string, len(r.Keys))
		vals := make([]value.Value, len(r.Values))
		for i := range r.Keys {
			keys[i], vals[i] = strings.Clone(r.Keys[i]), owned(r.Values[i])
		}
		return value.NewRecord(keys, vals)
	}
	return v
}

// ownedKey is a copy of key whose values are owned.
func ownedKey(key []value.Value) []value.Value {
	out := make([]value.Value, len(key))
	for i, v := range key {
		out[i] = owned(v)
	}
	return out
}
