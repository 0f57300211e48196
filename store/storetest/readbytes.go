package storetest

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

const mib = 1 << 20

// sized returns a payload of n bytes that names its offset in its first byte, so that a
// payload returned for the wrong event shows.
func sized(offset, n int) []byte {
	b := bytes.Repeat([]byte{'x'}, n)
	b[0] = byte('a' + offset)
	return b
}

// testEventReadBytes: a read of the event log stops at store.MaxEventReadBytes (8 MiB) of
// payloads, and returns at least one event however large.
func testEventReadBytes(t *testing.T, open func(t *testing.T) store.Store) {
	if store.MaxEventReadBytes != 8*mib {
		t.Fatalf("MaxEventReadBytes is %d; the cases below are worked out for 8 MiB", store.MaxEventReadBytes)
	}
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "big events", draft(1, "")))(t)
	log := store.EventLog{Scenario: "big events", Source: "in"}
	sizes := []int{3 * mib, 3 * mib, 2 * mib, 1, 9 * mib, 10}
	var batch [][]byte
	for i, n := range sizes {
		batch = append(batch, sized(i, n))
	}
	must(s.AppendEvents(ctx, log, batch[:3]))(t) // in three batches: the budget is per read, not per batch
	must(s.AppendEvents(ctx, log, batch[3:5]))(t)
	must(s.AppendEvents(ctx, log, batch[5:]))(t)

	read := func(what string, from int64, limit int, want ...int64) {
		t.Helper()
		got := must(s.ReadEvents(ctx, log, from, limit))(t)
		var offsets []int64
		for _, e := range got {
			offsets = append(offsets, e.Offset)
			if !bytes.Equal(e.Payload, batch[e.Offset]) {
				t.Errorf("%s: event %d: payload of %d bytes starting %q, want %d bytes starting %q",
					what, e.Offset, len(e.Payload), e.Payload[:min(len(e.Payload), 1)], len(batch[e.Offset]), batch[e.Offset][:1])
			}
		}
		if !slices.Equal(offsets, want) {
			t.Errorf("%s: offsets %v, want %v", what, offsets, want)
		}
	}
	// From 0: 3 + 3 + 2 MiB = 8 MiB, exactly the budget; one more byte (event 3) is over.
	read("from 0", 0, store.MaxReadLimit, 0, 1, 2)
	// From 3: 1 B, then 1 B + 9 MiB is over.
	read("from 3", 3, store.MaxReadLimit, 3)
	// From 4: 9 MiB alone is over the budget but a read returns at least one event; + 10 B is over.
	read("from 4", 4, store.MaxReadLimit, 4)
	read("from 5", 5, store.MaxReadLimit, 5)
	read("past the end", 6, store.MaxReadLimit)
	// The row limit still applies: 3 + 3 MiB fit, the limit stops first.
	read("from 0, limit 2", 0, 2, 0, 1)
	read("from 1, limit 1", 1, 1, 1)

	// After truncating below 2: from 0 starts at 2; 2 MiB + 1 B fit, + 9 MiB does not.
	must(s.TruncateEvents(ctx, log, 2))(t)
	read("from 0 after truncating", 0, store.MaxReadLimit, 2, 3)

	// Small events are read up to the row limit as before: 10 B + 100 events of 1 KiB.
	small := make([][]byte, 100)
	for i := range small {
		small[i] = sized(6+i, 1024)
	}
	batch = append(batch, small...)
	must(s.AppendEvents(ctx, log, small))(t)
	want := []int64{5}
	for i := range small {
		want = append(want, int64(6+i))
	}
	read("small events from 5", 5, store.MaxReadLimit, want...)
}

// jsonString returns a JSON string value of exactly n bytes (n ≥ 2), quotes included.
func jsonString(n int) json.RawMessage {
	b := bytes.Repeat([]byte{'x'}, n)
	b[0], b[n-1] = '"', '"'
	return b
}

// testResultReadBytes: a page of sink results stops at store.MaxResultReadBytes (4 MiB) of
// values, counting only the results of the sink asked for, and holds at least one result.
func testResultReadBytes(t *testing.T, open func(t *testing.T) store.Store) {
	if store.MaxResultReadBytes != 4*mib {
		t.Fatalf("MaxResultReadBytes is %d; the cases below are worked out for 4 MiB", store.MaxResultReadBytes)
	}
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "big results", draft(1, "")))(t)
	results := []store.NewSinkResult{ // IDs 1 to 6
		{Sink: "a", Value: jsonString(1 * mib)},
		{Sink: "a", Value: jsonString(2 * mib)},
		{Sink: "b", Value: jsonString(3 * mib)},
		{Sink: "a", Value: jsonString(1 * mib)},
		{Sink: "a", Value: jsonString(5 * mib)},
		{Sink: "a", Value: jsonString(100)},
	}
	must(s.AppendSinkResults(ctx, "big results", results[:3]))(t)
	must(s.AppendSinkResults(ctx, "big results", results[3:]))(t)

	page := func(what, sink string, after int64, limit int, want ...int64) {
		t.Helper()
		got := must(s.ReadSinkResults(ctx, "big results", sink, after, limit))(t)
		var ids []int64
		for _, r := range got {
			ids = append(ids, r.ID)
			if w := results[r.ID-1]; r.Sink != w.Sink || len(r.Value) != len(w.Value) {
				t.Errorf("%s: result %d: sink %q, %d bytes; want %q, %d bytes", what, r.ID, r.Sink, len(r.Value), w.Sink, len(w.Value))
			}
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: IDs %v, want %v", what, ids, want)
		}
	}
	// Every sink: 1 + 2 MiB = 3 MiB; + 3 MiB (result 3) = 6 MiB is over.
	page("all after 0", "", 0, store.MaxReadLimit, 1, 2)
	// 3 + 1 MiB = 4 MiB, exactly the budget; + 5 MiB is over.
	page("all after 2", "", 2, store.MaxReadLimit, 3, 4)
	// 5 MiB alone: over the budget, but a page holds at least one result.
	page("all after 4", "", 4, store.MaxReadLimit, 5)
	page("all after 5", "", 5, store.MaxReadLimit, 6)
	page("all after 6", "", 6, store.MaxReadLimit)
	// Sink a: 1 + 2 + 1 MiB = 4 MiB (sink b's 3 MiB does not count); + 5 MiB is over.
	page("a after 0", "a", 0, store.MaxReadLimit, 1, 2, 4)
	page("a after 4", "a", 4, store.MaxReadLimit, 5)
	page("b after 0", "b", 0, store.MaxReadLimit, 3)
	// The row limit still applies.
	page("all after 0, limit 1", "", 0, 1, 1)
}
