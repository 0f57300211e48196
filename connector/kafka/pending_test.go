package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The partitions of the records a poll hands over count as pending until those records are
// pushed: a fetch lists one partition's records after another's, and pushing the first
// partition's must not move the source's watermark past the second's waiting behind them.
// Before, a fresh input listed while its topic was empty said no partition was pending, so a
// fetch of several partitions' records let the first one pushed close windows alone
// (TestKafkaCrashRecovery, once under load: a window of 7 events came out with the 2 of
// partition 0).
func TestPolledPartitionsArePending(t *testing.T) {
	k := NewInput("in", "ev", nil, nil, discard)
	k.ctx = t.Context()
	listedAt := time.Now().Add(-time.Second)
	k.mu.Lock()
	for p := range int32(3) { // 3 partitions read from offset 0, listed empty
		k.base[p], k.ends[p] = 0, 0
	}
	k.confirmedAt = listedAt
	k.mu.Unlock()
	k.batches = make(chan kafkaBatch, 1)
	k.batches <- kafkaBatch{recs: []*kgo.Record{
		{Partition: 0, Offset: 0, Value: []byte(`{}`)}, {Partition: 0, Offset: 1, Value: []byte(`{}`)},
		{Partition: 0, Offset: 2, Value: []byte(`{}`)}, {Partition: 2, Offset: 0, Value: []byte(`{}`)},
		{Partition: 2, Offset: 1, Value: []byte(`{}`)},
	}}

	if pending, listed := k.PendingPartitions(); !listed || len(pending) != 0 {
		t.Fatalf("before the poll: pending %v, listed %v; want none, listed", pending, listed)
	}
	events, _ := k.Poll()
	if len(events) != 5 {
		t.Fatalf("the poll handed over %d events, want 5", len(events))
	}
	pending, _ := k.PendingPartitions()
	slices.Sort(pending)
	if !slices.Equal(pending, []int32{0, 2}) {
		t.Errorf("after the poll: pending %v, want [0 2] (the partitions of its records)", pending)
	}

	// Partition 0's records pushed: partition 2's still wait.
	for _, ev := range events[:3] {
		k.Advance(ev)
	}
	pending, _ = k.PendingPartitions()
	slices.Sort(pending)
	if !slices.Equal(pending, []int32{0, 2}) {
		t.Errorf("partition 0 pushed: pending %v, want [0 2] (0 had records after the listing, 2 waits)", pending)
	}

	// All pushed, and a listing after the pushes finds the positions at the ends: none.
	for _, ev := range events[3:] {
		k.Advance(ev)
	}
	k.mu.Lock()
	k.ends[0], k.ends[2] = 3, 2
	k.confirmedAt = time.Now().Add(time.Second)
	k.mu.Unlock()
	if pending, _ := k.PendingPartitions(); len(pending) != 0 {
		t.Errorf("all pushed and listed: pending %v, want none", pending)
	}
}
