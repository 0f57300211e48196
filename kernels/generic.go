package kernels

import "unsafe"

// The portable fallbacks. They are the reference the vector kernels are
// tested against, and what Generic and non-amd64 builds run.

var genericKernels = kernelSet{
	level:            Generic,
	addInt64:         addInt64Generic,
	subInt64:         subInt64Generic,
	addInt64Overflow: addInt64OverflowGeneric,
	addFloat64:       addFloat64Generic,
	subFloat64:       subFloat64Generic,
	minFloat64:       minFloat64Generic,
	maxFloat64:       maxFloat64Generic,
	maxUint8:         maxUint8Generic,
}

func addInt64Generic(dst, src *int64, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] += s[i]
	}
}

func subInt64Generic(dst, src *int64, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] -= s[i]
	}
}

func addInt64OverflowGeneric(dst, src *int64, n int) bool {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	var acc int64
	for i := range d {
		a, b := d[i], s[i]
		r := a + b
		d[i] = r
		// Signed overflow iff a and b share a sign that r does not.
		acc |= (a ^ r) & (b ^ r)
	}
	return acc < 0
}

func addFloat64Generic(dst, src *float64, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] += s[i]
	}
}

func subFloat64Generic(dst, src *float64, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] -= s[i]
	}
}

func minFloat64Generic(dst, src *float64, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] = min(d[i], s[i])
	}
}

func maxFloat64Generic(dst, src *float64, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] = max(d[i], s[i])
	}
}

func maxUint8Generic(dst, src *uint8, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	s = s[:len(d)]
	for i := range d {
		d[i] = max(d[i], s[i])
	}
}
