package sqlite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
)

func results(sinksValues ...string) []store.NewSinkResult {
	var list []store.NewSinkResult
	for i := 0; i < len(sinksValues); i += 2 {
		list = append(list, store.NewSinkResult{Sink: sinksValues[i], Value: json.RawMessage(sinksValues[i+1])})
	}
	return list
}

// A segment's chunks, worked out by hand: one per sink in the order of their first results;
// consecutive IDs keep the values alone, others each value after its ID less first_id.
func TestEncodeSegment(t *testing.T) {
	// IDs 10 to 14: a, b, a, a, b.
	got := encodeSegment(results("a", "1", "b", "22", "a", "3", "a", "4", "b", "5"), 10)
	want := []resultChunk{
		// IDs 10, 12, 13: offsets 0, 2, 3. Payloads 00 '1', 02 '3', 03 '4', each after its
		// length 2.
		{sink: "a", first: 10, last: 13, count: 3, blob: []byte{2, 0, '1', 2, 2, '3', 2, 3, '4'}},
		// IDs 11, 14: offsets 0, 3.
		{sink: "b", first: 11, last: 14, count: 2, blob: []byte{3, 0, '2', '2', 2, 3, '5'}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("chunks\n %v\nwant\n %v", got, want)
	}
	// One sink: consecutive IDs, the values alone; one result: its value as it is.
	got = encodeSegment(results("a", "1", "a", "22"), 1)
	want = []resultChunk{{sink: "a", first: 1, last: 2, count: 2, blob: []byte{1, '1', 2, '2', '2'}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("one sink: %v, want %v", got, want)
	}
	got = encodeSegment(results("b", "7", "a", "1", "a", "2"), 5)
	want = []resultChunk{
		{sink: "b", first: 5, last: 5, count: 1, blob: []byte("7")},
		{sink: "a", first: 6, last: 7, count: 2, blob: []byte{1, '1', 1, '2'}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("consecutive runs: %v, want %v", got, want)
	}
}

// Segments end at segmentResults results or before the value that takes them past
// segmentBytes; a larger value is a segment alone.
func TestSegmentEnd(t *testing.T) {
	defer func(r, b int) { segmentResults, segmentBytes = r, b }(segmentResults, segmentBytes)
	segmentResults, segmentBytes = 3, 10
	list := results("a", "1", "a", "2", "a", "3", "a", "4", "a", "123456", "a", "12345", "a", "123456789012", "a", "5")
	var ends []int
	for start := 0; start < len(list); start = ends[len(ends)-1] {
		ends = append(ends, segmentEnd(list, start))
	}
	// [1 2 3] (3 results), [4 123456] (7 bytes; + 5 is over 10), [12345], [123456789012]
	// (12 bytes, alone), [5].
	if fmt.Sprint(ends) != "[3 5 6 7 8]" {
		t.Errorf("segment ends %v, want [3 5 6 7 8]", ends)
	}
}

// readAll reads a chunk's results with newResultReader.
func readAll(first, last int64, count int, blob []byte) (ids []int64, values [][]byte, err error) {
	r, err := newResultReader(first, last, count, blob)
	if err != nil {
		return nil, nil, err
	}
	for {
		id, v, ok, err := r.next()
		if err != nil || !ok {
			return ids, values, err
		}
		ids, values = append(ids, id), append(values, v)
	}
}

// A chunk reads back as encoded; a chunk that is not what its row says is an error.
func TestResultReader(t *testing.T) {
	segment := results("a", "1", "b", "22", "a", "3", "a", "4", "b", "5")
	for _, c := range encodeSegment(segment, 10) {
		ids, values, err := readAll(c.first, c.last, c.count, c.blob)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if r := segment[id-10]; r.Sink != c.sink || !bytes.Equal(values[i], r.Value) {
				t.Errorf("sink %s: result %d is %q, want %s %q", c.sink, id, values[i], r.Sink, r.Value)
			}
		}
		if len(ids) != c.count {
			t.Errorf("sink %s: %d results, want %d", c.sink, len(ids), c.count)
		}
	}
	for _, c := range []struct {
		what        string
		first, last int64
		count       int
		blob        []byte
	}{
		{"no results", 1, 1, 0, []byte("1")},
		{"more results than IDs", 1, 2, 3, []byte{1, '1', 1, '2', 1, '3'}},
		{"last before first", 2, 1, 1, []byte("1")},
		{"a length past the end", 1, 2, 2, []byte{1, '1', 5, '2'}},
		{"bytes after the last result", 1, 2, 2, []byte{1, '1', 1, '2', 0}},
		{"sparse: the first ID is not first", 10, 13, 2, []byte{2, 1, '1', 2, 3, '4'}},
		{"sparse: IDs not increasing", 10, 13, 3, []byte{2, 0, '1', 2, 3, '3', 2, 2, '4'}},
		{"sparse: an ID past last", 10, 13, 2, []byte{2, 0, '1', 2, 4, '4'}},
		{"sparse: the last ID is not last", 10, 13, 2, []byte{2, 0, '1', 2, 2, '4'}},
		{"sparse: no ID", 10, 13, 2, []byte{2, 0, '1', 0}},
	} {
		_, _, err := readAll(c.first, c.last, c.count, c.blob)
		if !errors.Is(err, check.ErrCorrupt) {
			t.Errorf("%s: %v, want an error wrapping ErrCorrupt", c.what, err)
		}
	}
}

// A corrupt chunk is an error, never a panic; a chunk that reads gives IDs from first to last,
// increasing, count of them; encoding its results again reads back the same.
func FuzzResultReader(f *testing.F) {
	for _, c := range encodeSegment(results("a", "1", "b", "22", "a", "3", "a", "4", "b", "5"), 10) {
		f.Add(c.first, c.last, c.count, c.blob)
	}
	f.Add(int64(1), int64(1), 1, []byte("1"))
	f.Add(int64(1), int64(3), 2, []byte{1, 'x', 0x80})
	f.Fuzz(func(t *testing.T, first, last int64, count int, blob []byte) {
		ids, values, err := readAll(first, last, count, blob)
		if err != nil {
			if !errors.Is(err, check.ErrCorrupt) {
				t.Fatalf("error not wrapping ErrCorrupt: %v", err)
			}
			return
		}
		if len(ids) != count || ids[0] != first || ids[len(ids)-1] != last {
			t.Fatalf("IDs %v of a chunk of %d from %d to %d", ids, count, first, last)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("IDs not increasing: %v", ids)
			}
		}
		if last-first >= 1<<16 {
			return // too wide a segment to build again
		}
		segment := make([]store.NewSinkResult, last-first+1)
		indices := make([]int, len(ids))
		for i, id := range ids {
			indices[i] = int(id - first)
			segment[indices[i]] = store.NewSinkResult{Sink: "s", Value: values[i]}
		}
		c := encodeChunk(segment, indices, first)
		ids2, values2, err := readAll(c.first, c.last, c.count, c.blob)
		if err != nil || fmt.Sprint(ids2) != fmt.Sprint(ids) || fmt.Sprintf("%q", values2) != fmt.Sprintf("%q", values) {
			t.Fatalf("encoded again: %v %q %v, want %v %q", ids2, values2, err, ids, values)
		}
	})
}

// A page that holds results reads no large result (a chunk of one result whose BLOB the
// query left out) that would take it past MaxResultReadBytes; it reads one that fits, and one
// that comes first whatever its size.
func TestPageReadsNoLargeResultPastTheBudget(t *testing.T) {
	var fetched []int64
	fetch := func(rowid int64) ([]byte, error) {
		fetched = append(fetched, rowid)
		return []byte(`"x"`), nil // 3 bytes stand for the large value
	}
	large := func(rowid int64, size int64) []chunkCursor {
		return []chunkCursor{{rowid: rowid, segment: rowid, sink: "a", first: rowid, last: rowid, count: 1, size: size}}
	}
	// 3 MiB used: 1 MiB more fits (4 MiB), 1 MiB + 1 byte does not.
	p := resultPage{after: 0, limit: 10, fetch: fetch, used: 3 << 20, list: make([]store.SinkResult, 1)}
	if err := p.add(large(7, 1<<20+1)); err != nil || !p.done || len(fetched) != 0 {
		t.Errorf("past the budget: done %v, fetched %v, %v; want done, none fetched", p.done, fetched, err)
	}
	p = resultPage{after: 0, limit: 10, fetch: fetch, used: 3 << 20, list: make([]store.SinkResult, 1)}
	if err := p.add(large(8, 1<<20)); err != nil || p.done || len(fetched) != 1 || len(p.list) != 2 {
		t.Errorf("within the budget: done %v, fetched %v, %d results, %v; want 8 fetched, 2 results", p.done, fetched, len(p.list), err)
	}
	p = resultPage{after: 0, limit: 10, fetch: fetch}
	if err := p.add(large(9, 10<<20)); err != nil || len(fetched) != 2 || len(p.list) != 1 || p.list[0].ID != 9 {
		t.Errorf("first of a page: fetched %v, %v, %v; want 9 fetched and returned", fetched, p.list, err)
	}
}
