package kafka

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
)

// The budget hands its bytes out oldest first, a part at most all of it, lets a part pass it
// without waiting when asked, gives a waiter up when its context ends, and knows the oldest
// response holding a part.
func TestFetchMemoryTakesInOrder(t *testing.T) {
	m := NewFetchMemory(100)
	ctx := t.Context()
	if n, err := m.take(ctx, nil, 1000, true); err != nil || n != 100 {
		t.Fatalf("a part past the budget: took %d, %v; want all of it, 100", n, err)
	}
	m.give(100)
	for range 4 {
		m.take(ctx, nil, 25, true)
	}
	// Full: a waiter of 20 waits; one of 5 after it waits too, though 5 fits once 10 are
	// given back; a part taken without waiting passes at once.
	got := make(chan int64, 2)
	go func() { n, _ := m.take(ctx, nil, 20, true); got <- n }()
	waitFor(t, func() bool { return m.Waiting() == 1 })
	go func() { n, _ := m.take(ctx, nil, 5, true); got <- n }()
	waitFor(t, func() bool { return m.Waiting() == 2 })
	if n := m.force(7); n != 7 || m.InUse() != 107 {
		t.Fatalf("a part taken without waiting: %d, in use %d; want 7, 107", n, m.InUse())
	}
	m.give(7)
	m.give(10) // 90 in use: 5 would fit, but 20 waits before it
	if m.InUse() != 90 || m.Waiting() != 2 {
		t.Fatalf("in use %d, %d waiting; want 90, 2 (the 5 behind the 20)", m.InUse(), m.Waiting())
	}
	m.give(25) // 65: 20 fits, then 5
	if a, b := <-got, <-got; a+b != 25 {
		t.Fatalf("served %d and %d; want 20 and 5", a, b)
	}
	if m.InUse() != 90 {
		t.Fatalf("in use %d; want 90", m.InUse())
	}
	// A waiter whose context ends takes nothing, and those after it go on.
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := m.take(wctx, nil, 20, true); errc <- err }()
	waitFor(t, func() bool { return m.Waiting() == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a waiter whose context ended took its part")
	}
	if n, err := m.take(ctx, nil, 10, true); err != nil || n != 10 || m.InUse() != 100 {
		t.Fatalf("a part after the waiter left: %d, %v, in use %d; want 10 at once, 100", n, err, m.InUse())
	}
	if _, err := m.take(wctx, nil, 1, true); err == nil {
		t.Fatal("a part past the limit was taken without waiting")
	}
	// The oldest response: by seq; the next response of a source keeps its place (aged).
	f1, f2 := &fetchFrame{}, &fetchFrame{}
	m.enter(f1)
	m.enter(f2)
	if old, _ := m.oldest(f1); !old {
		t.Error("the first response entered is not the oldest")
	}
	old, kick := m.oldest(f2)
	if old {
		t.Error("the second response entered is the oldest")
	}
	f3 := &fetchFrame{seq: f1.seq}
	m.leave(f1)
	select {
	case <-kick:
	default:
		t.Error("the oldest left, and those waiting to be it were not told")
	}
	m.enter(f3)
	if old, _ := m.oldest(f3); !old {
		t.Error("a response of an aged seq is not the oldest")
	}
	if old, _ := m.oldest(f2); old {
		t.Error("a response entered after an older seq is the oldest")
	}
}

// waitFor waits up to 60 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	// 60 s: under -race on a loaded 2-core machine, 4 sources filling a 32 MiB budget from
	// kfake once took more than 10 s (CI of session 32).
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 60 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Many sources of one topic of large records hold together no more than their FetchMemory,
// whatever each fetches: responses wait for their parts, every source reads every record, and
// all is given back at their stop. Before, each source's client buffered a fetch of its own,
// and 90 deployments of a topic of 15 MB records held 5.4 GB (hostile round; the broker here
// is in the test's process, so the heap is not what the sources hold).
func TestFetchMemoryBoundsSources(t *testing.T) {
	// Uncompressed, as the hostile round wrote them; and compressed (snappy), 8 records in
	// a response of 840 KB, each batch decompressed to 2 MiB.
	t.Run("uncompressed", func(t *testing.T) { fetchMemoryBoundsSources(t, false, 12) })
	t.Run("compressed", func(t *testing.T) { fetchMemoryBoundsSources(t, true, 6) })
}

// fetchMemoryBoundsSources runs sources sources of a topic of records written compressed
// with snappy or not.
func fetchMemoryBoundsSources(t *testing.T, compressed bool, sources int) {
	// The oldest response decompresses past the budget what one poll may (4 MiB and a batch).
	setBounds(t, maxValueBytes, 4<<20, 4<<20)
	codec := kgo.NoCompression()
	if compressed {
		codec = kgo.SnappyCompression()
	}
	const (
		records = 8
		size    = 2 << 20
		budget  = 8 << 20
	)
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "ev"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(4 * size)})).ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerBatchMaxBytes(4*size), kgo.BrokerMaxWriteBytes(8*size),
		kgo.ProducerBatchCompression(codec))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	value := []byte(`{"s":"` + strings.Repeat("x", size-8) + `"}`)
	for range records {
		if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()

	conn, err := NewConn(brokers, Cluster{FetchMemory: budget}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := conn.FetchMemory()
	var maxInUse, waited atomic.Int64
	var wg sync.WaitGroup

	read := make([]int, sources)
	for i := range sources {
		in := NewInput("in", "ev", conn, nil, discard)
		if err := in.Restore(nil, nil); err != nil {
			t.Fatal(err)
		}
		wake := make(chan struct{}, 1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		in.Start(ctx, func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		wg.Go(func() {
			defer func() { cancel(); in.Stop() }()
			for read[i] < records && ctx.Err() == nil {
				events, _ := in.Poll()
				for _, ev := range events {
					if !ev.Skip && ev.Undecodable == nil && len(ev.Payload) == len(value) {
						read[i]++
					}
					in.Advance(ev)
				}
				if n := mem.InUse(); n > maxInUse.Load() {
					maxInUse.Store(n)
				}
				if mem.Waiting() > 0 {
					waited.Store(1)
				}
				if len(events) == 0 {
					select {
					case <-wake:
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	for i, n := range read {
		if n != records {
			t.Errorf("source %d read %d of the %d records", i, n, records)
		}
	}
	if got := mem.InUse(); got != 0 {
		t.Errorf("after the sources stopped, %d bytes of the budget are held; want 0", got)
	}
	// Small responses take their parts without waiting (a few hundred kilobytes past it),
	// and the oldest response's batches of one poll are decompressed past it.
	if got := maxInUse.Load(); got > budget+int64(fetchBudgetBytes+maxBatchBytes)+int64(sources)*chargeOf(fetchWaitFrom) {
		t.Errorf("the sources held %d bytes of a budget of %d", got, budget)
	}
	if waited.Load() == 0 {
		t.Error("no response waited for the budget: the test did not reach it")
	}
	t.Logf("peak budget in use %.1f MiB", float64(maxInUse.Load())/(1<<20))
}
