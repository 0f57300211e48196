package aggregate

import (
	"encoding/binary"
	"math/bits"
	"reflect"
	"unsafe"

	"github.com/axiomhq/hyperloglog"

	"github.com/scenario-server/scenario-server/kernels"
	"github.com/scenario-server/scenario-server/value"
)

// hllAgg is ApproximateSetCardinality: the number of distinct inputs,
// estimated with HyperLogLog (Flajolet, Fusy, Gandouet, Meunier 2007) with
// the HyperLogLog++ refinements of Heule, Nunkesser, Hall 2013 (a sparse
// representation for small cardinalities), as implemented by
// github.com/axiomhq/hyperloglog. The sketch has 2^p registers, p from
// Spec.Precision (4..18, default 14); its standard error is about
// 1.04/sqrt(2^p) (0.8% at p = 14) once dense, and far smaller while sparse.
//
// A value is hashed through its value.AppendBinary encoding, with -0.0 taken
// as 0.0 so that values equal by value.Equal count once. Null is one value.
// Result: int64; empty: 0. Not invertible.
type hllAgg struct{ base }

func (a *hllAgg) Accept(value.Value) error { return nil }
func (a *hllAgg) NewColumn() Column {
	return &hllColumn{agg: a, p: uint8(a.spec.Precision)}
}

// hllColumn holds a pointer per cell, nil while the cell is empty; a sketch
// starts sparse (a few hundred bytes) and turns dense (2^p bytes) once that
// is smaller.
type hllColumn struct {
	agg   *hllAgg
	p     uint8
	cells []*hyperloglog.Sketch
	buf   []byte // scratch for encodings
}

func (c *hllColumn) other(src Column) (*hllColumn, error) {
	o, ok := src.(*hllColumn)
	if !ok || o.agg.spec != c.agg.spec {
		return nil, ErrColumnMismatch
	}
	return o, nil
}

func (c *hllColumn) Len() int     { return len(c.cells) }
func (c *hllColumn) Resize(n int) { c.cells = resize(c.cells, n) }

func (c *hllColumn) Add(i int, v value.Value, _ int64, _ uint64) {
	sk := c.cells[i]
	if sk == nil {
		sk, _ = hyperloglog.NewSketch(c.p, true) // p was checked by New
		c.cells[i] = sk
	}
	c.buf = value.AppendBinary(c.buf[:0], canonValue(v))
	sk.Insert(c.buf)
}

// mergeSketch adds src to dst (same precision). Two dense sketches are merged
// register-wise with kernels.MaxUint8; anything else goes through the
// library's Merge.
func mergeSketch(dst, src *hyperloglog.Sketch) {
	if dst == src {
		return // a sketch merged with itself is itself
	}
	if d, s := denseRegs(dst), denseRegs(src); d != nil && len(d) == len(s) {
		kernels.MaxUint8(d, s)
		return
	}
	_ = dst.Merge(src) // cannot fail: equal precisions
}

func (c *hllColumn) merge(i int, src *hyperloglog.Sketch) {
	if src == nil {
		return
	}
	if dst := c.cells[i]; dst != nil {
		mergeSketch(dst, src)
		return
	}
	c.cells[i] = src.Clone()
}

func (c *hllColumn) Merge(i int, src Column, j int) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	c.merge(i, o.cells[j])
	return nil
}

func (c *hllColumn) MergeAll(src Column) error {
	o, err := c.other(src)
	if err != nil {
		return err
	}
	for k := range min(c.Len(), o.Len()) {
		c.merge(k, o.cells[k])
	}
	return nil
}

func (c *hllColumn) Retract(int, Column, int) error { return ErrNotInvertible }
func (c *hllColumn) RetractAll(Column) error        { return ErrNotInvertible }

// Result returns the estimate. The library's Estimate may compact a sparse
// sketch's representation (not its content).
func (c *hllColumn) Result(i int) (value.Value, error) {
	sk := c.cells[i]
	if sk == nil {
		return value.Int(0), nil
	}
	return value.Int(int64(sk.Estimate())), nil
}

func (c *hllColumn) Reset(i int) { c.cells[i] = nil }
func (c *hllColumn) ResetAll()   { clear(c.cells) }

