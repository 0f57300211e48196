package aggregate

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
	enc "github.com/DataDog/sketches-go/ddsketch/encoding"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/scenario-server/scenario-server/value"
)

// exactPctAgg is Median, Percentile(q), P50, P95 and P99: exact quantiles of
// the numeric inputs (converted to float64), as float64. Null inputs are
// ignored; empty: null. Not invertible.
//
// Percentile(q) interpolates linearly between the closest ranks, the
// definition of PostgreSQL's percentile_cont and of Hyndman & Fan's type 7:
// with the n inputs sorted as x[0..n-1], h = (n-1)q and
// result = x[⌊h⌋] + (h - ⌊h⌋)(x[⌊h⌋+1] - x[⌊h⌋]). Median is the middle input,
// or for an even count the mean of the two middle inputs. -0.0 is kept as 0.0.
type exactPctAgg struct {
	base
	q      float64
	median bool
}

func (a *exactPctAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *exactPctAgg) NewColumn() Column {
	return &exactPctColumn{agg: a, q: a.q, median: a.median}
}

// pctCell keeps every input of the cell: vals[:ns] sorted, vals[ns:] added
// since and not sorted yet. Result, Merge and AppendCell sort the tail and
// merge it in place, which changes the representation, never the partial.
type pctCell struct {
	vals []float64
	ns   int
}

// exactPctColumn: 32 bytes a cell plus 8 bytes an input.
type exactPctColumn struct {
	agg     *exactPctAgg
	q       float64
	median  bool
	cells   []pctCell
	scratch []float64
}

func (c *exactPctColumn) other(src Column) (*exactPctColumn, error) {
	o, ok := src.(*exactPctColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *exactPctColumn) Len() int     { return len(c.cells) }
func (c *exactPctColumn) Resize(n int) { c.cells = resize(c.cells, n) }

func (c *exactPctColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := v.KindBits()
	x, ok := numberOf(k, bits)
	if !ok {
		return
	}
	if x == 0 {
		x = 0 // -0.0 → 0.0
	}
	c.cells[i].vals = append(c.cells[i].vals, x)
}

// mergeRuns merges the sorted runs v[:mid] and v[mid:] in place, using
// scratch for a copy of the second run.
func (c *exactPctColumn) mergeRuns(v []float64, mid int) {
	if mid == 0 || mid == len(v) || v[mid-1] <= v[mid] {
		return
	}
	c.scratch = append(c.scratch[:0], v[mid:]...)
	s := c.scratch
	i, j, k := mid-1, len(s)-1, len(v)-1
	for j >= 0 {
		if i >= 0 && v[i] > s[j] {
			v[k] = v[i]
			i--
		} else {
			v[k] = s[j]
			j--
		}
		k--
	}
}

// fold sorts the tail into the sorted part.
func (c *exactPctColumn) fold(cell *pctCell) {
	if cell.ns == len(cell.vals) {
		return
	}
	slices.Sort(cell.vals[cell.ns:])
	c.mergeRuns(cell.vals, cell.ns)
	cell.ns = len(cell.vals)
}

// merge adds src's inputs to dst: src's sorted part is merged in linearly,
// its tail (if any) appended to dst's tail. src is not changed.
func (c *exactPctColumn) merge(dst *pctCell, src *pctCell) {
	if len(src.vals) == 0 {
		return
	}
	c.fold(dst)
	sorted, tail := src.vals[:src.ns], src.vals[src.ns:]
	old := len(dst.vals)
	dst.vals = append(dst.vals, sorted...)
	c.mergeRuns(dst.vals, old)
	dst.ns = len(dst.vals)
	dst.vals = append(dst.vals, tail...)
}

func (c *exactPctColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	dst := &c.cells[i]
	c.fold(dst)
	s := o.cells[j] // read after the fold, in case src is dst
	c.merge(dst, &s)
	return nil
}

func (c *exactPctColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	for k := range min(c.Len(), o.Len()) {
		dst := &c.cells[k]
		c.fold(dst)
		s := o.cells[k]
		c.merge(dst, &s)
	}
	return nil
}

func (c *exactPctColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *exactPctColumn) RetractAll(Column) error        { return ErrNotInvertible }

func (c *exactPctColumn) Result(i int) (value.Value, error) {
	cell := &c.cells[i]
	c.fold(cell)
	x := cell.vals
	if len(x) == 0 {
		return value.Null(), nil
	}
	if c.median {
		return value.Float(medianSorted(x)), nil
	}
	return value.Float(quantileSorted(x, c.q)), nil
}

// medianSorted returns the middle of x, or the mean of the two middle values.
func medianSorted(x []float64) float64 {
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	a, b := x[n/2-1], x[n/2]
	if s := a + b; !math.IsInf(s, 0) {
		return s / 2
	}
	return a/2 + b/2
}

// quantileSorted is the type 7 quantile of the sorted, non-empty x.
func quantileSorted(x []float64, q float64) float64 {
	n := len(x)
	h := q * float64(n-1)
	fl := math.Floor(h)
	k := int(fl)
	if k >= n-1 {
		return x[n-1]
	}
	if k < 0 {
		return x[0]
	}
	f := h - fl
	a, b := x[k], x[k+1]
	if f == 0 {
		return a
	}
	if d := b - a; !math.IsInf(d, 0) {
		return a + f*d
	}
	return a*(1-f) + b*f
}

func (c *exactPctColumn) Reset(i int) {
	c.cells[i].vals = c.cells[i].vals[:0]
	c.cells[i].ns = 0
}

func (c *exactPctColumn) ResetAll() { clear(c.cells) }

// Cell encoding: code, count (uvarint), the inputs sorted, 8 bytes each.
func (c *exactPctColumn) AppendCell(b []byte, i int) []byte {
	cell := &c.cells[i]
	c.fold(cell)
	b = append(b, c.agg.def.code)
	b = binary.AppendUvarint(b, uint64(len(cell.vals)))
	for _, x := range cell.vals {
		b = appendFloat(b, x)
	}
	return b
}

// DecodeCell accepts the inputs in any order; they must be finite.
func (c *exactPctColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	n, b, err := getUvarint(b)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)/8) {
		return nil, corrupt("count %d overruns the input", n)
	}
	var vals []float64
	if n > 0 {
		vals = make([]float64, n)
	}
	for k := range vals {
		x, rest, err := getFiniteFloat(b)
		if err != nil {
			return nil, err
		}
		if x == 0 {
			x = 0
		}
		vals[k], b = x, rest
	}
	slices.Sort(vals)
	c.cells[i] = pctCell{vals: vals, ns: len(vals)}
	return b, nil
}

