//go:build linux

package kernels

import (
	"syscall"
	"testing"
	"unsafe"
)

// guarded maps one read-write page between two inaccessible ones, so any
// access before or after the page faults and kills the test.
func guarded(t *testing.T) []byte {
	ps := syscall.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 3*ps, syscall.PROT_NONE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	page := m[ps : 2*ps]
	if err := syscall.Mprotect(page, syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	return page
}

func view[T any](page []byte, off, n int) []T {
	var z T
	if n == 0 {
		return nil
	}
	_ = page[off+n*int(unsafe.Sizeof(z))-1]
	return unsafe.Slice((*T)(unsafe.Pointer(&page[off])), n)
}

// TestNoAccessOutsideSlices runs every kernel at every level with each
// slice flush against a guard page (at the start or the end of its page) or
// a few elements off it, in every combination, for all lengths a head or
// tail can take. A vector kernel that touched memory outside its slices
// without masking would fault on a guard.
func TestNoAccessOutsideSlices(t *testing.T) {
	pd, ps := guarded(t), guarded(t)
	sz := len(pd)
	offsets := func(n, elem int) []int {
		var o []int
		for _, x := range []int{0, elem, 5 * elem, sz - elem*n, sz - elem*n - elem, sz - elem*n - 3*elem} {
			if x >= 0 && x+elem*n <= sz {
				o = append(o, x)
			}
		}
		return o
	}
	for _, ks := range rawSets(t) {
		for n := 0; n <= 300; n++ {
			for _, od := range offsets(n, 8) {
				for _, os := range offsets(n, 8) {
					di, si := view[int64](pd, od, n), view[int64](ps, os, n)
					call(ks.addInt64, di, si)
					call(ks.subInt64, di, si)
					if n > 0 {
						ks.addInt64Overflow(&di[0], &si[0], n)
					}
					df, sf := view[float64](pd, od, n), view[float64](ps, os, n)
					call(ks.addFloat64, df, sf)
					call(ks.subFloat64, df, sf)
					call(ks.minFloat64, df, sf)
					call(ks.maxFloat64, df, sf)
				}
			}
			for _, od := range offsets(n, 1) {
				for _, os := range offsets(n, 1) {
					call(ks.maxUint8, view[uint8](pd, od, n), view[uint8](ps, os, n))
				}
			}
		}
	}
}
