package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/internal/kafkatest"
	"github.com/scenario-server/scenario-server/schemaregistry"
	"github.com/scenario-server/scenario-server/value"
)

// setBounds sets the input's bounds for one test.
func setBounds(t *testing.T, value, batch, budget int) {
	v, b, f := maxValueBytes, maxBatchBytes, fetchBudgetBytes
	maxValueBytes, maxBatchBytes, fetchBudgetBytes = value, batch, budget
	t.Cleanup(func() { maxValueBytes, maxBatchBytes, fetchBudgetBytes = v, b, f })
}

// zstdProducer is a client of brokers that compresses each batch with zstd, batches of up to
// 64 MiB before compression.
func zstdProducer(t *testing.T, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(64<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// startInput starts an Input of topic "ev" on brokers from the topic's start, decoding with
// reg when not nil; cancel ends its context (Stop when t ends).
func startInput(t *testing.T, brokers []string, reg *schemaregistry.Registry) (in *Input, cancel context.CancelFunc) {
	t.Helper()
	conn, err := NewConn(brokers, Cluster{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in = NewInput("in", "ev", conn, reg, discard)
	if err := in.Restore(nil, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	in.Start(ctx, func() {})
	t.Cleanup(func() { cancel(); in.Stop() })
	return in, cancel
}

// A value longer than maxValueBytes, and a batch that decompresses to more than
// maxBatchBytes, are per-event errors at their offsets, and the records after them are read:
// before, a 50 MB value was an event, and a batch decompressed up to 1 GiB.
func TestValueAndBatchBounded(t *testing.T) {
	setBounds(t, 100, 1<<20, 64<<20)
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "ev")).ListenAddrs()
	prod := zstdProducer(t, brokers)
	for _, v := range [][]byte{
		[]byte(`{"a":1}`),
		[]byte(`{"s":"` + strings.Repeat("x", 200) + `"}`), // 208 bytes: past the value bound
		bytes.Repeat([]byte(" "), 4<<20),                   // 4 MiB of spaces: a batch past 1 MiB
		[]byte(`{"a":2}`),
	} {
		if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := startInput(t, brokers, nil)
	got := pollAll(t, in, 4)
	var desc []string
	for _, ev := range got {
		if ev.Undecodable != nil {
			desc = append(desc, fmt.Sprintf("line %d, position %d: %v", ev.Line, ev.Offset, ev.Undecodable))
		} else {
			desc = append(desc, fmt.Sprintf("line %d, position %d: %.20s", ev.Line, ev.Offset, ev.Payload))
		}
	}
	want := []string{
		`line 1, position 1: {"a":1}`,
		"line 2, position 2: the record value is 208 bytes, more than the 100 a value may be",
		"line 3, position 3: the record batch at offsets 2 to 2 is too large to read (more than 1048576 bytes decompressed, counting 168 bytes a record and 40 a header): its records are skipped",
		`line 4, position 4: {"a":2}`,
	}
	if strings.Join(desc, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(desc, "\n"), strings.Join(want, "\n"))
	}
	if st := in.Status(); st.Err != "" || st.Processed != 4 {
		t.Errorf("status %+v, want 4 processed and no error", st)
	}
}

// The batches one poll hands over decompress to at most about fetchBudgetBytes (twice it
// and a batch, for a fetch that starts while the poll before is taken): before, every batch
// of a fetch was decompressed, 9 MiB here for a fetch of a few kilobytes.
func TestFetchDecompressionBounded(t *testing.T) {
	const batch, budget = 1 << 20, 1 << 20
	setBounds(t, 16<<20, batch, budget)
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "ev")).ListenAddrs()
	prod := zstdProducer(t, brokers)
	const n, size = 10, 900 << 10
	for i := range n {
		v := append([]byte(fmt.Sprintf(`{"i":%d,"s":"`, i)), bytes.Repeat([]byte("x"), size)...)
		v = append(v, `"}`...)
		if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := startInput(t, brokers, nil)
	var got []connector.Event
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		events, _ := in.Poll()
		polled := 0
		for _, ev := range events {
			in.Advance(ev)
			if !ev.Skip {
				got = append(got, ev)
				polled += len(ev.Payload)
			}
		}
		if polled > 2*(budget+batch) {
			t.Errorf("one poll handed over %d bytes, want at most %d", polled, 2*(budget+batch))
		}
		if len(events) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(got) != n {
		t.Fatalf("%d events after 30 s, want %d; status %+v", len(got), n, in.Status())
	}
	for i, ev := range got {
		if ev.Undecodable != nil || !bytes.HasPrefix(ev.Payload, []byte(fmt.Sprintf(`{"i":%d,`, i))) {
			t.Errorf("event %d: %.20s, %v", i, ev.Payload, ev.Undecodable)
		}
	}
	if st := in.Status(); st.Err != "" {
		t.Errorf("status %+v, want no error", st)
	}
}

// A poll decodes for decodeTime at most, and not past the input's end, while the schema
// registry does not answer: what it did not decode comes with the next poll, in order, none
// lost. Before, a poll waited the registry's timeout (5 s) for each new schema id: a
// deployment took 92 s to stop.
func TestPollDecodingBounded(t *testing.T) {
	const hang = 3 * time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(hang):
		case <-r.Context().Done():
		}
		// A refusal (no such id), not a registry down: the records are errors of their ids.
		http.Error(w, `{"error_code": 40403, "message": "Schema not found"}`, http.StatusNotFound)
	}))
	defer srv.Close()
	reg, err := schemaregistry.New(schemaregistry.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "ev")).ListenAddrs()
	prod := zstdProducer(t, brokers)
	for id := byte(1); id <= 2; id++ {
		if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Value: []byte{0, 0, 0, 0, id, 2}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Each poll returns within decodeTime, well before the registry's 3 s; the two records
	// come out in order, each an error of its schema id once its lookup has failed.
	old := decodeTime
	decodeTime = 300 * time.Millisecond
	in, _ := startInput(t, brokers, reg)
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		began := time.Now()
		events, _ := in.Poll()
		if took := time.Since(began); took > 2*time.Second {
			t.Fatalf("a poll took %v, with %v to decode", took, decodeTime)
		}
		for _, ev := range events {
			in.Advance(ev)
			got = append(got, fmt.Sprintf("%d: %v", ev.Offset, ev.Undecodable))
		}
		if len(events) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "1: ") || !strings.Contains(got[0], "schema id 1") ||
		!strings.HasPrefix(got[1], "2: ") || !strings.Contains(got[1], "schema id 2") {
		t.Errorf("events %q, want the records at offsets 0 and 1, errors of schema ids 1 and 2", got)
	}

	// The input's end ends a poll's decoding: with a minute to decode, a poll waiting on the
	// registry returns once the input's context ends.
	decodeTime = time.Minute
	t.Cleanup(func() { decodeTime = old })
	reg2, err := schemaregistry.New(schemaregistry.Config{URL: srv.URL}) // nothing cached
	if err != nil {
		t.Fatal(err)
	}
	in2, cancel := startInput(t, brokers, reg2)
	waitPending := time.Now().Add(20 * time.Second)
	for !in2.readyToPoll() && time.Now().Before(waitPending) {
		time.Sleep(10 * time.Millisecond)
	}
	polled := make(chan []connector.Event, 1)
	go func() {
		events, _ := in2.Poll()
		polled <- events
	}()
	time.Sleep(100 * time.Millisecond) // the poll is waiting on the registry (3 s)
	cancel()
	select {
	case events := <-polled:
		if len(events) != 0 {
			t.Errorf("the poll handed over %d events, want none decoded", len(events))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the poll did not return within 2 s of the input's end")
	}
}

