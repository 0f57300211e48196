package check

import (
	"context"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
)

// Append is one append of events to a log (store.Store.AppendEvents and AppendEventBatch),
// as a store's group commit queues it: Key is empty for AppendEvents, Payloads never empty.
type Append struct {
	Ctx      context.Context
	Log      store.EventLog
	Key      string
	Payloads [][]byte
}

// AppendEvents is store.Store.AppendEvents for a store whose do appends a batch.
func AppendEvents(a Append, do func(Append) (store.EventBatch, error)) ([]int64, error) {
	if len(a.Payloads) == 0 {
		return nil, nil
	}
	b, err := do(a)
	if err != nil {
		return nil, fmt.Errorf("appending %d events to %q/%q: %w", len(a.Payloads), a.Log.Scenario, a.Log.Source, err)
	}
	offsets := make([]int64, b.Count)
	for i := range offsets {
		offsets[i] = b.FirstOffset + int64(i)
	}
	return offsets, nil
}

// AppendEventBatch is store.Store.AppendEventBatch for a store whose do appends a batch.
func AppendEventBatch(a Append, do func(Append) (store.EventBatch, error)) (store.EventBatch, error) {
	if len(a.Payloads) == 0 {
		return store.EventBatch{Key: a.Key}, nil
	}
	b, err := do(a)
	if err != nil {
		return store.EventBatch{}, fmt.Errorf("appending a batch of %s (key %q) to %q/%q: %w",
			plural(len(a.Payloads), "event"), a.Key, a.Log.Scenario, a.Log.Source, err)
	}
	return b, nil
}
