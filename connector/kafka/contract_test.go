package kafka

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/internal/kafkatest"
	"github.com/scenario-server/scenario-server/value"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// pollAll polls in until it has n events (advancing each) or fails t after 20 s.
func pollAll(t *testing.T, in connector.Input, n int) []connector.Event {
	t.Helper()
	var got []connector.Event
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n {
		events, _ := in.Poll()
		for _, ev := range events {
			in.Advance(ev)
			if !ev.Skip {
				got = append(got, ev)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events after 20 s, want %d; status %+v", len(got), n, in.Status())
		}
		if len(events) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return got
}

// testCluster starts a kfake cluster with topic of the given partitions, and returns a Conn
// to it and a producer through it that writes to the partition each record names.
func testCluster(t *testing.T, partitions int32, topic string) (*Conn, *kgo.Client) {
	t.Helper()
	brokers := kafkatest.Cluster(t, kfake.SeedTopics(partitions, topic)).ListenAddrs()
	conn, err := NewConn(brokers, Cluster{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := conn.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return conn, prod
}

// The Kafka Input against the contract: it reads every partition from its start, gives each
// record's offset + 1 as its line and the position after it, its positions are the next
// offsets per partition, and an Input restored at those positions reads only what came
// after them.
func TestInputContract(t *testing.T) {
	conn, prod := testCluster(t, 2, "ev")
	produce := func(p int32, values ...string) {
		for _, v := range values {
			if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "ev", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, `{"a":1}`, `{"a":2}`)
	produce(1, `{"a":3}`)

	in := NewInput("in", "ev", conn, nil, discard)
	if err := in.Restore(nil, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in.Start(ctx, func() {})
	got := pollAll(t, in, 3)
	byPart := map[int32][]string{}
	for _, ev := range got {
		byPart[ev.Partition] = append(byPart[ev.Partition], string(ev.Payload)+"@"+strconv.FormatInt(ev.Line, 10)+"/"+strconv.FormatInt(ev.Offset, 10))
	}
	if !slices.Equal(byPart[0], []string{`{"a":1}@1/1`, `{"a":2}@2/2`}) || !slices.Equal(byPart[1], []string{`{"a":3}@1/1`}) {
		t.Errorf("events by partition %v", byPart)
	}
	pos := in.Positions()
	if !slices.Equal(pos, []connector.Position{{Partition: 0, Offset: 2}, {Partition: 1, Offset: 1}}) {
		t.Errorf("positions %+v", pos)
	}
	id := in.Identity()
	if len(id) != 16 {
		t.Errorf("identity %x, want the topic's 16-byte ID", id)
	}
	in.Stop()

	produce(1, `{"a":4}`)
	again := NewInput("in", "ev", conn, nil, discard)
	if err := again.Restore(pos, id); err != nil {
		t.Fatal(err)
	}
	again.Start(ctx, func() {})
	defer again.Stop()
	rest := pollAll(t, again, 1)
	if len(rest) != 1 || string(rest[0].Payload) != `{"a":4}` || rest[0].Partition != 1 || rest[0].Line != 2 {
		t.Errorf("after the restore: %+v", rest)
	}
	if err := NewInput("in", "ev", conn, nil, discard).Restore([]connector.Position{{Partition: 0, Offset: -1}}, nil); err == nil {
		t.Error("a negative offset restored without an error")
	}
}

// The Kafka Output against the contract: written values are not visible to read_committed
// consumers after Prepare, are after Commit; aborted ones are produced again by the next
// Prepare; a new Output restored with the state of a prepared, not committed, checkpoint
// commits it.
func TestOutputContract(t *testing.T) {
	o, conn, committed := newTestOutput(t)
	ctx := t.Context()
	o.Write(value.Int(1))
	o.Write(value.Int(2))
	if o.Pending() != 2 {
		t.Errorf("pending %d, want 2", o.Pending())
	}
	if _, err := o.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	o.Abort(ctx)
	if got := committed(); len(got) != 0 || o.Pending() != 2 {
		t.Errorf("after an abort: %v committed, %d pending", got, o.Pending())
	}
	state, err := o.Prepare(ctx)
	if err != nil || state == nil {
		t.Fatalf("prepare: %x, %v", state, err)
	}
	o.Commit(ctx)
	if got := committed(); !slices.Equal(got, []string{"1", "2"}) || o.Pending() != 0 {
		t.Errorf("after the commit: %v committed, %d pending", got, o.Pending())
	}

	// A checkpoint prepared, recorded, and the process gone before Commit: the next run's
	// Output, restored with its state, commits it before writing.
	o.Write(value.Int(3))
	state, err = o.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := NewOutput("k", "out", "s", false, conn, discard)
	defer next.Close()
	if err := next.Restore(ctx, state, nil); err != nil {
		t.Fatal(err)
	}
	next.Write(value.Int(4))
	if _, err := next.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	next.Commit(ctx)
	if got := committed(); !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Errorf("after the restored run: %v committed", got)
	}
	if err := next.Restore(ctx, []byte{0xff}, nil); err == nil {
		t.Error("a state that does not decode restored without an error")
	}
}

// newTestOutput starts brokers with topic "out" and returns a restored (empty) Output of sink
// "k" writing to it, the connection, and a reader of the topic's committed values.
func newTestOutput(t *testing.T) (*Output, *Conn, func() []string) {
	t.Helper()
	return newTestOutputWith(t, Cluster{})
}

// newTestOutputWith is newTestOutput with the cluster settings k, on brokers made with opts
// besides the topic.
func newTestOutputWith(t *testing.T, k Cluster, opts ...kfake.Opt) (*Output, *Conn, func() []string) {
	t.Helper()
	brokers := kafkatest.Cluster(t, append([]kfake.Opt{kfake.SeedTopics(1, "out")}, opts...)...).ListenAddrs()
	conn, err := NewConn(brokers, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	committed := func() []string {
		var out []string
		for _, r := range kafkatest.ReadTopic(t, brokers, "out", kgo.ReadCommitted()) {
			out = append(out, string(r.Value))
		}
		return out
	}
	o := NewOutput("k", "out", "s", false, conn, discard)
	t.Cleanup(o.Close)
	if err := o.Restore(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	return o, conn, committed
}
