//go:build ignore

// asmgen writes kernels_amd64.s. Run it with `go generate ./kernels/`
// (or `go run asmgen.go` inside this directory).
//
// Every kernel has the Go prototype
//
//	func name(dst, src *T, n int)        // n > 0 elements
//	func name(dst, src *T, n int) bool   // addInt64Overflow*
//
// and the same shape: a head that aligns dst to the vector width (inputs
// of at least four vectors only), a main loop over four vectors (128 bytes
// for AVX2, 256 bytes for AVX-512), a loop over one vector, then the tail.
// The AVX2 tail is scalar (a 16-byte step first for bytes); the AVX-512
// head and tail are one masked load/op/store each, whose masked-out lanes
// neither fault nor get written. dst is read and written, src only read,
// and nothing outside the n elements of either is touched.
//
// For the kernels marked l1Only it also writes <name>AVX512Auto, the entry
// point the AVX512 level dispatches to (see genAuto and doc.go).
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"strings"
)

type isa struct {
	name  string // "AVX2" or "AVX512"; suffix of the Go function name
	reg   string // "Y" or "Z"
	vb    int    // vector bytes
	load  string // full-width unaligned load / store of integer data
	bload string // byte-granular masked load/store (AVX-512 bytes)
}

var (
	avx2   = isa{name: "AVX2", reg: "Y", vb: 32, load: "VMOVDQU"}
	avx512 = isa{name: "AVX512", reg: "Z", vb: 64, load: "VMOVDQU64", bload: "VMOVDQU8"}
)

const unroll = 4

// A kernel describes one element-wise operation.
type kernel struct {
	name     string // Go name without the ISA suffix
	elem     int    // element size in bytes: 8 or 1
	overflow bool   // returns bool: any signed overflow
	// l1Only: the AVX-512 kernel beats AVX2 only while dst and src fit in
	// L1D, so an <name>AVX512Auto entry point is generated (see genAuto).
	l1Only bool
	// tmps is the number of vector registers one lane needs (a, b, …).
	tmps int
	// vec emits the vector step: a holds dst, b is src (a memory operand or
	// a register), t are the lane's scratch registers (t[0] == a), k is a
	// spare mask register name (AVX-512 only). It returns the register to
	// store.
	vec func(e *emitter, is isa, b string, t []string, k string) string
	// scalar emits one element of the AVX2 tail at (DI), (SI).
	scalar func(e *emitter)
}

type emitter struct{ buf bytes.Buffer }

func (e *emitter) f(format string, args ...any) {
	fmt.Fprintf(&e.buf, "\t"+format+"\n", args...)
}
func (e *emitter) label(l string) { fmt.Fprintf(&e.buf, "%s:\n", l) }
func (e *emitter) raw(s string)   { e.buf.WriteString(s) }

func isReg(s string) bool { return !strings.Contains(s, "(") }

// loadB returns src in a register, loading it into t if it is in memory.
func loadB(e *emitter, is isa, b, t string) string {
	if isReg(b) {
		return b
	}
	e.f("%s %s, %s", is.load, b, t)
	return t
}

// simple is a kernel whose vector step is one instruction "OP b, a, a".
func simple(op string) func(*emitter, isa, string, []string, string) string {
	return func(e *emitter, is isa, b string, t []string, _ string) string {
		e.f("%s %s, %s, %s", op, b, t[0], t[0])
		return t[0]
	}
}

