package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/scenario-server/scenario-server/internal/kafkatest"
)

// kafkaCrashGraph reads the topic events (3 partitions) into hopping windows of 20 s every
// 5 s per key, written by a Kafka sink to the topic decisions: key, value and a header. The
// events of each partition come in event-time order and the partitions stay within 300 ms of
// each other, so with 10 s of out-of-orderness no event is late, whatever the interleaving:
// the windows are those of a replay in event-time order.
const kafkaCrashGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "kafka", "parameters": [
    {"name": "topic", "value": "events"},
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
    {"name": "maxOutOfOrderness", "value": "10s"}]}},
  {"id": "hop", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [
      {"name": "n", "aggregator": "Count"},
      {"name": "sum", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.v"}}]},
    {"name": "windowLength", "value": "20s"},
    {"name": "slide", "value": "5s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [
    {"name": "topic", "value": "decisions"},
    {"name": "key", "expression": {"language": "expr", "expression": "#key[0]"}},
    {"name": "value", "expression": {"language": "expr", "expression": "{start: #window.start, n: #agg.n, sum: #agg.sum}"}},
    {"name": "headers", "expression": {"language": "expr", "expression": "{n: #agg.n}"}}]}}
], "edges": [{"from": "in", "to": "hop", "edgeType": null}, {"from": "hop", "to": "out", "edgeType": null}]}`

// A deployed scenario reads a Kafka topic of 3 partitions into hopping windows and writes
// them with a Kafka sink, while the server is killed with SIGKILL at three random points
// (seeded, logged) as the events are produced, and restarted each time. A read_committed
// consumer of the sink's topic then sees exactly the results of `scenario-server run` on the
// same events, none missing, none twice. On SQLite and on PostgreSQL.
func TestKafkaCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := buildServer(t, raceEnabled)
	seed := crashSeed(t)

	// 6,000 events 100 ms apart, of 7 keys, then a sentinel per partition an hour later: it
	// closes every window of the events, and only its own stay open.
	const n = 6000
	base := int64(1_700_000_000_000)
	var events [][]byte
	for i := range n {
		events = append(events, fmt.Appendf(nil, `{"ts": %d, "key": "k%d", "v": %d}`, base+int64(i)*100, i%7, i))
	}
	for range 3 {
		events = append(events, fmt.Appendf(nil, `{"ts": %d, "key": "zz", "v": 0}`, base+3_600_000))
	}
	graphFile := filepath.Join(t.TempDir(), "kafka-crash.json")
	if err := os.WriteFile(graphFile, []byte(kafkaCrashGraph), 0o600); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, v := range runFile(t, bin, graphFile, append(bytes.Join(events, []byte("\n")), '\n')) {
		if !strings.Contains(v, `"key":"zz"`) {
			want = append(want, v)
		}
	}
	if len(want) < 100 {
		t.Fatalf("`scenario-server run` gives %d windows", len(want))
	}
	slices.Sort(want)

	for i, st := range []func(*testing.T) serverStore{sqliteServerStore, postgresServerStore} {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		t.Run([]string{"SQLite", "PostgreSQL"}[i], func(t *testing.T) {
			t.Parallel()
			kafkaCrashRun(t, bin, st(t), rng, events, want)
		})
	}
}

func kafkaCrashRun(t *testing.T, bin string, st serverStore, rng *rand.Rand, events [][]byte, want []string) {
	const name, batchSize = "kafka in and out", 100
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "events"), kfake.SeedTopics(1, "decisions"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	flags := []string{"--checkpoint-interval", "100ms", "--crash-loop-limit", "0", "--kafka-brokers", brokers}
	srv := startServer(t, bin, st, flags...)
	graph := json.RawMessage(kafkaCrashGraph)
	srv.mustCall(http.MethodPost, "/api/scenarios", map[string]any{"name": name, "graph": graph}, http.StatusCreated, nil)
	srv.mustCall(http.MethodPost, "/api/scenarios/kafka%20in%20and%20out/deploy", map[string]any{"comment": "crash test"}, http.StatusOK, nil)

	nBatches := (len(events) + batchSize - 1) / batchSize
	points := rng.Perm(nBatches - 2)[:3]
	for i := range points {
		points[i]++
	}
	slices.Sort(points)
	for b := range nBatches {
		var recs []*kgo.Record
		for i := b * batchSize; i < min((b+1)*batchSize, len(events)); i++ {
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: events[i]})
		}
		if err := prod.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(points, b) {
			time.Sleep(time.Duration(rng.IntN(41)) * time.Millisecond)
			continue
		}
		delay := time.Duration(rng.IntN(150)) * time.Millisecond
		time.Sleep(delay)
		srv.kill()
		t.Logf("%s: SIGKILL %v after producing batch %d (events %d-%d)", st.name, delay, b, b*batchSize, min((b+1)*batchSize, len(events))-1)
		srv = startServer(t, bin, st, flags...)
	}
	lc := srv.waitCommitted(name, int64(len(events)), 2*time.Minute)
	srv.stop() // the final checkpoint commits the last transaction

	// Said before the records, whose first difference ends the test: late events explain
	// a window counted short.
	if lc.Nodes["hop"].Late != 0 || lc.Nodes["in"].Errors != 0 {
		t.Errorf("%d late events, %d source errors: the replay is not the oracle", lc.Nodes["hop"].Late, lc.Nodes["in"].Errors)
	}
	got := readTopic(t, c.ListenAddrs(), "decisions", kgo.ReadCommitted())
	slices.Sort(got)
	if len(got) != len(want) {
		t.Errorf("%d records read_committed, `scenario-server run` gives %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("record %d (sorted):\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	all := readTopic(t, c.ListenAddrs(), "decisions", kgo.ReadUncommitted())
	t.Logf("%s: %d events over 3 kills; %d records read_committed, equal to `scenario-server run`; %d read_uncommitted (aborted transactions' records too)",
		st.name, len(events), len(got), len(all))
}

// readTopic reads topic with the isolation level given, each record as {key, value, headers}
// normalized JSON (the key and header values parsed as JSON when they are, else as strings).
func readTopic(t *testing.T, brokers []string, topic string, level kgo.IsolationLevel) []string {
	t.Helper()
	var out []string
	for _, r := range kafkatest.ReadTopic(t, brokers, topic, level) {
		h := map[string]json.RawMessage{}
		for _, x := range r.Headers {
			h[x.Key] = x.Value
		}
		b, err := json.Marshal(map[string]any{"key": string(r.Key), "value": json.RawMessage(r.Value), "headers": h})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, normJSON(t, b))
	}
	return out
}
