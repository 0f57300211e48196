package aggregate

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

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
	k, bits := rawKindBits(&v)
	if !valueFast {
		k, bits = slowKindBits(&v)
	}
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
// mergeable quantile sketch with relative-error guarantees", VLDB 12(12)).
//
// The sketch maps a value x > 0 to the bucket k = ⌊log_γ x⌋ with
// γ = (1+α)/(1-α) and α = 0.01, and answers with γ^k(1+α), which is within
// relative error α of every value of the bucket; negative values use a second
// store of buckets of |x|, and values with |x| below about 2.3e-308 (the
// smallest normal float64 times γ) count as zero. This is the logarithmic
// mapping of github.com/DataDog/sketches-go; that library is not used because
// it needs google.golang.org/protobuf, which is not in go.mod.
//
// The quantile is the input of rank ⌊q(n-1)⌋ (0-based) in sorted order, with
// relative error at most α, then clamped to the exact minimum and maximum the
// cell keeps. Bucket counts are exact integers. Null inputs are ignored;
// empty: null. Not invertible.
type ddAgg struct{ base }

func (a *ddAgg) Accept(v value.Value) error { return acceptNumber(a.spec.Func, v) }
func (a *ddAgg) NewColumn() Column {
	return &ddColumn{agg: a, q: a.spec.Quantile}
}

// DDSketch parameters.
const ddAlpha = 0.01

var (
	ddGamma        = (1 + ddAlpha) / (1 - ddAlpha)
	ddMultiplier   = 1 / math.Log(ddGamma)
	ddMinIndexable = 0x1p-1022 * ddGamma // smallest normal float64 times γ
)

// Bucket keys of finite values lie well inside ±ddKeyLimit (about ±35500).
const ddKeyLimit = 40000

func ddKey(x float64) int32 { return int32(math.Floor(math.Log(x) * ddMultiplier)) }

func ddBucketValue(k int32) float64 { return math.Exp(float64(k)/ddMultiplier) * (1 + ddAlpha) }

// ddStore is a sparse bucket store: keys ascending with their counts.
type ddStore struct {
	keys   []int32
	counts []uint64
	total  uint64
}

func (s *ddStore) add(k int32) {
	s.total++
	if n := len(s.keys); n > 0 && s.keys[n-1] == k {
		s.counts[n-1]++
		return
	}
	pos, found := slices.BinarySearch(s.keys, k)
	if found {
		s.counts[pos]++
		return
	}
	s.keys = slices.Insert(s.keys, pos, k)
	s.counts = slices.Insert(s.counts, pos, 1)
}

// merge adds o's buckets; in place when o has no key s lacks.
func (s *ddStore) merge(o *ddStore) {
	if len(o.keys) == 0 {
		return
	}
	s.total += o.total
	fresh := 0
	for x, y := 0, 0; y < len(o.keys); {
		switch {
		case x < len(s.keys) && s.keys[x] < o.keys[y]:
			x++
		case x < len(s.keys) && s.keys[x] == o.keys[y]:
			x++
			y++
		default:
			fresh++
			y++
		}
	}
	if fresh == 0 {
		for x, y := 0, 0; y < len(o.keys); x++ {
			if s.keys[x] == o.keys[y] {
				s.counts[x] += o.counts[y]
				y++
			}
		}
		return
	}
	n := len(s.keys) + fresh
	keys, counts := make([]int32, 0, n), make([]uint64, 0, n)
	x, y := 0, 0
	for x < len(s.keys) || y < len(o.keys) {
		switch {
		case y == len(o.keys) || (x < len(s.keys) && s.keys[x] < o.keys[y]):
			keys, counts = append(keys, s.keys[x]), append(counts, s.counts[x])
			x++
		case x == len(s.keys) || o.keys[y] < s.keys[x]:
			keys, counts = append(keys, o.keys[y]), append(counts, o.counts[y])
			y++
		default:
			keys, counts = append(keys, s.keys[x]), append(counts, s.counts[x]+o.counts[y])
			x++
			y++
		}
	}
	s.keys, s.counts = keys, counts
}

func (s *ddStore) clone() ddStore {
	return ddStore{keys: slices.Clone(s.keys), counts: slices.Clone(s.counts), total: s.total}
}

// ddSketch is one cell's sketch, with the exact count, minimum and maximum.
type ddSketch struct {
	count    uint64 // all inputs
	zero     uint64 // inputs counted as zero
	min, max float64
	pos, neg ddStore
}

func (s *ddSketch) add(x float64) {
	if s.count == 0 {
		s.min, s.max = x, x
	} else {
		s.min, s.max = min(s.min, x), max(s.max, x)
	}
	s.count++
	switch {
	case x > ddMinIndexable:
		s.pos.add(ddKey(x))
	case x < -ddMinIndexable:
		s.neg.add(ddKey(-x))
	default:
		s.zero++
	}
}

func (s *ddSketch) merge(o *ddSketch) {
	if o.count == 0 {
		return
	}
	if s.count == 0 {
		s.min, s.max = o.min, o.max
	} else {
		s.min, s.max = min(s.min, o.min), max(s.max, o.max)
	}
	s.count += o.count
	s.zero += o.zero
	s.pos.merge(&o.pos)
	s.neg.merge(&o.neg)
}

func (s *ddSketch) clone() *ddSketch {
	c := *s
	c.pos, c.neg = s.pos.clone(), s.neg.clone()
	return &c
}

