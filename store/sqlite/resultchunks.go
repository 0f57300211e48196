package sqlite

import (
	"encoding/binary"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
)

// The results of one append (AppendSinkResults, CommitCheckpoint) are stored in few rows of
// result_chunks (migration 00012) instead of one row each. The append's results, IDs
// first..first+n-1, are cut into segments: runs of consecutive results of at most
// segmentResults results and segmentBytes bytes of values (a larger result is a segment
// alone). A segment is stored as one chunk per sink that has results in it, each row keyed by
// (scenario, segment_last: the segment's last ID, sink) and holding the sink's results of
// the segment: result_count results with IDs from first_id to last_id, their values in one
// BLOB made by check.EncodeChunk. When the chunk's IDs are consecutive (result_count =
// last_id - first_id + 1: always so when one sink has the whole segment) each payload is a
// value; otherwise each payload is the result's ID less first_id (uvarint) followed by its
// value.
//
// A read of every sink takes the chunks of a segment together and merges them by ID; a read
// of one sink takes only that sink's chunks (index result_chunks_by_sink), so a sink that
// rarely has results costs no more to read than a sink that always has. Either way a page
// reads at most the segments it returns results of, plus the one it stops in: the bytes of a
// page (store.MaxResultReadBytes) plus at most twice segmentBytes, or the one larger result
// a page returns alone.
//
// They are variables for tests only (SetSegmentLimits).
var (
	segmentResults = 4096
	segmentBytes   = 256 << 10
)

// segmentEnd returns the end (exclusive) of the segment of results that starts at start.
func segmentEnd(results []store.NewSinkResult, start int) int {
	end, size := start, 0
	for end < len(results) && end-start < segmentResults {
		size += len(results[end].Value)
		if end > start && size > segmentBytes {
			break
		}
		end++
	}
	return end
}

// resultChunk is one row of result_chunks, without its keys.
type resultChunk struct {
	sink        string
	first, last int64 // IDs of its first and last result
	count       int
	blob        []byte
}

// encodeSegment returns the chunks of a segment whose first result has ID first: one per
// sink, in the order of the sinks' first results.
func encodeSegment(segment []store.NewSinkResult, first int64) []resultChunk {
	var sinks []string
	bySink := map[string][]int{}
	for i, r := range segment {
		if _, ok := bySink[r.Sink]; !ok {
			sinks = append(sinks, r.Sink)
		}
		bySink[r.Sink] = append(bySink[r.Sink], i)
	}
	chunks := make([]resultChunk, 0, len(sinks))
	for _, sink := range sinks {
		chunks = append(chunks, encodeChunk(segment, bySink[sink], first))
	}
	return chunks
}

// encodeChunk makes the chunk of the results at indices (increasing, at least one) of a
// segment whose first result has ID first.
func encodeChunk(segment []store.NewSinkResult, indices []int, first int64) resultChunk {
	lo, hi := indices[0], indices[len(indices)-1]
	c := resultChunk{sink: segment[lo].Sink, first: first + int64(lo), last: first + int64(hi), count: len(indices)}
	payloads := make([][]byte, len(indices))
	if hi-lo+1 == len(indices) { // consecutive IDs: the values alone
		for i, j := range indices {
			payloads[i] = segment[j].Value
		}
		c.blob = nonNil(check.EncodeChunk(payloads))
		return c
	}
	size := 0
	for _, j := range indices {
		size += binary.MaxVarintLen32 + len(segment[j].Value)
	}
	buf := make([]byte, 0, size)
	for i, j := range indices {
		start := len(buf)
		buf = binary.AppendUvarint(buf, uint64(j-lo))
		buf = append(buf, segment[j].Value...)
		payloads[i] = buf[start:len(buf):len(buf)]
	}
	c.blob = check.EncodeChunk(payloads)
	return c
}

// resultReader reads the results of a chunk in ID order. Make it with newResultReader.
type resultReader struct {
	first, last int64
	dense       bool // IDs first to last, each payload a value
	prev        int64
	items       check.ChunkReader
}

// newResultReader reads the chunk of count results from ID first to last, blob as
// encodeChunk made it.
func newResultReader(first, last int64, count int, blob []byte) (resultReader, error) {
	if count < 1 || last < first || uint64(last-first) >= uint64(1)<<62 || int64(count) > last-first+1 {
		return resultReader{}, fmt.Errorf("%w: %d results with IDs %d to %d", check.ErrCorrupt, count, first, last)
	}
	return resultReader{first: first, last: last, dense: int64(count) == last-first+1, prev: first - 1,
		items: check.NewChunkReader(count, blob)}, nil
}

// next returns the next result's ID and value (sharing the chunk's memory), or ok false after
// the last one. The error (wrapping check.ErrCorrupt) means the chunk is not what
// encodeChunk makes of its IDs and count.
func (r *resultReader) next() (id int64, value []byte, ok bool, err error) {
	p, ok, err := r.items.Next()
	switch {
	case err != nil:
		return 0, nil, false, fmt.Errorf("results %d to %d: %w", r.first, r.last, err)
	case !ok:
		if r.prev != r.last {
			return 0, nil, false, fmt.Errorf("results %d to %d: %w: the last has ID %d", r.first, r.last, check.ErrCorrupt, r.prev)
		}
		return 0, nil, false, nil
	case r.dense:
		r.prev++
		return r.prev, p, true, nil
	}
	off, k := binary.Uvarint(p)
	if k <= 0 || off > uint64(r.last-r.first) || r.first+int64(off) <= r.prev || (r.prev < r.first && off != 0) {
		return 0, nil, false, fmt.Errorf("results %d to %d: %w: a result's ID after %d", r.first, r.last, check.ErrCorrupt, r.prev)
	}
	r.prev = r.first + int64(off)
	return r.prev, p[k:], true, nil
}
