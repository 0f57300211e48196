package storetest

import (
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// testBatchKeyContent: a key names one batch by its content, not only its size. The same
// payloads again are a duplicate; other payloads of the same number, and even of the same
// bytes in all (swapped, or cut between events elsewhere), are refused with
// ErrBatchKeyReused and store nothing.
func testBatchKeyContent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "keys", draft(1, "")))(t)
	log := store.EventLog{Scenario: "keys", Source: "in"}
	bytesOf := func(ps ...string) [][]byte {
		out := make([][]byte, len(ps))
		for i, p := range ps {
			out[i] = []byte(p)
		}
		return out
	}

	first := must(s.AppendEventBatch(ctx, log, "k", bytesOf(`{"a":1}`, `{"b":2}`)))(t)
	if first.FirstOffset != 0 || first.Count != 2 || first.Duplicate {
		t.Fatalf("first batch: %+v", first)
	}
	again := must(s.AppendEventBatch(ctx, log, "k", bytesOf(`{"a":1}`, `{"b":2}`)))(t)
	if !again.Duplicate || again.FirstOffset != 0 || again.Count != 2 || !again.AcceptedAt.Equal(first.AcceptedAt) {
		t.Errorf("the same batch again: %+v, want a duplicate of %+v", again, first)
	}

	for _, other := range []struct {
		what     string
		payloads [][]byte
	}{
		// 2 events of 7 bytes each, as the first: only the digits differ.
		{"same sizes, other values", bytesOf(`{"a":2}`, `{"b":1}`)},
		{"the same events swapped", bytesOf(`{"b":2}`, `{"a":1}`)},
		// The same 14 bytes in all, cut after byte 8 instead of 7.
		{"the same bytes cut elsewhere", bytesOf(`{"a":1}{`, `"b":2}`)},
		{"one event fewer", bytesOf(`{"a":1}`)},
	} {
		_, err := s.AppendEventBatch(ctx, log, "k", other.payloads)
		wantErr(t, other.what, err, store.ErrBatchKeyReused)
	}
	if got := must(s.ReadEvents(ctx, log, 0, 100))(t); len(got) != 2 {
		t.Errorf("refused batches were stored: %d events in the log, want 2", len(got))
	}
	// The key stays the first batch's: re-sent, still a duplicate.
	if b := must(s.AppendEventBatch(ctx, log, "k", bytesOf(`{"a":1}`, `{"b":2}`)))(t); !b.Duplicate || b.FirstOffset != 0 {
		t.Errorf("re-sent after refusals: %+v", b)
	}
}