// quantile returns the estimate of the input of rank ⌊q(count-1)⌋; the
// sketch must not be empty.
func (s *ddSketch) quantile(q float64) float64 {
	rank := uint64(q * float64(s.count-1))
	rank = min(rank, s.count-1)
	var x float64
	switch {
	case rank < s.neg.total: // the most negative values come first
		var seen uint64
		for k := len(s.neg.keys) - 1; k >= 0; k-- {
			seen += s.neg.counts[k]
			if seen > rank {
				x = -ddBucketValue(s.neg.keys[k])
				break
			}
		}
	case rank < s.neg.total+s.zero:
		x = 0
	default:
		rank -= s.neg.total + s.zero
		var seen uint64
		for k := range s.pos.keys {
			seen += s.pos.counts[k]
			if seen > rank {
				x = ddBucketValue(s.pos.keys[k])
				break
			}
		}
	}
	return min(max(x, s.min), s.max)
}

// ddColumn holds a pointer per cell, nil while the cell is empty.
type ddColumn struct {
	agg   *ddAgg
	q     float64
	cells []*ddSketch
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
	k, bits := rawKindBits(&v)
	if !valueFast {
		k, bits = slowKindBits(&v)
	}
	x, ok := numberOf(k, bits)
	if !ok {
		return
	}
	s := c.cells[i]
	if s == nil {
		s = new(ddSketch)
		c.cells[i] = s
	}
	s.add(x)
}

func (c *ddColumn) merge(i int, src *ddSketch) {
	if src == nil || src.count == 0 {
		return
	}
	if dst := c.cells[i]; dst != nil {
		if dst == src {
			src = src.clone()
		}
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
	if s == nil || s.count == 0 {
		return value.Null(), nil
	}
	return value.Float(s.quantile(c.q)), nil
}

func (c *ddColumn) Reset(i int) { c.cells[i] = nil }
func (c *ddColumn) ResetAll()   { clear(c.cells) }

// Cell encoding: code, then 0 for an empty cell, or 1, the count, the zero
// count (uvarints), min and max (8 bytes each), and the positive then the
// negative store: bucket count, first key (zig-zag varint), the following
// keys as increments (uvarint, > 0), then the bucket counts (uvarint, > 0).
func (c *ddColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	s := c.cells[i]
	if s == nil || s.count == 0 {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, s.count)
	b = binary.AppendUvarint(b, s.zero)
	b = appendFloat(b, s.min)
	b = appendFloat(b, s.max)
	b = appendDDStore(b, &s.pos)
	return appendDDStore(b, &s.neg)
}

func appendDDStore(b []byte, s *ddStore) []byte {
	b = binary.AppendUvarint(b, uint64(len(s.keys)))
	for k, key := range s.keys {
		if k == 0 {
			b = binary.AppendVarint(b, int64(key))
		} else {
			b = binary.AppendUvarint(b, uint64(key-s.keys[k-1]))
		}
	}
	for _, n := range s.counts {
		b = binary.AppendUvarint(b, n)
	}
	return b
}

func decodeDDStore(b []byte) (ddStore, []byte, error) {
	var s ddStore
	n, b, err := getUvarint(b)
	if err != nil {
		return s, nil, err
	}
	if n > uint64(len(b)/2) { // a bucket takes at least 2 bytes
		return s, nil, corrupt("bucket count %d overruns the input", n)
	}
	if n == 0 {
		return s, b, nil
	}
	s.keys, s.counts = make([]int32, n), make([]uint64, n)
	var key int64
	for k := range s.keys {
		if k == 0 {
			key, b, err = getVarint(b)
		} else {
			var d uint64
			d, b, err = getUvarint(b)
			if err == nil && (d == 0 || d > 2*ddKeyLimit) {
				err = corrupt("bucket keys not increasing")
			}
			key += int64(d)
		}
		if err != nil {
			return s, nil, err
		}
		if key < -ddKeyLimit || key > ddKeyLimit {
			return s, nil, corrupt("bucket key %d out of range", key)
		}
		s.keys[k] = int32(key)
	}
	for k := range s.counts {
		var cnt uint64
		if cnt, b, err = getUvarint(b); err != nil {
			return s, nil, err
		}
		var carry uint64
		s.total, carry = bits.Add64(s.total, cnt, 0)
		if cnt == 0 || carry != 0 {
			return s, nil, corrupt("bad bucket count")
		}
		s.counts[k] = cnt
	}
	return s, b, nil
}

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
	s := new(ddSketch)
	if s.count, b, err = getUvarint(b); err != nil {
		return nil, err
	}
	if s.zero, b, err = getUvarint(b); err != nil {
		return nil, err
	}
	if s.min, b, err = getFiniteFloat(b); err != nil {
		return nil, err
	}
	if s.max, b, err = getFiniteFloat(b); err != nil {
		return nil, err
	}
	if s.pos, b, err = decodeDDStore(b); err != nil {
		return nil, err
	}
	if s.neg, b, err = decodeDDStore(b); err != nil {
		return nil, err
	}
	sum, c1 := bits.Add64(s.zero, s.pos.total, 0)
	sum, c2 := bits.Add64(sum, s.neg.total, 0)
	if s.count == 0 || c1 != 0 || c2 != 0 || sum != s.count || !(s.min <= s.max) {
		return nil, corrupt("inconsistent sketch")
	}
	c.cells[i] = s
	return b, nil
}

func (c *ddColumn) SizeBytes() int {
	n := 64 + 8*cap(c.cells)
	for _, s := range c.cells {
		if s != nil {
			n += 128 + 12*(cap(s.pos.keys)+cap(s.neg.keys))
		}
	}
	return n
}
