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

// errChunk means a stored chunk is not what EncodeChunk makes of its count of events.
var errChunk = errors.New("corrupt event chunk")

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
	rest := blob
	for i := range count {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return list, true, fmt.Errorf("%w ending at offset %d", errChunk, last)
		}
		p := rest[k : k+int(n) : k+int(n)]
		rest = rest[k+int(n):]
		if off := first + int64(i); off >= from {
			var done bool
			if list, done, _ = addEvent(list, used, store.Event{Offset: off, Payload: p, AcceptedAt: accepted}, limit, budget); done {
				return list, true, nil
			}
		}
	}
	if len(rest) != 0 {
		return list, true, fmt.Errorf("%w ending at offset %d", errChunk, last)
	}
	return list, false, nil
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