func (c *exactPctColumn) SizeBytes() int {
	n := 80 + 32*cap(c.cells) + 8*cap(c.scratch)
	for k := range c.cells {
		n += 8 * cap(c.cells[k].vals)
	}
	return n
}

// ddAgg is ApproximatePercentile(q): the quantile q of the numeric inputs
// from a DDSketch (Masson, Rim, Lee 2019, "DDSketch: A fast and fully-
// mergeable quantile sketch with relative-error guarantees", VLDB 12(12)),
// github.com/DataDog/sketches-go's ddsketch with relative accuracy
// α = ddAlpha = 0.01: its logarithmic mapping puts x > 0 in the bucket
// k = ⌊log_γ x⌋, γ = (1+α)/(1-α), and answers with γ^k(1+α), within relative
// error α of every value of the bucket; negative values go to a second store
// of buckets of |x|, and |x| up to its MinIndexableValue (the smallest
// normal float64 times γ, about 2.3e-308) counts as zero. The stores are the
// library's default (BufferedPaginatedStore), which never collapses buckets,
// so the guarantee holds over the whole float64 range (at most about 71000
// buckets a sign).
//
// Which input the guarantee is relative to: GetValueAtQuantile takes the
// rank h = q(n-1) and returns the bucket value of the input of 0-based rank
// ⌊h⌋ in sorted order, except that the negative store is searched from its
// own end (rank negatives-1-h of |x|), which lands on rank ⌈h⌉ when that
// input is still negative. So, with x sorted, r = ⌈h⌉ if x[⌈h⌉] < -2.3e-308,
// else ⌊h⌋ (up to the rounding of negatives-1-h in float64, which the test
// oracle, oracleDDRank, repeats), and |result - x[r]| ≤ α|x[r]| (plus
// 2.3e-308 when x[r] counts as zero).
//
// Two additions to the library: the cell keeps its exact minimum and maximum,
// gives them for q = 0 and q = 1 (exact: the sketch's bucket of 1e308 gave
// 9.97e307, a hostile round), and clamps other results to them, which can only
// move a result toward x[r]; and an input beyond the library's MaxIndexableValue
// (MaxFloat64/(1+α), where the bucket value γ^k(1+α) could overflow), which
// its Add refuses, is put straight into the store at its bucket index, which
// every finite float64 has; an overflowing bucket value is then clamped to
// the exact extreme, still within α. The library keeps counts as float64,
// exact up to 2^53 inputs a cell. Null inputs are ignored; empty: null.
// Not invertible.
type ddAgg struct{ base }