var kernels = []kernel{
	{
		name: "addInt64", elem: 8, tmps: 1, l1Only: true, vec: simple("VPADDQ"),
		scalar: func(e *emitter) {
			e.f("MOVQ (SI), AX")
			e.f("ADDQ AX, (DI)")
		},
	},
	{
		name: "subInt64", elem: 8, tmps: 1, l1Only: true, vec: simple("VPSUBQ"),
		scalar: func(e *emitter) {
			e.f("MOVQ (SI), AX")
			e.f("SUBQ AX, (DI)")
		},
	},
	{
		// r = a + b overflows iff a and b have the same sign and r's
		// differs: ((a^r) & (b^r)) < 0. The sign bits are OR-ed into an
		// accumulator (register 15) and tested once at the end.
		name: "addInt64Overflow", elem: 8, tmps: 3, overflow: true,
		vec: func(e *emitter, is isa, b string, t []string, _ string) string {
			a, r := t[0], t[2]
			bb := loadB(e, is, b, t[1])
			e.f("VPADDQ %s, %s, %s", bb, a, r)
			if is.reg == "Z" {
				// a = (a^r) & (b^r): A=a, B=b, C=r; the set bits of the
				// truth table are ABC=110 and 001.
				e.f("VPTERNLOGQ $0x42, %s, %s, %s", r, bb, a)
				e.f("VPORQ %s, Z15, Z15", a)
			} else {
				e.f("VPXOR %s, %s, %s", r, a, a)
				e.f("VPXOR %s, %s, %s", r, bb, bb)
				e.f("VPAND %s, %s, %s", bb, a, a)
				e.f("VPOR %s, Y15, Y15", a)
			}
			return r
		},
		scalar: func(e *emitter) {
			e.f("MOVQ (DI), R9")
			e.f("MOVQ (SI), R10")
			e.f("LEAQ (R9)(R10*1), R11")
			e.f("MOVQ R11, (DI)")
			e.f("XORQ R11, R9")
			e.f("XORQ R11, R10")
			e.f("ANDQ R10, R9")
			e.f("ORQ R9, R8")
		},
	},
	{
		name: "addFloat64", elem: 8, tmps: 1, l1Only: true, vec: simple("VADDPD"),
		scalar: func(e *emitter) {
			e.f("VMOVSD (DI), X0")
			e.f("VADDSD (SI), X0, X0")
			e.f("VMOVSD X0, (DI)")
		},
	},
	{
		name: "subFloat64", elem: 8, tmps: 1, l1Only: true, vec: simple("VSUBPD"),
		scalar: func(e *emitter) {
			e.f("VMOVSD (DI), X0")
			e.f("VSUBSD (SI), X0, X0")
			e.f("VMOVSD X0, (DI)")
		},
	},
	{
		// MINPD returns its second operand when both are zeros (or one is
		// NaN), so min(a,b) | min(b,a) gives -0 for {-0,+0} like Go's min,
		// and the OR keeps a NaN a NaN (exponent all ones, mantissa ≠ 0).
		name: "minFloat64", elem: 8, tmps: 3,
		vec: func(e *emitter, is isa, b string, t []string, _ string) string {
			a, x := t[0], t[2]
			bb := loadB(e, is, b, t[1])
			e.f("VMINPD %s, %s, %s", bb, a, x)
			e.f("VMINPD %s, %s, %s", a, bb, a)
			if is.reg == "Z" {
				e.f("VPORQ %s, %s, %s", x, a, a)
			} else {
				e.f("VORPD %s, %s, %s", x, a, a)
			}
			return a
		},
		scalar: func(e *emitter) {
			e.f("VMOVSD (DI), X0")
			e.f("VMOVSD (SI), X1")
			e.f("VMINSD X1, X0, X2")
			e.f("VMINSD X0, X1, X1")
			e.f("VORPD X1, X2, X0")
			e.f("VMOVSD X0, (DI)")
		},
	},
	{
		// max(a,b) & max(b,a) gives +0 for {-0,+0} like Go's max; lanes
		// where either input is NaN are then set to all ones (a NaN).
		name: "maxFloat64", elem: 8, tmps: 4,
		vec: func(e *emitter, is isa, b string, t []string, k string) string {
			a, x, u := t[0], t[2], t[3]
			bb := loadB(e, is, b, t[1])
			if is.reg == "Z" {
				e.f("VCMPPD $3, %s, %s, %s", bb, a, k) // UNORD_Q
			} else {
				e.f("VCMPPD $3, %s, %s, %s", bb, a, u) // UNORD_Q
			}
			e.f("VMAXPD %s, %s, %s", bb, a, x)
			e.f("VMAXPD %s, %s, %s", a, bb, a)
			if is.reg == "Z" {
				e.f("VPANDQ %s, %s, %s", x, a, a)
				e.f("VPTERNLOGQ $0xff, %s, %s, %s, %s", a, a, k, a)
			} else {
				e.f("VANDPD %s, %s, %s", x, a, a)
				e.f("VORPD %s, %s, %s", u, a, a)
			}
			return a
		},
		scalar: func(e *emitter) {
			e.f("VMOVSD (DI), X0")
			e.f("VMOVSD (SI), X1")
			e.f("VCMPSD $3, X1, X0, X3")
			e.f("VMAXSD X1, X0, X2")
			e.f("VMAXSD X0, X1, X1")
			e.f("VANDPD X1, X2, X0")
			e.f("VORPD X3, X0, X0")
			e.f("VMOVSD X0, (DI)")
		},
	},
	{
		name: "maxUint8", elem: 1, tmps: 1, l1Only: true, vec: simple("VPMAXUB"),
		scalar: func(e *emitter) {
			e.f("MOVBLZX (SI), AX")
			e.f("CMPB AX, (DI)")
			e.f("JLS tailnext")
			e.f("MOVB AX, (DI)")
			e.label("tailnext")
		},
	},
}

