package slices

import (
	"bytes"
	"testing"
)

// AppendSized writes what AppendBytes writes, in place: lengths on each side of a varint's
// byte boundaries (127/128, 16383/16384, 2^21-1/2^21), after a prefix; and View reads it back
// as the input's own bytes where Bytes copies them.
func TestAppendSizedAndView(t *testing.T) {
	for _, c := range []struct{ n, prefix int }{{0, 1}, {1, 1}, {127, 1}, {128, 2}, {16383, 2}, {16384, 3}, {1<<21 - 1, 3}, {1 << 21, 4}} {
		n := c.n
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		prefix := []byte{0xAA, 0xBB}
		want := AppendBytes(append([]byte(nil), prefix...), data)
		if len(want) != 2+c.prefix+n { // a uvarint holds 7 bits a byte
			t.Fatalf("n=%d: AppendBytes wrote %d bytes, want %d", n, len(want), 2+c.prefix+n)
		}
		buf := make([]byte, len(prefix), len(prefix)+10+n)
		copy(buf, prefix)
		var got []byte
		allocs := testing.AllocsPerRun(1, func() {
			got = AppendSized(buf, func(b []byte) []byte { return append(b, data...) })
		})
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d: AppendSized wrote % x..., want % x...", n, got[:min(len(got), 8)], want[:min(len(want), 8)])
		}
		if allocs != 0 || &got[0] != &buf[0] {
			t.Errorf("n=%d: %v allocations, in place %v; want 0, true", n, allocs, &got[0] == &buf[0])
		}
		// Grown when the room is short: the same bytes.
		if g := AppendSized(prefix[:2:2], func(b []byte) []byte { return append(b, data...) }); !bytes.Equal(g, want) {
			t.Fatalf("n=%d: AppendSized into a full buffer wrote other bytes", n)
		}

		r := NewReader(append(want[2:], 0x01))
		v := r.View()
		if !bytes.Equal(v, data) || r.Err() != nil || len(r.Rest()) != 1 {
			t.Fatalf("n=%d: View read %d bytes (err %v), %d left; want %d, 1 left", n, len(v), r.Err(), len(r.Rest()), n)
		}
		if n > 0 && &v[0] != &want[len(want)-n] {
			t.Errorf("n=%d: View copied", n)
		}
		if cap(v) != n {
			t.Errorf("n=%d: View's capacity %d reaches past its bytes", n, cap(v))
		}
		if c := NewReader(want[2:]).Bytes(); !bytes.Equal(c, data) || (n > 0 && &c[0] == &want[len(want)-n]) {
			t.Errorf("n=%d: Bytes did not copy", n)
		}
	}
	r := NewReader([]byte{5, 1, 2})
	if v := r.View(); v != nil || r.Err() == nil {
		t.Errorf("View of 5 bytes from 2: %v, err %v; want nil and an error", v, r.Err())
	}
}