func (a *ddAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *ddAgg) NewColumn() Column {
	return &ddColumn{agg: a, q: a.spec.Quantile}
}

// ddAlpha is ApproximatePercentile's relative accuracy (docs/semantics.md §5: 1 %).
const ddAlpha = 0.01

// ddMapping is the index mapping every sketch shares (a mapping is
// immutable; sketches merge only with an equal one).
var ddMapping = func() *mapping.LogarithmicMapping {
	m, err := mapping.NewLogarithmicMapping(ddAlpha)
	if err != nil {
		panic(err)
	}
	return m
}()

// The bucket indexes a finite input can have, and the largest count a
// decoded cell may hold (float64 counts are exact integers up to it).
var (
	ddMinIndex = ddMapping.Index(ddMapping.MinIndexableValue())
	ddMaxIndex = ddMapping.Index(math.MaxFloat64)
)

const ddMaxCount = 1 << 53

func newDDSketch() *ddsketch.DDSketch {
	return ddsketch.NewDDSketch(ddMapping, store.NewBufferedPaginatedStore(), store.NewBufferedPaginatedStore())
}

// ddCell is one cell's sketch with the exact minimum and maximum.
type ddCell struct {
	sk       *ddsketch.DDSketch
	min, max float64
}

func (s *ddCell) add(x float64) {
	s.min, s.max = min(s.min, x), max(s.max, x)
	if a := math.Abs(x); a > ddMapping.MaxIndexableValue() {
		if x > 0 {
			s.sk.GetPositiveValueStore().Add(ddMapping.Index(a))
		} else {
			s.sk.GetNegativeValueStore().Add(ddMapping.Index(a))
		}
		return
	}
	_ = s.sk.Add(x) // x is finite and indexable: no error
}

func (s *ddCell) clone() *ddCell {
	return &ddCell{sk: s.sk.Copy(), min: s.min, max: s.max}
}

// merge adds o's inputs; o may be s.
func (s *ddCell) merge(o *ddCell) {
	other := o.sk
	if o == s {
		other = other.Copy()
	}
	_ = s.sk.MergeWith(other) // one shared mapping: no error
	s.min, s.max = min(s.min, o.min), max(s.max, o.max)
}

// ddColumn holds a pointer per cell, nil while the cell is empty.
type ddColumn struct {
	agg     *ddAgg
	q       float64
	cells   []*ddCell
	scratch []byte
	bins    []ddBin // AppendCell's buckets of a store
}

