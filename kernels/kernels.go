package kernels

import (
	"fmt"
	"strconv"
	"sync/atomic"
)

// Level is the instruction set in use.
type Level int

// The levels, in increasing order of capability.
const (
	Generic Level = iota // portable Go
	AVX2                 // 256-bit AVX2 kernels (amd64)
	AVX512               // 512-bit AVX-512 F+BW kernels where they pay, AVX2 elsewhere (amd64)
)

const numLevels = 3

// String returns "generic", "avx2" or "avx512".
func (l Level) String() string {
	switch l {
	case Generic:
		return "generic"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// kernelSet holds one implementation of every kernel. Each takes n > 0 and
// pointers to the first element of dst and src, both at least n long.
type kernelSet struct {
	level            Level
	addInt64         func(dst, src *int64, n int)
	subInt64         func(dst, src *int64, n int)
	addInt64Overflow func(dst, src *int64, n int) bool
	addFloat64       func(dst, src *float64, n int)
	subFloat64       func(dst, src *float64, n int)
	minFloat64       func(dst, src *float64, n int)
	maxFloat64       func(dst, src *float64, n int)
	maxUint8         func(dst, src *uint8, n int)
}

var (
	// supported lists the levels this CPU runs, Generic first; set once at init.
	supported []Level
	// dispatch[l] is what the exported functions call at level l: for each
	// kernel, the fastest implementation the level allows (see doc.go).
	dispatch [numLevels]*kernelSet
	// active is dispatch[Current()]. It is an atomic pointer so that SetLevel
	// in a test or benchmark does not race with kernels running elsewhere.
	active atomic.Pointer[kernelSet]
)

func init() {
	supported = detectLevels()
	for _, l := range supported {
		ks := dispatchSet(l)
		ks.level = l
		dispatch[l] = &ks
	}
	active.Store(dispatch[supported[len(supported)-1]])
}

// Current returns the level chosen at init, or the one forced by SetLevel.
func Current() Level { return active.Load().level }

// Supported returns the levels this CPU can run, Generic first and the best
// last. The caller owns the returned slice.
func Supported() []Level { return append([]Level(nil), supported...) }

// SetLevel forces level l for all kernels (for tests and benchmarks) and
// returns a function restoring the previous level. It returns an error, and
// a restore function that does nothing, if the CPU does not support l.
// Calls already running finish on the level they started with.
func SetLevel(l Level) (restore func(), err error) {
	if l < 0 || l >= numLevels || dispatch[l] == nil {
		return func() {}, fmt.Errorf("kernels: level %v is not supported on this CPU (supported: %v)", l, supported)
	}
	prev := active.Swap(dispatch[l])
	return func() { active.Store(prev) }, nil
}

// AddInt64 sets dst[i] += src[i] for i < min(len(dst), len(src)), with
// two's-complement wrapping. The rest of dst is unchanged.
func AddInt64(dst, src []int64) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().addInt64(&dst[0], &src[0], n)
	}
}

// SubInt64 sets dst[i] -= src[i] for i < min(len(dst), len(src)), with
// two's-complement wrapping. The rest of dst is unchanged.
func SubInt64(dst, src []int64) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().subInt64(&dst[0], &src[0], n)
	}
}

// AddInt64Overflow does what AddInt64 does and reports whether any lane
// overflowed as a signed 64-bit addition (the wrapped sums are still stored).
func AddInt64Overflow(dst, src []int64) bool {
	if n := min(len(dst), len(src)); n > 0 {
		return active.Load().addInt64Overflow(&dst[0], &src[0], n)
	}
	return false
}

// AddFloat64 sets dst[i] += src[i] for i < min(len(dst), len(src)). Each
// lane is one IEEE 754 double addition, bit-identical to scalar Go.
func AddFloat64(dst, src []float64) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().addFloat64(&dst[0], &src[0], n)
	}
}

// SubFloat64 sets dst[i] -= src[i] for i < min(len(dst), len(src)). Each
// lane is one IEEE 754 double subtraction, bit-identical to scalar Go.
func SubFloat64(dst, src []float64) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().subFloat64(&dst[0], &src[0], n)
	}
}

// MinFloat64 sets dst[i] = min(dst[i], src[i]) for i < min(len(dst), len(src)).
// For non-NaN inputs the result is bit-identical to Go's min builtin,
// including min(-0, +0) == -0. Inputs are expected to hold no NaN; if a lane
// does, its result is a NaN, but its payload may differ from scalar Go's.
func MinFloat64(dst, src []float64) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().minFloat64(&dst[0], &src[0], n)
	}
}

// MaxFloat64 sets dst[i] = max(dst[i], src[i]) for i < min(len(dst), len(src)).
// For non-NaN inputs the result is bit-identical to Go's max builtin,
// including max(-0, +0) == +0. Inputs are expected to hold no NaN; if a lane
// does, its result is a NaN, but its payload may differ from scalar Go's.
func MaxFloat64(dst, src []float64) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().maxFloat64(&dst[0], &src[0], n)
	}
}

// MaxUint8 sets dst[i] = max(dst[i], src[i]) for i < min(len(dst), len(src)):
// the register-wise merge of two HyperLogLog sketches of the same precision.
func MaxUint8(dst, src []uint8) {
	if n := min(len(dst), len(src)); n > 0 {
		active.Load().maxUint8(&dst[0], &src[0], n)
	}
}
