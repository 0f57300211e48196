package check

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// EncodeChunk is how the stores keep one appended batch of events in one row: a single
// event as its payload, byte for byte; several as each payload's length (uvarint) and
// bytes, in order.
func EncodeChunk(payloads [][]byte) []byte {
	if len(payloads) == 1 {
		if payloads[0] == nil {
			return []byte{}
		}
		return payloads[0]
	}
	size := 0
	for _, p := range payloads {
		size += binary.MaxVarintLen32 + len(p)
	}
	b := make([]byte, 0, size)
	for _, p := range payloads {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// ErrCorrupt means a stored chunk is not what EncodeChunk makes of its count of payloads.
var ErrCorrupt = errors.New("corrupt chunk")

// ChunkEvents appends to list the events of a chunk (count events, the last at offset last,
// blob from EncodeChunk) with Offset ≥ from, and stops before the event that would take the
// payload bytes *used past budget unless list is empty, or once list holds limit events.
// It reports whether the read is complete (a limit or the budget stopped it). The payloads
// share blob's memory.
func ChunkEvents(list []store.Event, used *int64, last int64, count int, blob []byte, accepted time.Time,
	from int64, limit int, budget int64) ([]store.Event, bool, error) {
	first := last - int64(count) + 1
	if count == 1 {
		if first < from {
			return list, false, nil
		}
		return addEvent(list, used, store.Event{Offset: first, Payload: blob, AcceptedAt: accepted}, limit, budget)
	}
	r := NewChunkReader(count, blob)
	for off := first; ; off++ {
		p, ok, err := r.Next()
		if err != nil {
			return list, true, fmt.Errorf("%w ending at offset %d", err, last)
		}
		if !ok {
			return list, false, nil
		}
		if off >= from {
			var done bool
			if list, done, _ = addEvent(list, used, store.Event{Offset: off, Payload: p, AcceptedAt: accepted}, limit, budget); done {
				return list, true, nil
			}
		}
	}
}

// ChunkReader reads the payloads of a chunk that EncodeChunk made, in order, without
// copying them. Make it with NewChunkReader.
type ChunkReader struct {
	left int  // payloads not read yet; -1 for a count below 1
	one  bool // a chunk of one payload: blob is the payload
	rest []byte
}

// NewChunkReader reads the count payloads of blob.
func NewChunkReader(count int, blob []byte) ChunkReader {
	return ChunkReader{left: max(count, -1), one: count == 1, rest: blob}
}

// Next returns the next payload (sharing blob's memory), or ok false after the last one. The
// error (wrapping ErrCorrupt) means blob is not count payloads: a count below 1, a length
// past the end of blob, or bytes after the last payload.
func (r *ChunkReader) Next() (p []byte, ok bool, err error) {
	switch {
	case r.left < 0:
		return nil, false, fmt.Errorf("%w: a count below 1", ErrCorrupt)
	case r.left == 0:
		if len(r.rest) != 0 {
			return nil, false, fmt.Errorf("%w: %d bytes after the last payload", ErrCorrupt, len(r.rest))
		}
		return nil, false, nil
	case r.one:
		r.left, p, r.rest = 0, r.rest, nil
		return p, true, nil
	}
	n, k := binary.Uvarint(r.rest)
	if k <= 0 || uint64(len(r.rest)-k) < n {
		return nil, false, fmt.Errorf("%w: a length past the end", ErrCorrupt)
	}
	p = r.rest[k : k+int(n) : k+int(n)]
	r.rest = r.rest[k+int(n):]
	r.left--
	return p, true, nil
}

func addEvent(list []store.Event, used *int64, e store.Event, limit int, budget int64) ([]store.Event, bool, error) {
	size := int64(len(e.Payload))
	if len(list) > 0 && *used+size > budget {
		return list, true, nil
	}
	*used += size
	list = append(list, e)
	return list, len(list) >= limit, nil
}