// readyToPoll says whether a poll would decode: the topic is listed and a batch waits.
func (k *Input) readyToPoll() bool {
	_, listed := k.PendingPartitions()
	return listed && len(k.batches) > 0
}

// tinyRecords is the records section of a batch of n records of 7 bytes each, worked out by
// hand: a length of 6 (zig-zag varint 0x0C), then attributes, timestamp delta, offset delta,
// no key (-1: 0x01), an empty value (0x00) and no headers (0x00).
func tinyRecords(n int) []byte {
	var b []byte
	for i := range n {
		b = append(b, 0x0C, 0, 0, byte(2*(i%64)), 0x01, 0x00, 0x00)
	}
	return b
}

// zstdBudget is a fetchBudget over franz-go's bounded decompressor (the bounds set before),
// and a zstd encoder to make its batches.
func zstdBudget(t *testing.T) (*fetchBudget, *zstd.Encoder) {
	t.Helper()
	inner, err := boundedDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fetchBudget{inner: inner}, enc
}

// A batch is counted with what franz-go holds for each of its records (168 bytes) besides
// its bytes: 1,000 records of 7 bytes are 175,000 bytes; a batch past maxBatchBytes so
// counted is refused as too large (round 18: 2.8 million records of 11 bytes, 31 MB
// decompressed, held 450 MB), and the batches between two polls are counted so.
func TestBatchRecordsCounted(t *testing.T) {
	if got := batchBytes(tinyRecords(1000)); got != 7000+1000*168 {
		t.Errorf("batchBytes of 1,000 records of 7 bytes: %d, want 175,000", got)
	}
	setBounds(t, 16<<20, 1<<20, 2_000_000)
	b, enc := zstdBudget(t)
	// 5,900 records: 41,300 + 991,200 = 1,032,500 bytes, within 1 MiB (1,048,576).
	if _, err := b.Decompress(enc.EncodeAll(tinyRecords(5900), nil), kgo.CodecZstd); err != nil || b.used.Load() != 1_032_500 {
		t.Errorf("5,900 records: %v, %d counted; want 1,032,500", err, b.used.Load())
	}
	// 6,300 records: 44,100 + 1,058,400 = 1,102,500 bytes, past it: too large, not counted.
	if _, err := b.Decompress(enc.EncodeAll(tinyRecords(6300), nil), kgo.CodecZstd); !errors.Is(err, kgo.ErrMaxDecompress) || b.used.Load() != 1_032_500 {
		t.Errorf("6,300 records: %v, %d counted; want too large, 1,032,500", err, b.used.Load())
	}
	// The budget: after 2 × 1,032,500 = 2,065,000 ≥ 2,000,000, the next batch waits.
	if _, err := b.Decompress(enc.EncodeAll(tinyRecords(5900), nil), kgo.CodecZstd); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decompress(enc.EncodeAll(tinyRecords(10), nil), kgo.CodecZstd); !errors.Is(err, errFetchBudget) {
		t.Errorf("past the budget: %v, want errFetchBudget", err)
	}
	b.release()
	if _, err := b.Decompress(enc.EncodeAll(tinyRecords(10), nil), kgo.CodecZstd); err != nil {
		t.Errorf("after a poll: %v", err)
	}
}

