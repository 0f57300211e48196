package slices

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorruptSnapshot is returned (wrapped) when snapshot bytes do not decode.
var ErrCorruptSnapshot = errors.New("corrupt snapshot")

// Reader reads the varint-framed fields of a snapshot. The first error
// sticks: later reads return zero values, and Err reports it, so a decoder
// reads on and checks once.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads from b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first error, wrapping ErrCorruptSnapshot.
func (r *Reader) Err() error { return r.err }

// Rest returns the bytes not read yet.
func (r *Reader) Rest() []byte { return r.b }

// Fail records an error (the first one wins).
func (r *Reader) Fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrCorruptSnapshot}, args...)...)
	}
	r.b = nil
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail("bad unsigned varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Len reads a length that must be at most max (a bound on what the rest of
// the input can describe, so that corrupt input never allocates much).
func (r *Reader) Len(max int) int {
	v := r.Uvarint()
	if max < 0 || v > uint64(max) {
		r.Fail("length %d above %d", v, max)
		return 0
	}
	return int(v)
}

// Bytes reads a length-prefixed byte string (a copy).
func (r *Reader) Bytes() []byte {
	v := r.View()
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

// View reads a length-prefixed byte string as Bytes does, but returns the input's own bytes
// rather than a copy: for a snapshot section read once by a decoder that keeps none of it
// (a checkpoint's engine snapshot is as large as the state). Nil after an error.
func (r *Reader) View() []byte {
	v := r.Uvarint()
	if r.err != nil {
		return nil
	}
	if v > uint64(len(r.b)) {
		r.Fail("byte string of %d overruns the input", v)
		return nil
	}
	n := int(v)
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// Bool reads a boolean written as a varint 0 or 1.
func (r *Reader) Bool() bool {
	switch r.Uvarint() {
	case 0:
		return false
	case 1:
		return true
	}
	r.Fail("bad boolean")
	return false
}

// Skip advances past n bytes already consumed by another decoder.
func (r *Reader) Skip(n int) {
	if r.err != nil {
		return
	}
	if n < 0 || n > len(r.b) {
		r.Fail("skip %d of %d", n, len(r.b))
		return
	}
	r.b = r.b[n:]
}

// AppendBytes appends a length-prefixed byte string.
func AppendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendSized appends the byte string that f appends to b, length-prefixed as AppendBytes
// writes it, without a buffer of its own: f appends after room for the longest prefix
// (binary.MaxVarintLen64 bytes), and its bytes then move back to follow the prefix. A
// section as large as a deployment's state (a window's snapshot inside the engine's, the
// engine's inside a checkpoint's) is then written once, where building it apart and
// copying it would allocate it again, and several times over while its buffer grows.
func AppendSized(b []byte, f func([]byte) []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, binary.MaxVarintLen64)...)
	b = f(b)
	n := len(b) - start - binary.MaxVarintLen64
	k := len(binary.AppendUvarint(b[start:start], uint64(n)))
	copy(b[start+k:], b[start+binary.MaxVarintLen64:])
	return b[:start+k+n]
}

// AppendBool appends a boolean as a varint.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendSnapshot appends the table: every slot's kind and key, and the free
// list in order, so that a restored table hands out the same slots.
func (t *KeyTable) AppendSnapshot(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.keys)))
	for s := range t.keys {
		b = append(b, t.kinds[s])
		switch t.kinds[s] {
		case keyInt:
			b = binary.AppendVarint(b, t.intKeys[s])
		case keyBytes, keyString:
			b = AppendBytes(b, []byte(t.keys[s]))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(t.free)))
	for _, s := range t.free {
		b = binary.AppendUvarint(b, uint64(s))
	}
	return b
}

// RestoreKeyTable reads a table written by AppendSnapshot.
func RestoreKeyTable(r *Reader) *KeyTable {
	t := NewKeyTable()
	n := r.Len(len(r.b))
	for s := 0; s < n && r.Err() == nil; s++ {
		if len(r.b) == 0 {
			r.Fail("key table truncated")
			break
		}
		kind := r.b[0]
		r.b = r.b[1:]
		var key string
		var ik int64
		switch kind {
		case keyFree:
		case keyInt:
			ik = r.Varint()
			if _, dup := t.ints[ik]; dup {
				r.Fail("key %d twice", ik)
			}
			t.ints[ik] = int32(s)
		case keyBytes:
			key = string(r.Bytes())
			if _, dup := t.slots[key]; dup {
				r.Fail("key twice")
			}
			t.slots[key] = int32(s)
			t.textBytes += len(key) + 32
		case keyString:
			key = string(r.Bytes())
			if _, dup := t.strs[key]; dup {
				r.Fail("key twice")
			}
			t.strs[key] = int32(s)
			t.textBytes += len(key) + 32
		default:
			r.Fail("key kind %d", kind)
		}
		t.keys = append(t.keys, key)
		t.intKeys = append(t.intKeys, ik)
		t.kinds = append(t.kinds, kind)
	}
	nf := r.Len(n)
	seen := map[int32]bool{}
	for range nf {
		s := int32(r.Len(n - 1))
		if r.Err() != nil {
			break
		}
		if t.kinds[s] != keyFree || seen[s] {
			r.Fail("free slot %d is in use", s)
			break
		}
		seen[s] = true
		t.free = append(t.free, s)
	}
	if r.Err() == nil {
		for s, k := range t.kinds {
			if k == keyFree && !seen[int32(s)] {
				r.Fail("slot %d is neither live nor free", s)
				break
			}
		}
	}
	return t
}