func regs(is isa, lane, n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("%s%d", is.reg, lane*n+i)
	}
	return r
}

func gen(e *emitter, k kernel, is isa) {
	fn := k.name + is.name
	frame := "$0-24"
	proto := fmt.Sprintf("func %s(dst, src *%s, n int)", fn, goType(k))
	if k.overflow {
		frame = "$0-25"
		proto += " bool"
	}
	perVec := is.vb / k.elem
	shift := map[int]int{8: 3, 1: 0}[k.elem]
	e.raw(fmt.Sprintf("\n// %s\nTEXT ·%s(SB), NOSPLIT, %s\n", proto, fn, frame))
	e.f("MOVQ dst+0(FP), DI")
	e.f("MOVQ src+8(FP), SI")
	e.f("MOVQ n+16(FP), CX")
	if is.reg == "Y" && k.elem == 1 {
		e.f("XORQ R8, R8")
	}
	if k.overflow {
		e.f("VPXOR Y15, Y15, Y15")
		if is.reg == "Y" {
			e.f("XORQ R8, R8")
		}
	}
	mask := func(lane int) string {
		if is.reg == "Z" {
			return fmt.Sprintf("K%d", lane+2)
		}
		return ""
	}
	r := regs(is, 0, k.tmps)
	// masked emits one AVX-512 load/op/store of the first CX elements
	// (CX < perVec) at (DI), (SI). It clobbers AX.
	masked := func() {
		load := is.load
		if k.elem == 1 {
			e.f("MOVQ $1, AX")
			e.f("SHLQ CX, AX")
			e.f("DECQ AX")
			e.f("KMOVQ AX, K1")
			load = is.bload
		} else {
			e.f("MOVL $1, AX")
			e.f("SHLL CX, AX")
			e.f("DECL AX")
			e.f("KMOVW AX, K1")
		}
		e.f("%s.Z (DI), K1, %s", load, r[0])
		e.f("%s.Z (SI), K1, Z31", load)
		out := k.vec(e, is, "Z31", r, mask(0))
		e.f("%s %s, K1, (DI)", load, out)
	}

	// Short inputs go straight to the one-vector loop and the tail.
	e.f("CMPQ CX, $%d", unroll*perVec)
	e.f("JB   single")

	// Head: bring dst to a vector boundary so that the main loop's loads and
	// stores of dst never split a cache line (src too, when it is misaligned
	// by the same amount, as columns carved the same way are).
	e.f("MOVQ DI, DX")
	if is.reg == "Z" {
		// One masked op on the whole aligned vector that holds dst[0]: its
		// lanes below dst[0] (and the same lanes of src) are masked off,
		// so they are neither loaded (no fault) nor stored. Covering exactly
		// one aligned vector keeps the masked store from overlapping the
		// main loop's first load, which would stall store forwarding.
		e.f("ANDQ $%d, DX", is.vb-1) // DX = misalignment in bytes
		e.f("JZ   loop")
		if k.elem > 1 {
			// Only possible through unsafe: elements not on an element
			// boundary cannot be lanes of an aligned vector; run unaligned.
			e.f("TESTQ $%d, DX", k.elem-1)
			e.f("JNZ  loop")
		}
		e.f("SUBQ DX, DI")
		e.f("SUBQ DX, SI")
		e.f("MOVQ CX, BX")
		e.f("MOVQ DX, CX")
		if k.elem == 1 {
			e.f("MOVQ $-1, AX")
			e.f("SHLQ CX, AX")
			e.f("KMOVQ AX, K1")
		} else {
			e.f("SHRQ $3, CX")
			e.f("MOVL $-1, AX")
			e.f("SHLL CX, AX")
			e.f("KMOVW AX, K1")
		}
		// CX = n - (perVec - skipped lanes)
		e.f("LEAQ -%d(BX)(CX*1), CX", perVec)
		load := is.load
		if k.elem == 1 {
			load = is.bload
		}
		e.f("%s.Z (DI), K1, %s", load, r[0])
		e.f("%s.Z (SI), K1, Z31", load)
		out := k.vec(e, is, "Z31", r, mask(0))
		e.f("%s %s, K1, (DI)", load, out)
		e.f("ADDQ $%d, DI", is.vb)
		e.f("ADDQ $%d, SI", is.vb)
	} else {
		// DX = elements before the boundary; int64 and float64 slices are
		// always 8-byte aligned.
		e.f("NEGQ DX")
		e.f("ANDQ $%d, DX", is.vb-1)
		if shift > 0 {
			e.f("SHRQ $%d, DX", shift)
		}
		e.f("JZ   loop")
		if k.elem == 1 {
			// max is idempotent: compute one unaligned vector into Y15
			// now and restart at the boundary inside it; Y15 is stored at
			// the end (R8 remembers where), when no load can stall on it.
			// The overlap gets the same values twice.
			e.f("MOVQ DI, R8")
			e.f("VMOVDQU (DI), Y15")
			e.f("VPMAXUB (SI), Y15, Y15")
			e.f("ADDQ DX, DI")
			e.f("ADDQ DX, SI")
			e.f("SUBQ DX, CX")
		} else {
			e.f("SUBQ DX, CX")
			e.label("head")
			k.scalar(e)
			e.f("ADDQ $%d, DI", k.elem)
			e.f("ADDQ $%d, SI", k.elem)
			e.f("DECQ DX")
			e.f("JNZ  head")
		}
	}
	e.f("CMPQ CX, $%d", unroll*perVec)
	e.f("JB   single")

	// Main loop: unroll vectors.
	e.label("loop")
	outs := make([]string, unroll)
	for l := 0; l < unroll; l++ {
		e.f("%s %s, %s", is.load, mem(l*is.vb, "DI"), regs(is, l, k.tmps)[0])
	}
	for l := 0; l < unroll; l++ {
		outs[l] = k.vec(e, is, mem(l*is.vb, "SI"), regs(is, l, k.tmps), mask(l))
	}
	for l := 0; l < unroll; l++ {
		e.f("%s %s, %s", is.load, outs[l], mem(l*is.vb, "DI"))
	}
	e.f("ADDQ $%d, DI", unroll*is.vb)
	e.f("ADDQ $%d, SI", unroll*is.vb)
	e.f("SUBQ $%d, CX", unroll*perVec)
	e.f("CMPQ CX, $%d", unroll*perVec)
	e.f("JAE  loop")

	// One vector at a time.
	e.label("single")
	e.f("CMPQ CX, $%d", perVec)
	e.f("JB   tail")
	e.label("singleloop")
	e.f("%s (DI), %s", is.load, r[0])
	out := k.vec(e, is, "(SI)", r, mask(0))
	e.f("%s %s, (DI)", is.load, out)
	e.f("ADDQ $%d, DI", is.vb)
	e.f("ADDQ $%d, SI", is.vb)
	e.f("SUBQ $%d, CX", perVec)
	e.f("CMPQ CX, $%d", perVec)
	e.f("JAE  singleloop")

	// Tail: CX < perVec elements.
	e.label("tail")
	e.f("TESTQ CX, CX")
	e.f("JZ   done")
	if is.reg == "Z" {
		masked()
	} else {
		if k.elem == 1 {
			e.f("CMPQ CX, $16")
			e.f("JB   tailloop")
			e.f("VMOVDQU (DI), X0")
			e.f("VPMAXUB (SI), X0, X0")
			e.f("VMOVDQU X0, (DI)")
			e.f("ADDQ $16, DI")
			e.f("ADDQ $16, SI")
			e.f("SUBQ $16, CX")
			e.f("JZ   done")
		}
		e.label("tailloop")
		k.scalar(e)
		e.f("ADDQ $%d, DI", k.elem)
		e.f("ADDQ $%d, SI", k.elem)
		e.f("DECQ CX")
		e.f("JNZ  tailloop")
	}
	e.label("done")
	if is.reg == "Y" && k.elem == 1 {
		e.f("TESTQ R8, R8")
		e.f("JZ   ret")
		e.f("VMOVDQU Y15, (R8)")
		e.label("ret")
	}
	if k.overflow {
		if is.reg == "Z" {
			e.f("VEXTRACTI64X4 $1, Z15, Y14")
			e.f("VPOR Y14, Y15, Y15")
			e.f("VMOVMSKPD Y15, AX")
		} else {
			e.f("VMOVMSKPD Y15, AX")
			e.f("SHRQ $63, R8")
			e.f("ORQ R8, AX")
		}
		e.f("TESTQ AX, AX")
		e.f("SETNE ret+24(FP)")
	}
	e.f("VZEROUPPER")
	e.f("RET")
}