// headerRecords is the records section of one record, worked out by hand: its length
// (zig-zag varint), attributes, timestamp delta and offset delta (0 each), no key (-1:
// 0x01), an empty value (0x00), the number of headers (zig-zag varint) and each header's
// key and value, each a zig-zag varint length and its bytes.
func headerRecords(claimed int, headers ...[2]string) []byte {
	body := []byte{0, 0, 0, 0x01, 0x00}
	body = binary.AppendVarint(body, int64(claimed))
	for _, h := range headers {
		body = binary.AppendVarint(body, int64(len(h[0])))
		body = append(body, h[0]...)
		body = binary.AppendVarint(body, int64(len(h[1])))
		body = append(body, h[1]...)
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// A record's headers are counted with what franz-go makes for them (40 bytes a header, its
// key copied) besides their bytes: 16 million empty headers, 3 KB once compressed, held
// 640 MB (hostile round). Worked by hand: 1,000 empty headers are 2,000 bytes, the count 2
// (2,000 as a zig-zag varint) and the record's first 5 bytes: a body of 2,007 bytes, its
// length 2 more: 2,009 + 168 + 40,000 = 42,177. Three headers "abc": "xy" are 7 bytes each:
// a body of 27, 28 in all: 28 + 168 + 3 × (40 + 3) = 325. A record claiming more headers than
// its bytes can hold makes none (franz-go's reader refuses it): 1,000,000 claimed is 3 bytes
// (2,000,000 as a zig-zag varint), a body of 8, 9 in all, and 168.
func TestBatchHeadersCounted(t *testing.T) {
	empty := make([][2]string, 1000)
	if got := batchBytes(headerRecords(1000, empty...)); got != 42_177 {
		t.Errorf("1,000 empty headers: %d, want 42,177", got)
	}
	abc := [2]string{"abc", "xy"}
	if got := batchBytes(headerRecords(3, abc, abc, abc)); got != 325 {
		t.Errorf("3 headers abc: %d, want 325", got)
	}
	if got := batchBytes(headerRecords(1_000_000)); got != 9+168 {
		t.Errorf("a record claiming 1,000,000 headers in 0 bytes: %d, want 177", got)
	}
	// Through the decompressor: 100,000 empty headers (a count of 3 bytes, a body of 200,008,
	// its length 3 more) are 200,011 bytes decompressed, counted 200,011 + 168 + 4,000,000:
	// past a batch bound of 1 MiB, refused as too large.
	setBounds(t, 16<<20, 1<<20, 64<<20)
	b, enc := zstdBudget(t)
	bomb := headerRecords(100_000, make([][2]string, 100_000)...)
	if len(bomb) != 200_011 {
		t.Fatalf("the record is %d bytes, want 200,011", len(bomb))
	}
	if _, err := b.Decompress(enc.EncodeAll(bomb, nil), kgo.CodecZstd); !errors.Is(err, kgo.ErrMaxDecompress) || b.used.Load() != 0 {
		t.Errorf("100,000 empty headers: %v, %d counted; want too large, none", err, b.used.Load())
	}
}

// While the schema registry cannot be reached (here it answers 503), a record in its wire
// format waits, with those after it, for the registry rather than becoming a dead letter: no
// event is handed over, the input's status says why, and the deployment is woken to poll
// again. Once the registry answers, both records come out decoded, in order. Before, each
// was handed over as an undecodable event (a dead letter) at once.
func TestRecordsWaitForUnreachableRegistry(t *testing.T) {
	fake := srfake.New()
	t.Cleanup(fake.Close)
	fake.SeedSchema("ev-value", 1, 7, sr.Schema{Type: sr.TypeJSON, Schema: `{"type": "object"}`})
	down := kafkatest.RegistryDown(fake)
	reg, err := schemaregistry.New(schemaregistry.Config{URL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(1, "ev")).ListenAddrs()
	prod := zstdProducer(t, brokers)
	for _, v := range []string{`{"a":1}`, `{"a":2}`} {
		if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Value: append([]byte{0, 0, 0, 0, 7}, v...)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := NewConn(brokers, Cluster{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := NewInput("in", "ev", conn, reg, discard)
	if err := in.Restore(nil, nil); err != nil {
		t.Fatal(err)
	}
	var woken atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	in.Start(ctx, func() { woken.Add(1) })
	t.Cleanup(func() { cancel(); in.Stop() })

	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(in.Status().Err, "wait for the schema registry") {
		if time.Now().After(deadline) {
			t.Fatalf("status %q, want the records waiting for the registry", in.Status().Err)
		}
		if events, _ := in.Poll(); len(events) > 0 {
			t.Fatalf("registry down: %d events handed over (the first: %v), want none", len(events), events[0].Undecodable)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The deployment is woken to poll again within UnreachableTTL, not left asleep.
	before := woken.Load()
	for woken.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("the deployment was not woken to poll again")
		}
		time.Sleep(10 * time.Millisecond)
	}

	down.Store(false)
	var got []string
	for len(got) < 2 && time.Now().Before(deadline) {
		events, _ := in.Poll()
		for _, ev := range events {
			in.Advance(ev)
			got = append(got, fmt.Sprintf("%d %s %v", ev.Offset, ev.Payload, ev.Undecodable))
		}
		if len(events) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if want := []string{`1 {"a":1} <nil>`, `2 {"a":2} <nil>`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if st := in.Status().Err; st != "" {
		t.Errorf("status %q once the registry answers, want none", st)
	}
}

// A topic's max.message.bytes bounds a sink's records at it less 101 bytes (a batch's header
// and a record's lengths) and its batches at it, at least 512 (the least franz-go takes);
// unknown (0) or past the producer's own bound, the defaults. Worked out by hand.
func TestTopicBoundsRecords(t *testing.T) {
	for _, tc := range []struct{ topic, record, batch int }{
		{0, 999_911, 1_000_012},
		{50, 0, 512},
		{101, 0, 512},
		{600, 499, 600},
		{2_000, 1_899, 2_000},
		{1_048_588, 999_911, 1_000_012},
	} {
		k := &Output{topicBytes: tc.topic}
		if r, b := k.MaxRecordBytes(), k.batchBytes(); r != tc.record || b != tc.batch {
			t.Errorf("max.message.bytes %d: records %d, batches %d; want %d and %d", tc.topic, r, b, tc.record, tc.batch)
		}
	}
}

// A record buffered before the topic's max.message.bytes was lowered under it (made while the
// bound was 1 MiB; 2,000 now, read by Ready before the checkpoint): Prepare fails naming the
// record's size, the bound and what to do, rather than the brokers' MESSAGE_TOO_LARGE at every
// try; a record within the bound (1,899 bytes: 2,000 less 101) is written.
func TestPendingRecordOverALoweredBound(t *testing.T) {
	o, _, committed := newTestOutputWith(t, Cluster{})
	ctx := t.Context()
	if err := o.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	o.Write(value.String(strings.Repeat("x", 1_900)))
	cl, err := o.conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("2000")}}, "out"); err != nil {
		t.Fatal(err)
	}
	o.boundSet = false // as a MESSAGE_TOO_LARGE leaves it
	if err := o.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = o.Prepare(ctx)
	if err == nil || !strings.Contains(err.Error(), "a record of 1902 bytes (key, value and headers) waits to be written, and the topic's max.message.bytes (2000, lowered since the record was made) takes at most 1899") {
		t.Fatalf("prepare: %v", err)
	}
	o.Abort(ctx)
	o.pending, o.pendingBytes = nil, 0 // as a deployment deployed again has
	o.Write(value.String(strings.Repeat("y", 1_897)))
	if _, err := o.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	o.Commit(ctx)
	if got := committed(); len(got) != 1 || len(got[0]) != 1_899 {
		t.Errorf("committed %d records, want the one of 1,899 bytes", len(got))
	}
}

// When the topic's max.message.bytes cannot be read (the brokers refuse DescribeConfigs, as a
// producer-only ACL does) and a record passes it (here 2,000 bytes, a value of 16,000
// incompressible hex characters), the first checkpoint's batch is refused as too large, and
// the sink sends one record a batch from then on; the second names the record (it alone is
// refused), and takes it out of the pending ones (TakeRefused: 16,002 bytes, its JSON string);
// the third writes the other two, and records of 16,002 bytes or more are refused as they are
// written (MaxRecordBytes 16,001). Before, every checkpoint failed with MESSAGE_TOO_LARGE, for
// good.
func TestRecordRefusedWhenTheBoundIsNotKnown(t *testing.T) {
	cluster := kafkatest.Cluster(t, kfake.SeedTopics(1, "out"))
	brokers := cluster.ListenAddrs()
	kafkatest.DenyDescribeConfigs(cluster)
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("2000")}}, "out"); err != nil {
		t.Fatal(err)
	}
	conn, err := NewConn(brokers, Cluster{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOutput("k", "out", "s", false, conn, discard)
	t.Cleanup(o.Close)
	if err := o.Restore(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.Ready(ctx); err != nil {
		t.Fatalf("ready, the topic's configs refused: %v; want the producer's default bound", err)
	}
	random := make([]byte, 8_000)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	o.Write(value.String("a"))
	o.Write(value.String(hex.EncodeToString(random)))
	o.Write(value.String("c"))
	for try := 1; try <= 2; try++ {
		if _, err := o.Prepare(ctx); !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("prepare %d: %v; want MESSAGE_TOO_LARGE", try, err)
		}
		o.Abort(ctx)
	}
	refused := o.TakeRefused()
	if len(refused) != 1 || refused[0].Bytes != 16_002 || len(refused[0].Value) != 16_002 {
		t.Fatalf("refused %d records (%v); want the one of 16,002 bytes", len(refused), refused)
	}
	if got := o.MaxRecordBytes(); got != 16_001 {
		t.Errorf("MaxRecordBytes %d once a record of 16,002 bytes was refused; want 16,001", got)
	}
	if _, err := o.Prepare(ctx); err != nil {
		t.Fatalf("prepare 3: %v", err)
	}
	o.Commit(ctx)
	if got := kafkatest.ReadTopic(t, brokers, "out", kgo.ReadCommitted()); len(got) != 2 || string(got[0].Value) != `"a"` || string(got[1].Value) != `"c"` {
		t.Errorf("committed %d records; want \"a\" and \"c\"", len(got))
	}
}