func (c *ddColumn) other(src Column) (*ddColumn, error) {
	o, ok := src.(*ddColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *ddColumn) Len() int     { return len(c.cells) }
func (c *ddColumn) Resize(n int) { c.cells = resize(c.cells, n) }

func (c *ddColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	k, bits := v.KindBits()
	x, ok := numberOf(k, bits)
	if !ok {
		return
	}
	s := c.cells[i]
	if s == nil {
		s = &ddCell{sk: newDDSketch(), min: x, max: x}
		c.cells[i] = s
	}
	s.add(x)
}

func (c *ddColumn) merge(i int, src *ddCell) {
	if src == nil {
		return
	}
	if dst := c.cells[i]; dst != nil {
		dst.merge(src)
		return
	}
	c.cells[i] = src.clone()
}

func (c *ddColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.merge(i, o.cells[j])
	return nil
}

func (c *ddColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	for k := range min(c.Len(), o.Len()) {
		c.merge(k, o.cells[k])
	}
	return nil
}

func (c *ddColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *ddColumn) RetractAll(Column) error        { return ErrNotInvertible }

func (c *ddColumn) Result(i int) (value.Value, error) {
	s := c.cells[i]
	if s == nil {
		return value.Null(), nil
	}
	switch c.q {
	case 0: // rank 0: the exact minimum (the sketch's bucket may be off by α)
		return value.Float(s.min), nil
	case 1:
		return value.Float(s.max), nil
	}
	x, err := s.sk.GetValueAtQuantile(c.q)
	if err != nil { // not empty and 0 <= q <= 1: cannot happen
		return value.Null(), nil
	}
	return value.Float(min(max(x, s.min), s.max)), nil
}

func (c *ddColumn) Reset(i int) { c.cells[i] = nil }
func (c *ddColumn) ResetAll()   { clear(c.cells) }

// Cell encoding: code, then 0 for an empty cell, or 1, the minimum and the
// maximum (8 bytes each), the length of the sketch's encoding (uvarint) and
// the sketch as the library's Encode writes it, without the index mapping.
func (c *ddColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	s := c.cells[i]
	if s == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendFloat(b, s.min)
	b = appendFloat(b, s.max)
	c.scratch = appendDDSketch(c.scratch[:0], s.sk, &c.bins)
	b = binary.AppendUvarint(b, uint64(len(c.scratch)))
	return append(b, c.scratch...)
}

// ddBin is a bucket of a sketch's store: its index and count.
type ddBin struct {
	index int
	count float64
}

// appendDDSketch appends sk as the library's Encode writes it with the index mapping left
// out, as if its stores were DenseStores: how a BufferedPaginatedStore encodes its buckets
// depends on the order they came in (which stayed in its buffer, which went to pages); a
// DenseStore's encoding depends on the buckets only, so a cell encodes to the same bytes
// however it was built, and a restored cell to the bytes it was restored from. It reads the
// buckets (bins, reused) and writes what DenseStore.Encode would, choosing as it does between
// its dense and sparse forms, without copying them into a DenseStore first: that took time and
// memory of the span between the lowest and highest bucket (about 70,000 a sign for values
// of 1e-300 and 1e300: 0.3 ms a cell, round 22), not of the buckets.
func appendDDSketch(b []byte, sk *ddsketch.DDSketch, bins *[]ddBin) []byte {
	if z := sk.GetZeroCount(); z != 0 {
		enc.EncodeFlag(&b, enc.FlagZeroCountVarFloat)
		enc.EncodeVarfloat64(&b, z)
	}
	for _, st := range [2]struct {
		store store.Store
		t     enc.FlagType
	}{{sk.GetPositiveValueStore(), enc.FlagTypePositiveStore}, {sk.GetNegativeValueStore(), enc.FlagTypeNegativeStore}} {
		l := (*bins)[:0]
		st.store.ForEach(func(index int, count float64) bool {
			if count != 0 {
				l = append(l, ddBin{index, count})
			}
			return false
		})
		*bins = l
		if len(l) == 0 {
			continue
		}
		slices.SortFunc(l, func(x, y ddBin) int { return cmp.Compare(x.index, y.index) })
		// DenseStore.Encode's sizes: each bucket of the span, empty or not, densely; each
		// non-empty one sparsely.
		lo, hi := l[0].index, l[len(l)-1].index
		span := uint64(hi-lo) + 1
		dense := enc.Uvarint64Size(span) + enc.Varint64Size(int64(lo)) + enc.Varint64Size(1) +
			int(span-uint64(len(l)))*enc.Varfloat64Size(0)
		sparse := enc.Uvarint64Size(uint64(len(l)))
		prev := lo
		for _, x := range l {
			size := enc.Varfloat64Size(x.count)
			dense += size
			sparse += enc.Varint64Size(int64(x.index-prev)) + size
			prev = x.index
		}
		if dense <= sparse {
			enc.EncodeFlag(&b, enc.NewFlag(st.t, enc.BinEncodingContiguousCounts))
			enc.EncodeUvarint64(&b, span)
			enc.EncodeVarint64(&b, int64(lo))
			enc.EncodeVarint64(&b, 1)
			next := lo
			for _, x := range l {
				for ; next < x.index; next++ {
					enc.EncodeVarfloat64(&b, 0)
				}
				enc.EncodeVarfloat64(&b, x.count)
				next++
			}
			continue
		}
		enc.EncodeFlag(&b, enc.NewFlag(st.t, enc.BinEncodingIndexDeltasAndCounts))
		enc.EncodeUvarint64(&b, uint64(len(l)))
		prev = 0
		for _, x := range l {
			enc.EncodeVarint64(&b, int64(x.index-prev))
			enc.EncodeVarfloat64(&b, x.count)
			prev = x.index
		}
	}
	return b
}

// DecodeCell decodes the sketch with the library into sparse stores (whose
// size is bounded by the input's, whatever bucket indexes it names), checks
// every bucket (index reachable by a finite input, count a positive integer,
// at most 2^53 in all) and that the minimum and maximum lie in the lowest and
// highest buckets, and only then copies the buckets into a cell.
func (c *ddColumn) DecodeCell(i int, b []byte) ([]byte, error) {
	b, err := checkTag(b, c.agg.def.code)
	if err != nil {
		return nil, err
	}
	p, b, err := getByte(b)
	if err != nil {
		return nil, err
	}
	switch p {
	case 0:
		c.cells[i] = nil
		return b, nil
	case 1:
	default:
		return nil, corrupt("presence byte %d", p)
	}
	s := &ddCell{}
	if s.min, b, err = getFiniteFloat(b); err != nil {
		return nil, err
	}
	if s.max, b, err = getFiniteFloat(b); err != nil {
		return nil, err
	}
	n, b, err := getUvarint(b)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)) {
		return nil, corrupt("sketch length %d overruns the input", n)
	}
	body, rest := b[:n], b[n:]
	dec, err := ddsketch.DecodeDDSketch(body, store.SparseStoreConstructor, ddMapping)
	if err != nil {
		return nil, corrupt("sketch: %v", err)
	}
	s.sk = newDDSketch()
	var total float64
	ok := ddCount(dec.GetZeroCount(), true, &total)
	if ok && dec.GetZeroCount() > 0 {
		_ = s.sk.AddWithCount(0, dec.GetZeroCount())
	}
	for _, st := range [2]struct{ from, to store.Store }{
		{dec.GetPositiveValueStore(), s.sk.GetPositiveValueStore()},
		{dec.GetNegativeValueStore(), s.sk.GetNegativeValueStore()},
	} {
		st.from.ForEach(func(index int, count float64) bool {
			if index < ddMinIndex || index > ddMaxIndex || !ddCount(count, false, &total) {
				ok = false
				return true
			}
			st.to.AddWithCount(index, count)
			return false
		})
	}
	if !ok {
		return nil, corrupt("bad sketch bucket")
	}
	if total == 0 || !(s.min <= s.max) || !s.holds(s.min, false) || !s.holds(s.max, true) {
		return nil, corrupt("inconsistent sketch")
	}
	c.cells[i] = s
	return rest, nil
}

