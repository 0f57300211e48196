package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
)

// produceRecords writes n records of value to topic, compressed with codec, in batches of
// up to batch bytes (8 MiB by default) lingering for linger (0: one batch a record).
func produceRecords(t *testing.T, brokers []string, topic string, codec kgo.CompressionCodec, n int, value []byte, linger time.Duration, batch ...int32) {
	t.Helper()
	bmax := int32(8 << 20)
	if len(batch) > 0 {
		bmax = batch[0]
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerBatchMaxBytes(bmax), kgo.BrokerMaxWriteBytes(64<<20),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(linger), kgo.MaxBufferedRecords(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for range n {
		prod.Produce(t.Context(), &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
		if linger == 0 {
			if err := prod.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := prod.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// stalledInput starts an input that is never polled (its deployment is behind: results full,
// a checkpoint in progress, a slow graph).
func stalledInput(t *testing.T, conn *Conn, topic string) *Input {
	in := NewInput("in", topic, conn, nil, discard)
	in.Restore(nil, nil)
	in.Start(t.Context(), func() {})
	t.Cleanup(in.Stop)
	return in
}

// ledgerHolds is what in's responses are charged and hold.
func ledgerHolds(in *Input) (charged, real int64) {
	in.ledger.mu.Lock()
	defer in.ledger.mu.Unlock()
	for _, f := range in.ledger.frames {
		charged += f.charge
		real += f.size + f.made
	}
	return
}

// readRecords polls an input like a deployment for d, counting records.
func readRecords(t *testing.T, conn *Conn, topic string, want int, d time.Duration) int {
	in := NewInput("in", topic, conn, nil, discard)
	in.Restore(nil, nil)
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	wake := make(chan struct{}, 1)
	in.Start(ctx, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer in.Stop()
	read := 0
	for read < want && ctx.Err() == nil {
		events, _ := in.Poll()
		for _, ev := range events {
			if !ev.Skip {
				read++
			}
			in.Advance(ev)
		}
		if len(events) == 0 {
			select {
			case <-wake:
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return read
}

// Three deployments that are behind (never poll) hold 24 MiB of a 32 MiB budget; a fourth
// source, of a compressed topic, reads all its records: its batches wait for the budget left
// rather than being refused while older responses are held (review of the first version,
// helper 126: it read 0 of 8 in 20 s, fetched again and refused for ever).
func TestFetchMemoryBehindStalledSources(t *testing.T) {
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "small", "zip"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(16 << 20)})).ListenAddrs()
	produceRecords(t, brokers, "small", kgo.NoCompression(), 40_000, []byte(`{"v":"`+strings.Repeat("s", 90)+`"}`), 50*time.Millisecond)
	produceRecords(t, brokers, "zip", kgo.SnappyCompression(), 8, []byte(`{"s":"`+strings.Repeat("x", 1<<20)+`"}`), 0)

	t.Run("control", func(t *testing.T) {
		conn, _ := NewConn(brokers, Cluster{FetchMemory: 32 << 20}, nil)
		if n := readRecords(t, conn, "zip", 8, 20*time.Second); n != 8 {
			t.Errorf("alone: read %d of 8", n)
		}
	})
	t.Run("behind stalled", func(t *testing.T) {
		conn, _ := NewConn(brokers, Cluster{FetchMemory: 32 << 20}, nil)
		mem := conn.FetchMemory()
		var stalled []*Input
		for range 3 {
			stalled = append(stalled, stalledInput(t, conn, "small"))
		}
		waitFor(t, func() bool { return mem.InUse() >= 4<<20 })
		var c, r int64
		for _, in := range stalled {
			ci, ri := ledgerHolds(in)
			c += ci
			r += ri
		}
		t.Logf("3 stalled sources: charged %.1f MiB, hold %.1f MiB; budget in use %.1f of 32 MiB", float64(c)/(1<<20), float64(r)/(1<<20), float64(mem.InUse())/(1<<20))
		// It takes about 15 s (the stalled sources' parts are given back as their charges
		// shrink), and more under -race beside other packages' tests: a fresh-clone CI of
		// def6594 read 0 of 8 in 20 s. Without the fix it never reads one.
		if n := readRecords(t, conn, "zip", 8, 60*time.Second); n != 8 {
			t.Errorf("behind 3 stalled sources: read %d of 8 in 60 s (budget in use %.1f MiB, waiting %d)", n, float64(mem.InUse())/(1<<20), mem.Waiting())
		}
	})
}

// zstd batches of tiny records: a response of a few KiB makes ~60 MiB of kgo.Records, which
// the budget counts (batchBytes) as the records held (review, helper 126: 16 sources were
// charged 37.4 MiB for 94.7 MiB held).
func TestFetchMemoryCountsTinyRecords(t *testing.T) {
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "tiny"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(16 << 20)})).ListenAddrs()
	produceRecords(t, brokers, "tiny", kgo.ZstdCompression(), 600_000, []byte(`1`), 200*time.Millisecond, 1<<20)
	conn, _ := NewConn(brokers, Cluster{FetchMemory: 64 << 20}, nil)
	mem := conn.FetchMemory()
	var ins []*Input
	for range 16 {
		ins = append(ins, stalledInput(t, conn, "tiny"))
	}
	waitFor(t, func() bool { return mem.Waiting() > 0 }) // the budget is full: the others wait
	var c, r int64
	for _, in := range ins {
		ci, ri := ledgerHolds(in)
		c += ci
		r += ri
	}
	t.Logf("16 sources: charged %.1f MiB (in use %.1f of 64), hold %.1f MiB", float64(c)/(1<<20), float64(mem.InUse())/(1<<20), float64(r)/(1<<20))
	if r > c {
		t.Errorf("the sources hold %.1f MiB, charged %.1f MiB", float64(r)/(1<<20), float64(c)/(1<<20))
	}
	// The oldest response decompresses past the budget what one poll may.
	if limit := int64(64<<20 + fetchBudgetBytes + maxBatchBytes); mem.InUse() > limit {
		t.Errorf("the sources hold %.1f MiB of the budget; want at most %.1f MiB", float64(mem.InUse())/(1<<20), float64(limit)/(1<<20))
	}
}

// A topic of 1,000 partitions: its metadata and offset listings are past 16 KiB, but they
// answer no fetch and take no part of the budget: with the budget held by sources that are
// behind, a source of that topic lists its partitions (review, helper 126: never listed, the
// listing waiting for the budget).
func TestFetchMemoryListingsDoNotWait(t *testing.T) {
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "small"), kfake.SeedTopics(1000, "wide"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(16 << 20)})).ListenAddrs()
	produceRecords(t, brokers, "small", kgo.NoCompression(), 40_000, []byte(`{"v":"`+strings.Repeat("s", 90)+`"}`), 50*time.Millisecond)
	conn, _ := NewConn(brokers, Cluster{FetchMemory: 32 << 20}, nil)
	mem := conn.FetchMemory()
	// Sources that are behind until the budget is taken: all of it in use, or a response
	// waiting for its part. Four sufficed on an idle machine; on a loaded one each held a
	// fetch of 1.8 MiB and no more (a consumer fetches again once it is polled), and the
	// budget was never full (a fresh-clone CI of session 36, and six runs at once here).
	full := func() bool { return mem.InUse() >= 32<<20 || mem.Waiting() > 0 }
	for n := 1; !full(); n++ {
		if n > 64 {
			t.Fatalf("64 sources behind hold %d bytes of the budget, none waits", mem.InUse())
		}
		stalledInput(t, conn, "small")
		for end := time.Now().Add(2 * time.Second); !full() && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
	}
	in := NewInput("in", "wide", conn, nil, discard)
	in.Restore(nil, nil)
	in.Start(t.Context(), func() {})
	defer in.Stop()
	waitFor(t, func() bool { _, listed := in.PendingPartitions(); return listed })
	_, listed := in.PendingPartitions()
	_, idle := in.IdleClock(time.Now())
	t.Logf("wide: listed %v, idle %v, status %q, waiting %d", listed, idle, in.Status().Err, mem.Waiting())
	if !listed {
		t.Error("the wide topic's partitions were never listed: its listing waited for the budget")
	}
}

// fetchConn.Close, which franz-go runs from any goroutine, and Read touch the response being
// read under one lock, and its part is given back once (review, helper 126: a data race under
// -race).
func TestFetchConnCloseWhileReading(t *testing.T) {
	for i := range 200 {
		l := &fetchLedger{mem: NewFetchMemory(1 << 30), ctx: t.Context()}
		a, b := net.Pipe()
		c := &fetchConn{Conn: a, l: l, ctx: t.Context(), maxRead: 1 << 20, kick: make(chan struct{})}
		go func() {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 100)
			b.Write(hdr[:])
			b.Write(make([]byte, 50))
		}()
		var wg sync.WaitGroup
		wg.Go(func() {
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		})
		time.Sleep(time.Duration(i%5) * 10 * time.Microsecond)
		c.Close()
		b.Close()
		wg.Wait()
		if got := l.mem.InUse(); got != 0 {
			t.Fatalf("iteration %d: %d bytes held after close", i, got)
		}
	}
}