// genAuto writes the AVX-512-level entry point of a kernel: the AVX-512
// kernel while dst and src together fit in L1D (n <= limit, a variable set
// at init from the cache size), the AVX2 kernel beyond. Both are tail jumps
// with the caller's frame, so the choice costs a compare and a branch.
func genAuto(e *emitter, k kernel, limit string) {
	fn := k.name + "AVX512Auto"
	frame := "$0-24"
	proto := fmt.Sprintf("func %s(dst, src *%s, n int)", fn, goType(k))
	if k.overflow {
		frame = "$0-25"
		proto += " bool"
	}
	e.raw(fmt.Sprintf("\n// %s\nTEXT ·%s(SB), NOSPLIT, %s\n", proto, fn, frame))
	e.f("MOVQ n+16(FP), AX")
	e.f("CMPQ AX, ·%s(SB)", limit)
	e.f("JHI  avx2")
	e.f("JMP  ·%sAVX512(SB)", k.name)
	e.label("avx2")
	e.f("JMP  ·%sAVX2(SB)", k.name)
}

func mem(off int, base string) string {
	if off == 0 {
		return "(" + base + ")"
	}
	return fmt.Sprintf("%d(%s)", off, base)
}

func goType(k kernel) string {
	switch {
	case k.elem == 1:
		return "uint8"
	case strings.Contains(k.name, "Float"):
		return "float64"
	default:
		return "int64"
	}
}

func main() {
	var e emitter
	e.raw("// Code generated by asmgen.go; DO NOT EDIT.\n\n//go:build amd64 && !purego\n\n#include \"textflag.h\"\n")
	for _, is := range []isa{avx2, avx512} {
		for _, k := range kernels {
			gen(&e, k, is)
		}
	}
	for _, k := range kernels {
		if !k.l1Only {
			continue
		}
		limit := "avx512MaxQwords"
		if k.elem == 1 {
			limit = "avx512MaxBytes"
		}
		genAuto(&e, k, limit)
	}
	if err := os.WriteFile("kernels_amd64.s", e.buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