// ddCount checks a decoded bucket count (zero allowed for the zero bucket)
// and adds it to total, which must stay at most ddMaxCount.
func ddCount(n float64, zeroOK bool, total *float64) bool {
	if !(n > 0 || (zeroOK && n == 0)) || n > ddMaxCount || n != math.Trunc(n) {
		return false
	}
	*total += n
	return *total <= ddMaxCount
}

// holds reports whether x lies in the sketch's lowest bucket (high false) or
// highest bucket (high true), as the cell's exact minimum or maximum must.
// Seen from the side x is looked for on (the negative store for the minimum,
// the positive one for the maximum), the extreme bucket is the one of the
// largest |x|; when that store is empty, the zero bucket, and else the
// bucket of the smallest |x| of the other store.
func (s *ddCell) holds(x float64, high bool) bool {
	near, far := s.sk.GetNegativeValueStore(), s.sk.GetPositiveValueStore()
	sign := -1.0
	if high {
		near, far, sign = far, near, 1
	}
	tiny := ddMapping.MinIndexableValue()
	switch {
	case !near.IsEmpty():
		k, _ := near.MaxIndex()
		return x*sign > tiny && ddMapping.Index(math.Abs(x)) == k
	case s.sk.GetZeroCount() > 0:
		return math.Abs(x) <= tiny
	case !far.IsEmpty():
		k, _ := far.MinIndex()
		return -x*sign > tiny && ddMapping.Index(math.Abs(x)) == k
	}
	return false
}

func (c *ddColumn) SizeBytes() int {
	n := 88 + 8*cap(c.cells) + cap(c.scratch)
	for _, s := range c.cells {
		if s != nil {
			// The cell, the sketch and its two stores, then about 16 bytes
			// a bucket.
			n += 320
			for _, st := range [2]store.Store{s.sk.GetPositiveValueStore(), s.sk.GetNegativeValueStore()} {
				st.ForEach(func(int, float64) bool { n += 16; return false })
			}
		}
	}
	return n
}
