package check

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// TestBatchHash: the hash is SHA-256 over each payload's uvarint length and bytes, worked by
// hand: ["ab", ""] hashes the 4 bytes 0x02 'a' 'b' 0x00, and ["a", "b"] (0x01 'a' 0x01 'b')
// differs from ["ab"] (0x02 'a' 'b').
func TestBatchHash(t *testing.T) {
	want := sha256.Sum256([]byte{2, 'a', 'b', 0})
	if got := BatchHash([][]byte{[]byte("ab"), {}}); !bytes.Equal(got, want[:]) {
		t.Errorf("BatchHash([ab, '']) = %x, want %x", got, want)
	}
	if bytes.Equal(BatchHash([][]byte{[]byte("a"), []byte("b")}), BatchHash([][]byte{[]byte("ab")})) {
		t.Error("[a, b] and [ab] hash alike")
	}
	h := BatchHash([][]byte{[]byte("x")})
	for _, tc := range []struct {
		count  int
		stored []byte
		n      int
		reused bool
	}{
		{1, h, 1, false},
		{1, nil, 1, false}, // a batch stored before hashes were kept: by size only
		{2, h, 1, true},
		{1, BatchHash([][]byte{[]byte("y")}), 1, true},
	} {
		err := SameBatch(tc.count, tc.stored, tc.n, h)
		if errors.Is(err, store.ErrBatchKeyReused) != tc.reused || (err != nil) != tc.reused {
			t.Errorf("SameBatch(%d, %x, %d): %v", tc.count, tc.stored, tc.n, err)
		}
	}
}

// A reused key's error counts events in English: "1 event", "10 events" (new-user round 136
// saw "a batch of 1 events").
func TestSameBatchWording(t *testing.T) {
	for _, tc := range []struct {
		count, n int
		want     string
	}{
		{1, 10, "the key names a batch of 1 event, this one has 10"},
		{10, 1, "the key names a batch of 10 events, this one has 1"},
	} {
		if err := SameBatch(tc.count, nil, tc.n, nil); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("SameBatch(%d, %d): %v; want %q", tc.count, tc.n, err, tc.want)
		}
	}
}