// Cell encoding: code, then 0 for an empty cell, or 1, a uvarint length and
// the sketch's own binary encoding (hyperloglog.Sketch.AppendBinary).
func (c *hllColumn) AppendCell(b []byte, i int) []byte {
	b = append(b, c.agg.def.code)
	sk := c.cells[i]
	if sk == nil {
		return append(b, 0)
	}
	var err error
	c.buf, err = sk.AppendBinary(c.buf[:0])
	if err != nil { // only for a zero-value sketch, which a cell never holds
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(c.buf)))
	return append(b, c.buf...)
}

func (c *hllColumn) DecodeCell(i int, b []byte) ([]byte, error) {
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
	n, b, err := getCount(b)
	if err != nil {
		return nil, err
	}
	data := b[:n]
	if len(data) < 2 || data[1] != c.p {
		return nil, corrupt("sketch precision does not match %d", c.p)
	}
	sk := new(hyperloglog.Sketch)
	if err := sk.UnmarshalBinary(data); err != nil {
		return nil, corrupt("%v", err)
	}
	c.cells[i] = sk
	return b[n:], nil
}

func (c *hllColumn) SizeBytes() int {
	n := 64 + 8*cap(c.cells) + cap(c.buf)
	for _, sk := range c.cells {
		if sk == nil {
			continue
		}
		if r := denseRegs(sk); r != nil {
			n += 96 + len(r)
			continue
		}
		buf, err := sk.AppendBinary(c.buf[:0])
		if err == nil {
			c.buf = buf
			n += 96 + 2*len(buf) // the sparse list plus its temporary set
		}
	}
	return n
}

// Access to the library's dense registers. hyperloglog.Sketch keeps them in
// the unexported field regs []uint8 (nil while sparse) and its sparse state
// in sparseList (nil once dense). Their offsets are found once with reflect;
// init then checks on a real sketch that reading through them sees what
// InsertHash did. If the library's layout ever changes, regsOK stays false
// and every merge goes through Sketch.Merge.
var (
	regsOK       bool
	regsOffset   uintptr
	sparseOffset uintptr
)

func init() {
	regsOK = initRegsAccessor()
}

func initRegsAccessor() bool {
	t := reflect.TypeFor[hyperloglog.Sketch]()
	rf, ok := t.FieldByName("regs")
	if !ok || rf.Type != reflect.TypeFor[[]uint8]() {
		return false
	}
	sf, ok := t.FieldByName("sparseList")
	if !ok || sf.Type.Kind() != reflect.Pointer {
		return false
	}
	regsOffset, sparseOffset = rf.Offset, sf.Offset
	return regsSelfCheck()
}

// regsSelfCheck inserts one known hash into a dense sketch of precision 14
// and checks that exactly the expected register changed: the top 14 bits of
// the hash pick the register (5 here) and the register gets one plus the
// number of leading zeros of the remaining bits (bit 40 of the hash is the
// first 1 after the index: 63-14-40 = 9 zeros, so 10). It also checks that
// a sparse sketch is seen as not dense.
func regsSelfCheck() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	const p = 14
	sk, err := hyperloglog.NewSketch(p, false)
	if err != nil {
		return false
	}
	regs := rawRegs(sk)
	if len(regs) != 1<<p || rawSparse(sk) {
		return false
	}
	x := uint64(5)<<(64-p) | 1<<40
	wantRho := uint8(bits.LeadingZeros64(x<<p|1<<(p-1))) + 1
	if wantRho != 10 {
		return false
	}
	sk.InsertHash(x)
	for k, r := range regs {
		if (k == 5 && r != wantRho) || (k != 5 && r != 0) {
			return false
		}
	}
	sparse, err := hyperloglog.NewSketch(p, true)
	if err != nil || len(rawRegs(sparse)) != 0 || !rawSparse(sparse) {
		return false
	}
	return true
}

func rawRegs(sk *hyperloglog.Sketch) []uint8 {
	return *(*[]uint8)(unsafe.Add(unsafe.Pointer(sk), regsOffset))
}

func rawSparse(sk *hyperloglog.Sketch) bool {
	return *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(sk), sparseOffset)) != nil
}

// denseRegs returns sk's registers when the accessor is valid and sk is
// dense, else nil.
func denseRegs(sk *hyperloglog.Sketch) []uint8 {
	if !regsOK || sk == nil || rawSparse(sk) {
		return nil
	}
	return rawRegs(sk)
}
