package check

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
)

// BatchHash is the SHA-256 that the stores keep with a keyed batch of events
// (store.Store.AppendEventBatch) to tell a re-sent batch from another batch under the same
// key: the hash of each payload's length (uvarint) and bytes, in order, so that no two
// different batches (also split differently into events) hash alike but by a SHA-256
// collision.
func BatchHash(payloads [][]byte) []byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range payloads {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write(p)
	}
	return h.Sum(nil)
}

// SameBatch compares a stored keyed batch (count events, SHA-256 stored, nil for a batch kept
// before hashes were) with the batch appended under its key (n events, SHA-256 hash), and
// returns an error wrapping store.ErrBatchKeyReused when they differ.
func SameBatch(count int, stored []byte, n int, hash []byte) error {
	if count != n || stored != nil && !bytes.Equal(stored, hash) {
		return &store.BatchKeyReusedError{Stored: count, Sent: n}
	}
	return nil
}

// plural is n and what, with an s unless n is 1 ("1 event", "10 events").
func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