// A response's part shrinks to what its records hold once a poll took records of it, not when
// the next fetch is sent (review, helper 126: 25.0 MiB charged for 1.16 MiB held, for as long
// as the deployment was behind).
func TestFetchMemoryShrinksOncePolled(t *testing.T) {
	l := &fetchLedger{mem: NewFetchMemory(256 << 20), ctx: t.Context()}
	const size = 1 << 20
	f, err := l.charge(t.Context(), nil, size)
	if err != nil {
		t.Fatal(err)
	}
	if f.charge != chargeOf(size) {
		t.Fatalf("charged %d; want chargeOf(%d) = %d", f.charge, size, chargeOf(size))
	}
	l.read(f)
	for range 1000 { // 1000 records of about 1 KB
		l.OnFetchRecordBuffered(&kgo.Record{})
	}
	p := l.pollStarted()
	l.OnFetchRecordUnbuffered(&kgo.Record{}, true) // the poll took the first
	l.pollFinished(p, true)
	if want := int64(size + 1000*kgoRecordBytes); f.charge != want || l.mem.InUse() != want {
		t.Errorf("after a poll took its records: charged %d, in use %d; want %d (its bytes and 1,000 records)", f.charge, l.mem.InUse(), want)
	}
	// Sent the next fetch: drained during poll p+1; given back once it finished and p's batch
	// is pushed.
	q := l.pollStarted()
	l.fetchSent()
	l.pollFinished(q, false)
	if l.mem.InUse() == 0 {
		t.Error("given back before the batch of its poll was pushed")
	}
	l.pushed(p)
	if l.mem.InUse() != 0 {
		t.Errorf("after the batch was pushed, %d bytes are held; want 0", l.mem.InUse())
	}
}

