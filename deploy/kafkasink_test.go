package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/scenario-server/scenario-server/connector/kafka"
	"github.com/scenario-server/scenario-server/internal/kafkatest"
	"github.com/scenario-server/scenario-server/store"
)

// kafkaSinkRef is a Kafka sink writing the window results to topic: key #key[0], the value
// collect's, a header n.
func kafkaSinkRef(topic string) string {
	return `{"typ": "kafka", "parameters": [{"name": "topic", "value": "` + topic + `"},
	  {"name": "key", "expression": {"language": "expr", "expression": "#key[0]"}},
	  {"name": "value", "expression": {"language": "expr", "expression": "{start: #window.start, n: #agg.n, sum: #agg.sum}"}},
	  {"name": "headers", "expression": {"language": "expr", "expression": "{n: #agg.n, none: nil}"}}]}`
}

// kafkaSinkGraph reads topic in from Kafka into tumbling windows written to topic out.
func kafkaSinkGraph(t *testing.T, in, out string) string {
	t.Helper()
	g := tumblingGraph(kafkaSinkRef(out))
	return replaceOnce(t, g, `"typ": "http", "parameters": [`, `"typ": "kafka", "parameters": [{"name": "topic", "value": "`+in+`"},`)
}

// kafkaRecordJSON is a consumed record as the engine's output for it: {key, value, headers}
// with the key and header values as JSON (strings quoted), normalised by a JSON round trip.
func kafkaRecordJSON(t *testing.T, r *kgo.Record) string {
	t.Helper()
	h := map[string]json.RawMessage{}
	for _, x := range r.Headers {
		h[x.Key] = x.Value
	}
	b, err := json.Marshal(map[string]any{"key": string(r.Key), "value": json.RawMessage(r.Value), "headers": h})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// normalJSON re-encodes JSON text with sorted keys.
func normalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// consumeAll reads topic from its start to its end offsets (kafkatest.ReadTopic).
var consumeAll = kafkatest.ReadTopic

// committedOutput is what a read_committed consumer of topic sees, as engine output JSON.
func committedOutput(t *testing.T, brokers []string, topic string, opts ...kgo.Opt) []string {
	t.Helper()
	var out []string
	for _, r := range consumeAll(t, brokers, topic, kgo.ReadCommitted(), opts...) {
		out = append(out, normalJSON(t, kafkaRecordJSON(t, r)))
	}
	return out
}

// kafkaOracle is the engine's output of the Kafka sink graph for recs, normalised, without
// the null headers (a Kafka sink leaves them out).
func kafkaOracle(t *testing.T, recs [][]byte) []string {
	t.Helper()
	want := replay(t, tumblingGraph(kafkaSinkRef("x")), recs)
	for i := range want {
		var rec struct {
			Key     any            `json:"key"`
			Value   any            `json:"value"`
			Headers map[string]any `json:"headers"`
		}
		if err := json.Unmarshal([]byte(want[i]), &rec); err != nil {
			t.Fatal(err)
		}
		if v, ok := rec.Headers["none"]; !ok || v != nil {
			t.Fatalf("output %s has no null header", want[i])
		}
		delete(rec.Headers, "none")
		b, _ := json.Marshal(rec)
		want[i] = normalJSON(t, string(b))
	}
	return want
}

// A Kafka sink over two crashes: a read_committed consumer of its topic sees exactly the
// replay's results, none missing, none twice; the records of the checkpoints lost in the
// crashes were produced in transactions that were aborted.
func testKafkaSinkExactlyOnce(t *testing.T, st store.Store) {
	brokers, prod := newKafka(t, map[string]int32{"events": 1, "decisions": 1})
	createScenario(t, st, "k", kafkaSinkGraph(t, "events", "decisions"))
	recs := records(3000)
	withBrokers := func(c *Config) { c.KafkaBrokers = brokers; c.CheckpointInterval = 30 * time.Millisecond }
	r := newRuntime(t, st, withBrokers)
	deploy(t, r, "k", 0)
	for i, cut := range []int{1000, 2000, 3000} {
		produce(t, prod, "events", 0, recs[cut-1000:cut], nil)
		waitFor(t, "the records read", func() bool { l, _ := r.Live("k"); return l.Sources[0].Processed == int64(cut) })
		if i < 2 {
			r.abort() // a crash: what was not checkpointed is read again
			r = newRuntime(t, st, withBrokers)
		}
	}
	waitCommitted(t, r, "k", 3000)
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := committedOutput(t, brokers, "decisions")
	equalResults(t, got, kafkaOracle(t, recs))
	if l, ok := r.Live("k"); ok && l.CheckpointError != "" {
		t.Errorf("checkpoint error %q", l.CheckpointError)
	}
}

// failingCommits is a store whose checkpoint commits fail while fail is above 0 (each
// failure counts it down, and counts into failed); most is the most results a failed commit
// was given.
type failingCommits struct {
	store.Store
	fail         atomic.Int32
	failed, most atomic.Int64
}

var errInjected = errors.New("injected store failure")

func (f *failingCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if f.fail.Add(-1) >= 0 {
		f.failed.Add(1)
		for m := f.most.Load(); int64(len(results)) > m && !f.most.CompareAndSwap(m, int64(len(results))); {
			m = f.most.Load()
		}
		return store.Checkpoint{}, nil, errInjected
	}
	f.fail.Store(0)
	return f.Store.CommitCheckpoint(ctx, c, results)
}

// When the store does not commit a checkpoint, the Kafka transaction holding its records is
// aborted once the store decided so (the commit's error does not say: a fence on top of the
// previous checkpoint is committed, after two more failures), and the records are produced
// again in the next checkpoint's transaction: a read_committed consumer sees each once; a
// read_uncommitted one sees the aborted copies too.
func testKafkaSinkStoreCommitFails(t *testing.T, st store.Store) {
	brokers, prod := newKafka(t, map[string]int32{"events": 1, "decisions": 1})
	createScenario(t, st, "k", kafkaSinkGraph(t, "events", "decisions"))
	fs := &failingCommits{Store: st}
	r := newRuntime(t, fs, func(c *Config) { c.KafkaBrokers = brokers })
	deploy(t, r, "k", 0)
	recs := records(2000)
	fs.fail.Store(3)
	produce(t, prod, "events", 0, recs, nil)
	waitCommitted(t, r, "k", 2000)
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fs.fail.Load() != 0 {
		t.Fatalf("%d injected failures left: the test did not test anything", fs.fail.Load())
	}
	want := kafkaOracle(t, recs)
	equalResults(t, committedOutput(t, brokers, "decisions"), want)
	all := consumeAll(t, brokers, "decisions", kgo.ReadUncommitted())
	if len(all) <= len(want) {
		t.Errorf("read_uncommitted: %d records, want more than the %d committed (the aborted copies)", len(all), len(want))
	}
}

// A restart fences the previous run's producers: a producer of the sink's transactional ids
// left with an open transaction (a zombie: a server cut off, still running) cannot commit
// it once the deployment has started again, and a read_committed consumer never sees its
// records.
func testKafkaSinkFencesZombies(t *testing.T, st store.Store) {
	brokers, prod := newKafka(t, map[string]int32{"events": 1, "decisions": 1})
	createScenario(t, st, "k", kafkaSinkGraph(t, "events", "decisions"))
	withBrokers := func(c *Config) { c.KafkaBrokers = brokers }
	r := newRuntime(t, st, withBrokers)
	deploy(t, r, "k", 0)
	recs := records(1000)
	produce(t, prod, "events", 0, recs, nil)
	waitCommitted(t, r, "k", 1000)
	r.abort()

	var zombies []*kgo.Client
	for _, slot := range []string{"0", "1"} {
		z, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(DefaultKafkaClientID+".k.out."+slot),
			kgo.DefaultProduceTopic("decisions"))
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		if err := z.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := z.ProduceSync(t.Context(), &kgo.Record{Value: []byte(`{"zombie": ` + slot + `}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		zombies = append(zombies, z)
	}
	r = newRuntime(t, st, withBrokers)
	produce(t, prod, "events", 0, [][]byte{[]byte(`{"ts": 1800000000000, "key": "k0", "v": 1}`)}, nil)
	waitCommitted(t, r, "k", 1001)
	for i, z := range zombies {
		err := z.EndTransaction(t.Context(), kgo.TryCommit)
		// Fenced: the new producer's epoch is above the zombie's (KIP-890 brokers answer that
		// its transaction was aborted, by the new producer's initialisation).
		if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) &&
			!errors.Is(err, kerr.InvalidProducerIDMapping) && !errors.Is(err, kerr.InvalidTxnState) {
			t.Errorf("zombie %d: commit %v, want it refused", i, err)
		}
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := committedOutput(t, brokers, "decisions")
	for _, g := range got {
		if strings.Contains(g, "zombie") {
			t.Errorf("a zombie's record was committed: %s", g)
		}
	}
	// The record at +100 s closes the windows before it: all of recs' windows are out.
	equalResults(t, got, kafkaOracle(t, append(recs, []byte(`{"ts": 1800000000000, "key": "k0", "v": 1}`))))
}

// crashAfterCommit is a store that, once armed, commits a checkpoint and then hangs until
// the runtime is aborted: the process dies between the store's commit and Kafka's.
type crashAfterCommit struct {
	store.Store
	armed     atomic.Bool
	committed chan struct{}
}

func (c *crashAfterCommit) CommitCheckpoint(ctx context.Context, cp store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if !c.armed.Load() {
		return c.Store.CommitCheckpoint(ctx, cp, results)
	}
	state, err := decodeState(cp.State)
	kafkaTxns := 0
	for _, o := range state.outputs {
		if o.kind == "Sink/kafka" {
			kafkaTxns++
		}
	}
	if err != nil || kafkaTxns == 0 {
		return c.Store.CommitCheckpoint(ctx, cp, results) // no Kafka transaction to leave open
	}
	c.armed.Store(false)
	if _, _, err := c.Store.CommitCheckpoint(context.WithoutCancel(ctx), cp, results); err != nil {
		return store.Checkpoint{}, nil, err
	}
	close(c.committed)
	<-ctx.Done()
	return store.Checkpoint{}, nil, ctx.Err()
}

// The server dies after the store committed a checkpoint and before Kafka committed its
// transaction: the restart commits the transaction from the checkpoint's record (EndTxn with
// its producer id and epoch) before anything else, and the consumer sees each result once.
func testKafkaSinkCrashBetweenCommits(t *testing.T, st store.Store) {
	cs := &crashAfterCommit{Store: st, committed: make(chan struct{})}
	brokers, recs := kafkaSinkCrash(t, st, cs, &cs.armed, cs.committed, func(brokers []string) {
		// The checkpoint's transaction is open, its records produced.
		if len(consumeAll(t, brokers, "decisions", kgo.ReadUncommitted())) == 0 {
			t.Fatal("the checkpoint's transaction produced nothing")
		}
	})
	equalResults(t, committedOutput(t, brokers, "decisions"), kafkaOracle(t, recs))
}

// kafkaSinkCrash runs the Kafka sink graph (topic events to topic decisions, made on new
// brokers) on faulty, a store over st, armed before the first 1000 of 2000 records are
// produced; once crashed closes the server dies (abort) and afterCrash, when not nil, looks
// at the brokers. Then a server on st reads the other 1000 and stops once all are committed.
func kafkaSinkCrash(t *testing.T, st, faulty store.Store, armed *atomic.Bool, crashed <-chan struct{}, afterCrash func(brokers []string)) ([]string, [][]byte) {
	t.Helper()
	brokers, prod := newKafka(t, map[string]int32{"events": 1, "decisions": 1})
	createScenario(t, st, "k", kafkaSinkGraph(t, "events", "decisions"))
	withBrokers := func(c *Config) { c.KafkaBrokers = brokers }
	r := newRuntime(t, faulty, withBrokers)
	deploy(t, r, "k", 0)
	recs := records(2000)
	armed.Store(true)
	produce(t, prod, "events", 0, recs[:1000], nil)
	select {
	case <-crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("the store's fault did not happen")
	}
	r.abort()
	if afterCrash != nil {
		afterCrash(brokers)
	}

	r = newRuntime(t, st, withBrokers)
	produce(t, prod, "events", 0, recs[1000:], nil)
	waitCommitted(t, r, "k", int64(len(recs)))
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	return brokers, recs
}

// A Kafka source's topic given under Nussknacker's name (Topic) is the same input as under
// this server's: a redeploy that renames the parameter keeps the positions.
func TestSourceIdentityOfAliasedTopic(t *testing.T) {
	g := func(name string) []byte {
		return []byte(strings.Replace(kafkaGraph(t, "events", "2s"), `{"name": "topic", "value": "events"}`, `{"name": "`+name+`", "value": "events"}`, 1))
	}
	r := newRuntime(t, sqliteStore(t))
	a, b := r.sourceIdentities(g("topic")), r.sourceIdentities(g("Topic"))
	if a["in"] == "" || a["in"] != b["in"] || !strings.Contains(a["in"], "events") {
		t.Errorf("identities %q and %q, want one naming the topic", a["in"], b["in"])
	}
}

// Without brokers, a version with a Kafka sink does not deploy: the sink's problem says how to
// start the server.
func TestKafkaSinkNeedsBrokers(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	createScenario(t, st, "k", tumblingGraph(kafkaSinkRef("decisions")))
	r := newRuntime(t, st)
	_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "k"})
	var inv *InvalidVersionError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].NodeID != "out" || inv.Problems[0].Code != "kafka-not-configured" ||
		!strings.Contains(inv.Problems[0].Message, "--kafka-brokers") {
		t.Errorf("deploying a Kafka sink without brokers: %v", err)
	}
}

// A Kafka sink's record past kafka.MaxRecordBytes is a per-event error at the sink's value
// and a dead letter; the records before and after it are written and the deployment goes
// on. Before, the producer refused the record (MESSAGE_TOO_LARGE), and with it every
// checkpoint, forever. The value is the JSON string of n x's: n+2 bytes.
func TestKafkaSinkRecordBounded(t *testing.T) {
	st := sqliteStore(t)
	brokers, _ := newKafka(t, map[string]int32{"out": 1})
	graph := `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "out"},
    {"name": "value", "expression": {"language": "expr", "expression": "repeat(\"x\", #input.n)"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`
	createScenario(t, st, "big", graph)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers; c.CheckpointInterval = 30 * time.Millisecond })
	deploy(t, r, "big", 0)
	// The third record is one byte past the bound; the fourth past the producer's own
	// (1,000,012 bytes a batch).
	sizes := []int{10, kafka.MaxRecordBytes - 2, kafka.MaxRecordBytes - 1, 1_000_100, 20}
	var recs [][]byte
	for i, n := range sizes {
		recs = append(recs, fmt.Appendf(nil, `{"ts": %d, "n": %d}`, 1_700_000_000_000+i, n))
	}
	ingestAll(t, r, "big", recs, 0, 1)
	l := waitCommitted(t, r, "big", int64(len(recs)))
	if l.Nodes["out"].Errors != 2 {
		t.Errorf("sink errors %d, want 2", l.Nodes["out"].Errors)
	}
	var got []int
	for _, rec := range consumeAll(t, brokers, "out", kgo.ReadCommitted()) {
		got = append(got, len(rec.Value))
	}
	if want := []int{12, kafka.MaxRecordBytes, 22}; !slices.Equal(got, want) {
		t.Errorf("record values of %v bytes, want %v", got, want)
	}
	dls := readDeadLetters(t, st, "big")
	if len(dls) != 2 {
		t.Fatalf("dead letters %+v, want 2", dls)
	}
	for i, want := range []struct{ offset, bytes int }{{2, kafka.MaxRecordBytes + 1}, {3, 1_000_102}} {
		d := dls[i]
		if d.NodeID != "out" || d.Field != "value" || d.Offset == nil || *d.Offset != int64(want.offset) ||
			!strings.Contains(d.Message, fmt.Sprintf("would be %d bytes", want.bytes)) {
			t.Errorf("dead letter %d: %+v, want one at node out, field value, offset %d, of a record of %d bytes", i, d, want.offset, want.bytes)
		}
	}
}

// A Kafka sink whose topic takes less than the producer's 1,000,012 bytes a batch
// (max.message.bytes 2,000 here) bounds its records and batches by it: a record of more than
// 2,000 − 101 = 1,899 bytes is a per-event error and a dead letter, one of 1,899 is written,
// and 30 records of 102 bytes, whose batch would pass 2,000 bytes, are written in several
// batches. Before, the brokers refused the batch (MESSAGE_TOO_LARGE) and with it every
// checkpoint, forever. The values are random hex strings (n+2 bytes of JSON), which the
// producer's compression does not shrink below the bound.
func TestKafkaSinkTopicMaxMessageBytes(t *testing.T) {
	st, brokers, r := boundedTopicSink(t, "small", 2000)
	rng := rand.New(rand.NewPCG(1, 2))
	hex := func(n int) string { return randomHex(rng, n) }
	var recs [][]byte
	var want []string
	for i := range 30 {
		s := hex(100)
		want = append(want, `"`+s+`"`)
		recs = append(recs, fmt.Appendf(nil, `{"ts": %d, "s": %q}`, 1_700_000_000_000+i, s))
	}
	fits, past := hex(1_897), hex(1_898)
	want = append(want, `"`+fits+`"`)
	recs = append(recs, fmt.Appendf(nil, `{"ts": 1700000000030, "s": %q}`, fits), fmt.Appendf(nil, `{"ts": 1700000000031, "s": %q}`, past))
	ingestAll(t, r, "small", recs, 0, 1)
	l := waitCommitted(t, r, "small", int64(len(recs)))
	if l.Nodes["out"].Errors != 1 || l.CheckpointError != "" {
		t.Errorf("sink errors %d, checkpoint error %q; want 1 error and none", l.Nodes["out"].Errors, l.CheckpointError)
	}
	var got []string
	for _, rec := range consumeAll(t, brokers, "small", kgo.ReadCommitted()) {
		got = append(got, string(rec.Value))
	}
	if !slices.Equal(got, want) {
		t.Errorf("%d records written, want %d: the 30 small ones and the one of 1,899 bytes", len(got), len(want))
	}
	dls := readDeadLetters(t, st, "small")
	if len(dls) != 1 || dls[0].Offset == nil || *dls[0].Offset != 31 ||
		!strings.Contains(dls[0].Message, "would be 1900 bytes (key 0, value 1900, headers 0), more than the 1899 a record may be in its topic") {
		t.Errorf("dead letters %+v, want one at offset 31 of a record of 1,900 bytes", dls)
	}
}

// A topic whose max.message.bytes is under the 512 bytes franz-go's batches may be bounded
// at (300 here) takes the sink's records one at a time: 5 records of 102 bytes (random hex,
// which compression does not shrink) are written, each a batch of its own (61 bytes of header
// and about 10 of lengths with it, within 300), though two would pass it. Before, they went in
// one batch and the brokers refused it, and every checkpoint failed.
func TestKafkaSinkTinyTopic(t *testing.T) {
	_, brokers, r := boundedTopicSink(t, "tiny", 300)
	rng := rand.New(rand.NewPCG(3, 4))
	var recs [][]byte
	var want []string
	for i := range 5 {
		s := randomHex(rng, 100)
		want = append(want, `"`+s+`"`)
		recs = append(recs, fmt.Appendf(nil, `{"ts": %d, "s": %q}`, 1_700_000_000_000+i, s))
	}
	ingestAll(t, r, "tiny", recs, 0, 5)
	l := waitCommitted(t, r, "tiny", 5)
	if l.Errors != 0 || l.CheckpointError != "" {
		t.Errorf("%d errors, checkpoint error %q; want none", l.Errors, l.CheckpointError)
	}
	var got []string
	for _, rec := range consumeAll(t, brokers, "tiny", kgo.ReadCommitted()) {
		got = append(got, string(rec.Value))
	}
	if !slices.Equal(got, want) {
		t.Errorf("%d records written, want the 5", len(got))
	}
}

// boundedTopicSink deploys scenario name: HTTP events (#input.ts their time) whose #input.s a
// Kafka sink writes to topic name, whose max.message.bytes is bound.
func boundedTopicSink(t *testing.T, name string, bound int) (store.Store, []string, *Runtime) {
	t.Helper()
	return boundedTopicSinkOn(t, newCluster(t), name, bound)
}

// boundedTopicSinkOn is boundedTopicSink on cluster.
func boundedTopicSinkOn(t *testing.T, cluster *kfake.Cluster, name string, bound int) (store.Store, []string, *Runtime) {
	t.Helper()
	st := sqliteStore(t)
	brokers := cluster.ListenAddrs()
	cl := newProducer(t, brokers)
	createTopic(t, cl, name, 1)
	if _, err := kadm.NewClient(cl).AlterTopicConfigs(t.Context(), []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr(strconv.Itoa(bound))}}, name); err != nil {
		t.Fatal(err)
	}
	createScenario(t, st, name, `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "`+name+`"},
    {"name": "value", "expression": {"language": "expr", "expression": "#input.s"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers = brokers })
	deploy(t, r, name, 0)
	return st, brokers, r
}

// When the topic's max.message.bytes cannot be read (DescribeConfigs refused, as under a
// producer-only ACL) and a record passes it (2,000 bytes here; a value of 16,000 random hex
// digits, a JSON string of 16,002 bytes, amid records of 102), the record is a dead letter at
// the sink's value, and the others are written: the checkpoint whose batch the brokers refused
// fails, the next sends one record a batch and names the record, and the one after writes the
// rest. A second such record, written after, is refused as it is written (a per-event error at
// its offset: a record of 16,002 bytes or more). Before, every checkpoint failed with
// MESSAGE_TOO_LARGE, for good, and nothing was written again (a hostile round).
func TestKafkaSinkRecordRefusedWhenTheBoundIsNotKnown(t *testing.T) {
	cluster := newCluster(t)
	kafkatest.DenyDescribeConfigs(cluster)
	st, brokers, r := boundedTopicSinkOn(t, cluster, "acl", 2000)
	rng := rand.New(rand.NewPCG(5, 6))
	var recs [][]byte
	var want []string
	event := func(i int, s string) []byte { return fmt.Appendf(nil, `{"ts": %d, "s": %q}`, 1_700_000_000_000+i, s) }
	for i := range 3 {
		s := randomHex(rng, 100)
		want = append(want, `"`+s+`"`)
		recs = append(recs, event(i, s))
	}
	recs = append(recs, event(3, randomHex(rng, 16_000)))
	ingestAll(t, r, "acl", recs, 0, 4)
	waitCommitted(t, r, "acl", 4)
	last := randomHex(rng, 100)
	want = append(want, `"`+last+`"`)
	if _, err := r.Ingest(t.Context(), "acl", "in", "second", [][]byte{event(4, randomHex(rng, 16_000)), event(5, last)}); err != nil {
		t.Fatal(err)
	}
	l := waitCommitted(t, r, "acl", 6)
	if l.Nodes["out"].Errors != 1 {
		t.Errorf("sink errors %d; want 1 (the second record of 16,002 bytes)", l.Nodes["out"].Errors)
	}
	var got []string
	for _, rec := range consumeAll(t, brokers, "acl", kgo.ReadCommitted()) {
		got = append(got, string(rec.Value))
	}
	if !slices.Equal(got, want) {
		t.Errorf("%d records written, want the 4 of 102 bytes", len(got))
	}
	dls := readDeadLetters(t, st, "acl")
	if len(dls) != 2 || dls[0].NodeID != "out" || dls[0].Field != "value" || len(dls[0].Record) != 16_002 ||
		!strings.Contains(dls[0].Message, "the Kafka brokers refused this sink's record of 16002 bytes (key, value and headers) as too large") ||
		dls[1].Offset == nil || *dls[1].Offset != 4 || !strings.Contains(dls[1].Message, "more than the 16001 a record may be") {
		t.Errorf("dead letters %+v; want the refused record's, then one at offset 4 refused as it was written", dls)
	}
}

// randomHex is n random hex digits, which the producer's compression does not shrink much.
func randomHex(rng *rand.Rand, n int) string {
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return fmt.Sprintf("%x", b)[:n]
}

// A Kafka sink's topic deleted, written to while missing, and created again while deployed
// (a new topic ID): the records kept meanwhile and those after reach the new topic (hostile
// round: every checkpoint failed with UNKNOWN_TOPIC_ID for minutes, the producer keeping
// the old topic's ID), and the checkpoint after the first one that succeeds does not fail
// on the other producer's old ID (review: one more failure, a checkpoint's time late).
func TestKafkaSinkTopicRecreated(t *testing.T) {
	_, brokers, r := boundedTopicSink(t, "again", 1<<20)
	send := func(key, s string) {
		t.Helper()
		if _, err := r.Ingest(t.Context(), "again", "in", key, [][]byte{[]byte(`{"ts": 1, "s": "` + s + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	committed := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for l, _ := r.Live("again"); l.Sources[0].Committed < n; l, _ = r.Live("again") {
			if time.Now().After(deadline) {
				t.Fatalf("%d events committed after 20 s, want %d; the checkpoint's error: %s", l.Sources[0].Committed, n, l.CheckpointError)
			}
			if strings.Contains(l.CheckpointError, "UNKNOWN_TOPIC_ID") && n == 5 {
				t.Fatalf("a checkpoint failed on the old topic's ID after one had succeeded: %s", l.CheckpointError)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	send("first", "a") // each checkpoint's transaction on one of the two producers
	committed(1)
	send("second", "a2")
	committed(2)
	adm := kadm.NewClient(newProducer(t, brokers))
	if _, err := adm.DeleteTopics(t.Context(), "again"); err != nil {
		t.Fatal(err)
	}
	// A record while the topic is missing: its checkpoint fails, and is tried again.
	send("third", "b")
	waitFor(t, "a checkpoint failing for the missing topic", func() bool {
		l, _ := r.Live("again")
		return strings.Contains(l.CheckpointError, "UNKNOWN_TOPIC_OR_PARTITION")
	})
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, "again"); err != nil {
		t.Fatal(err)
	}
	send("fourth", "c")
	committed(4)
	send("fifth", "d")
	committed(5)
	var got []string
	for _, rec := range consumeAll(t, brokers, "again", kgo.ReadCommitted()) {
		got = append(got, string(rec.Value))
	}
	if !slices.Equal(got, []string{`"b"`, `"c"`, `"d"`}) {
		t.Errorf("the new topic holds %q, want b, c and d", got)
	}
}

// The topic's max.message.bytes lowered while deployed (from 1 MiB to 2,000): a batch of the
// 30 records of 100 bytes one event batch makes (about 3,300 bytes) is refused with
// MESSAGE_TOO_LARGE; the bound is read again and the producers made again with batches
// within it, and the records are written (before, every checkpoint failed on the same batch
// for good). A record of 5,000 bytes made after is over the bound read again: a dead letter,
// and the one after it is written.
func TestKafkaSinkTopicBoundLowered(t *testing.T) {
	st, brokers, r := boundedTopicSink(t, "lowered", 1<<20)
	rng := rand.New(rand.NewPCG(5, 6))
	var want []string
	event := func(n int) []byte {
		s := randomHex(rng, n)
		want = append(want, `"`+s+`"`)
		return fmt.Appendf(nil, `{"ts": 1700000000000, "s": %q}`, s)
	}
	ingestAll(t, r, "lowered", [][]byte{event(10)}, 0, 1)
	waitCommitted(t, r, "lowered", 1)
	if _, err := kadm.NewClient(newProducer(t, brokers)).AlterTopicConfigs(t.Context(),
		[]kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("2000")}}, "lowered"); err != nil {
		t.Fatal(err)
	}
	var batch [][]byte
	for range 30 {
		batch = append(batch, event(100))
	}
	if _, err := r.Ingest(t.Context(), "lowered", "in", "thirty", batch); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, r, "lowered", 31)
	got := func() []string {
		var out []string
		for _, rec := range consumeAll(t, brokers, "lowered", kgo.ReadCommitted()) {
			out = append(out, string(rec.Value))
		}
		return out
	}
	if g := got(); !slices.Equal(g, want) {
		t.Fatalf("%d records written, want the %d", len(g), len(want))
	}

	if _, err := r.Ingest(t.Context(), "lowered", "in", "large", [][]byte{event(5000), event(10)}); err != nil {
		t.Fatal(err)
	}
	want = slices.Delete(want, len(want)-2, len(want)-1) // the large one is a dead letter
	waitCommitted(t, r, "lowered", 33)
	if g := got(); !slices.Equal(g, want) {
		t.Errorf("%d records written, want the %d: the large one a dead letter", len(g), len(want))
	}
	if dls := readDeadLetters(t, st, "lowered"); len(dls) != 1 || !strings.Contains(dls[0].Message, "more than the 1899 a record may be in its topic") {
		t.Errorf("dead letters %+v, want the large record's", dls)
	}
}

// A stop asked for while a checkpoint waits for the Kafka brokers (here they hold every
// Produce unanswered) ends that wait: the deployment goes on to its final checkpoint, which
// fails within its own 10 s, and the cancel ends it CANCELED, not fenced off. Before, the
// regular checkpoint's wait (up to 30 s) went past the stop's wait (here 25 s), and the cancel
// fenced the deployment off (a hostile round: a sink's topic unreachable, a cancel of 20 s and
// deploys refused 409 for 27 s more).
func TestCancelEndsAKafkaSinksWait(t *testing.T) {
	cluster := newCluster(t)
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		once.Do(func() { close(held) })
		<-release
		return nil, errors.New("held"), true
	})
	t.Cleanup(func() { close(release) })
	st := sqliteStore(t)
	brokers := cluster.ListenAddrs()
	createTopic(t, newProducer(t, brokers), "held", 1)
	createScenario(t, st, "held", `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "held"},
    {"name": "value", "expression": {"language": "expr", "expression": "#input.s"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.KafkaBrokers, c.StopWait = brokers, 25*time.Second })
	deploy(t, r, "held", 0)
	if _, err := r.Ingest(t.Context(), "held", "in", "", [][]byte{[]byte(`{"ts": 1700000000000, "s": "a"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("no checkpoint produced to the brokers within 30 s")
	}
	canceled, err := r.Cancel(t.Context(), "held", "ann", "")
	if err != nil || canceled.Status != store.StatusCanceled || strings.Contains(canceled.Reason, "fenced off") {
		t.Fatalf("cancel: %+v, %v; want CANCELED, not fenced off", canceled, err)
	}
}
