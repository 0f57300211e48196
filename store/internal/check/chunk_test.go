package check

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A chunk gives back its payloads as appended, from the offset asked, within the limit and
// the byte budget.
func TestChunkEvents(t *testing.T) {
	payloads := [][]byte{[]byte(`{"a":1}`), {}, {0, 1, 255}, bytes.Repeat([]byte("x"), 300)}
	blob := EncodeChunk(payloads)
	at := time.Unix(1, 0)
	// The chunk holds offsets 10..13.
	cases := []struct {
		from   int64
		limit  int
		budget int64
		want   []int64
		done   bool
	}{
		{from: 0, limit: 100, budget: 1 << 20, want: []int64{10, 11, 12, 13}},
		{from: 12, limit: 100, budget: 1 << 20, want: []int64{12, 13}},
		{from: 14, limit: 100, budget: 1 << 20},
		{from: 10, limit: 2, budget: 1 << 20, want: []int64{10, 11}, done: true},
		// 7 + 0 + 3 bytes fit in 10; the 300 bytes of offset 13 do not.
		{from: 10, limit: 100, budget: 10, want: []int64{10, 11, 12}, done: true},
		// The first event is returned whatever its size.
		{from: 13, limit: 100, budget: 10, want: []int64{13}},
	}
	for _, c := range cases {
		var used int64
		got, done, err := ChunkEvents(nil, &used, 13, len(payloads), blob, at, c.from, c.limit, c.budget)
		if err != nil {
			t.Fatal(err)
		}
		var offsets []int64
		for _, e := range got {
			offsets = append(offsets, e.Offset)
			if !bytes.Equal(e.Payload, payloads[e.Offset-10]) || !e.AcceptedAt.Equal(at) {
				t.Errorf("from %d: event %d is %q at %v", c.from, e.Offset, e.Payload, e.AcceptedAt)
			}
		}
		if fmt.Sprint(offsets) != fmt.Sprint(c.want) || done != c.done {
			t.Errorf("from %d limit %d budget %d: %v done %v, want %v done %v", c.from, c.limit, c.budget, offsets, done, c.want, c.done)
		}
	}
	// One event is kept as its payload, byte for byte.
	if one := EncodeChunk([][]byte{[]byte("abc")}); string(one) != "abc" {
		t.Errorf("a chunk of one event: %q", one)
	}
	got, _, err := ChunkEvents(nil, new(int64), 5, 1, []byte("abc"), at, 0, 10, 10)
	if err != nil || len(got) != 1 || got[0].Offset != 5 || string(got[0].Payload) != "abc" {
		t.Errorf("read a chunk of one event: %+v, %v", got, err)
	}
	// A chunk cut short is an error, not a panic or a short read.
	if _, _, err := ChunkEvents(nil, new(int64), 13, 4, blob[:len(blob)-1], at, 0, 100, 1<<20); err == nil {
		t.Error("a cut chunk read without an error")
	}
	if _, _, err := ChunkEvents(nil, new(int64), 13, 3, blob, at, 0, 100, 1<<20); err == nil {
		t.Error("a chunk with more events than its count read without an error")
	}
}

// A corrupt chunk is an error wrapping ErrCorrupt, never a panic; a chunk that reads gives
// count payloads, and EncodeChunk of them reads back the same payloads.
func FuzzChunkReader(f *testing.F) {
	f.Add(3, EncodeChunk([][]byte{[]byte("ab"), {}, []byte("c")}))
	f.Add(1, []byte("abc"))
	f.Add(2, []byte{0x80, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, count int, blob []byte) {
		read := func(count int, blob []byte) ([][]byte, error) {
			var list [][]byte
			r := NewChunkReader(count, blob)
			for {
				p, ok, err := r.Next()
				if err != nil || !ok {
					return list, err
				}
				list = append(list, p)
			}
		}
		payloads, err := read(count, blob)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not wrapping ErrCorrupt: %v", err)
			}
			return
		}
		if len(payloads) != count {
			t.Fatalf("%d payloads of a chunk of %d", len(payloads), count)
		}
		again, err := read(count, EncodeChunk(payloads))
		if err != nil || fmt.Sprintf("%q", again) != fmt.Sprintf("%q", payloads) {
			t.Fatalf("encoded again: %q %v, want %q", again, err, payloads)
		}
	})
}