// A compressed response's part grows by what its batches decompress to, records counted
// (batchBytes), so that it never holds less than its records (review, helper 126: 6.0 MiB
// charged for 87.7 MiB held).
func TestFetchMemoryCountsDecompressedRecords(t *testing.T) {
	l := &fetchLedger{mem: NewFetchMemory(1 << 30), ctx: t.Context()}
	const size = 30 << 10 // a zstd response of 30 KiB
	f, _ := l.charge(t.Context(), nil, size)
	l.read(f)
	const records = 170_000 // 12-byte records in 2 MiB a batch
	batch := int64(2<<20 + records*kgoRecordBytes)
	for range 3 {
		took, ok := l.reserveDecompress()
		if !ok {
			t.Fatal("refused")
		}
		l.decompressed(batch, 2<<20, took)
		for range records {
			l.OnFetchRecordBuffered(&kgo.Record{})
		}
		if f.charge < f.held() {
			t.Fatalf("charged %d for %d held", f.charge, f.held())
		}
	}
	if want := size + 3*batch; f.charge < want {
		t.Errorf("charged %d for three batches of %d and the response's %d bytes; want at least %d", f.charge, batch, size, want)
	}
}

// A partition whose next batch makes a response past maxResponseBytes is not read past it, and
// the source's status says so, between franz-go's tries too (hostile re-test, helper 127: the
// error showed in 14 of 60 samples, as "reading partition -1 of topic \"\": ...").
func TestResponseTooLargeIsShown(t *testing.T) {
	setBounds(t, 100<<10, maxBatchBytes, fetchBudgetBytes) // responses of 1.16 MiB at most
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "ev"),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": fmt.Sprint(8 << 20)})).ListenAddrs()
	produceRecords(t, brokers, "ev", kgo.NoCompression(), 1, []byte(`{"s":"`+strings.Repeat("x", 2<<20)+`"}`), 0)
	in, _ := startInput(t, brokers, nil)
	const want = "a response of the brokers is larger than"
	waitFor(t, func() bool { return strings.Contains(in.Status().Err, want) })
	for i := range 20 {
		if err := in.Status().Err; !strings.Contains(err, want) {
			t.Fatalf("sample %d: the status is %q; want it to say %q", i, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
