package deploy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// readDeadLetters reads the scenario's dead letters, in order.
func readDeadLetters(t *testing.T, st store.Store, name string) []DeadLetter {
	t.Helper()
	page, err := st.ReadSinkResults(t.Context(), name, DeadLetterSink, 0, store.MaxReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]DeadLetter, len(page))
	for i, r := range page {
		if err := json.Unmarshal(r.Value, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Two poison events (one without its timestamp, one whose timestamp is not a time) among 300
// good ones, with two crashes in between: the deployment goes on, each poison event is in the
// dead-letter list exactly once with its log offset (100 and 201: the good events before
// them, worked out by hand), node, field and record, and the results equal a replay of the
// good events alone (a failed timestamp moves no watermark, so nothing else changes). The
// second has a byte that is not UTF-8 in a string: its record is kept with U+FFFD for it
// (PostgreSQL's json column refused it, and every checkpoint after it failed: a hostile
// client froze the deployment for good, cancel and deploy again included).
func testDeadLetters(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "poison", graph)
	good := records(300)
	noTime := []byte(`{"key": "k1", "v": 1}`)
	badTime := []byte("{\"ts\": \"yesterday\xff\", \"key\": \"k2\", \"v\": 2}")
	all := slices.Concat(good[:100], [][]byte{noTime}, good[100:200], [][]byte{badTime}, good[200:])
	config := func(c *Config) { c.CheckpointInterval = 20 * time.Millisecond }
	r := newRuntime(t, st, config)
	deploy(t, r, "poison", 0)
	sent := 0
	for _, crashAt := range []int{150, 250} {
		ingestAll(t, r, "poison", all[:crashAt], sent, 50)
		sent = crashAt
		waitCommitted(t, r, "poison", int64(crashAt))
		r.abort()
		r = newRuntime(t, st, config)
	}
	ingestAll(t, r, "poison", all, sent, 50)
	l := waitCommitted(t, r, "poison", int64(len(all)))
	if l.Nodes["in"].Errors != 2 || l.Errors != 2 {
		t.Errorf("source errors %d, deployment errors %d, want 2 and 2", l.Nodes["in"].Errors, l.Errors)
	}
	dls := readDeadLetters(t, st, "poison")
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dls), dls)
	}
	for i, want := range []struct {
		offset int64
		record []byte
	}{{100, noTime}, {201, []byte(`{"ts": "yesterday` + "\uFFFD" + `", "key": "k2", "v": 2}`)}} {
		d := dls[i]
		var compact bytes.Buffer
		if err := json.Compact(&compact, want.record); err != nil {
			t.Fatal(err)
		}
		offset := int64(-1)
		if d.Offset != nil {
			offset = *d.Offset
		}
		if d.Source != "in" || d.NodeID != "in" || d.Field != "timestamp" || offset != want.offset ||
			string(d.Record) != compact.String() || d.Message == "" || d.Partition != nil {
			t.Errorf("dead letter %d: %+v (offset %d, record %s), want source in, node in, field timestamp, offset %d, record %s",
				i, d, offset, d.Record, want.offset, compact.String())
		}
	}
	var results []string
	page, err := st.ReadSinkResults(t.Context(), "poison", "out", 0, store.MaxReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page {
		results = append(results, string(r.Value))
	}
	equalResults(t, results, replay(t, graph, good))
}

// deadLetterForEachGraph sends each element of 1..#input.n to a collect sink whose value fails
// (a division by zero).
const deadLetterForEachGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "el", "parameters": [
    {"name": "Elements", "expression": {"language": "expr", "expression": "1..#input.n"}}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#el % (#el - #el)"}}]}}
], "edges": [{"from": "in", "to": "each", "edgeType": null}, {"from": "each", "to": "out", "edgeType": null}]}`

// One event whose for-each makes 250 failing elements keeps MaxDeadLettersPerEvent (100) dead
// letters of them and one more saying that 150 were not kept; the next event, of 3 failing
// elements, keeps its 3. The node's error count has all 253.
func testDeadLettersPerEventBounded(t *testing.T, st store.Store) {
	graph := deadLetterForEachGraph
	createScenario(t, st, "failing", graph)
	r := newRuntime(t, st)
	deploy(t, r, "failing", 0)
	first, second := []byte(`{"ts":1000,"n":250}`), []byte(`{"ts":2000,"n":3}`) // compact, as kept
	if _, err := r.Ingest(t.Context(), "failing", "in", "", [][]byte{first, second}); err != nil {
		t.Fatal(err)
	}
	l := waitCommitted(t, r, "failing", 2)
	if l.Nodes["out"].Errors != 253 {
		t.Errorf("the sink's errors: %d, want 253", l.Nodes["out"].Errors)
	}
	dls := readDeadLetters(t, st, "failing")
	if len(dls) != 104 {
		t.Fatalf("%d dead letters, want 100 + 1 + 3", len(dls))
	}
	for i, d := range dls {
		offset, node, record := int64(0), "out", first
		switch {
		case i == 100:
			node = ""
			if !strings.HasPrefix(d.Message, "150 more per-event errors of this event are not kept") {
				t.Errorf("dead letter %d: %q, want the count of the 150 not kept", i, d.Message)
			}
		case i > 100:
			offset, record = 1, second
		}
		if d.Offset == nil || *d.Offset != offset || d.NodeID != node || d.Source != "in" || !bytes.Equal(d.Record, record) {
			t.Errorf("dead letter %d: %+v; want offset %d, node %q, record %s", i, d, offset, node, record)
		}
	}
}

// The dead letters of one event keep at most MaxDeadLetterRecordsPerEvent (256 KiB) of its
// record: an event of 100,000 bytes is kept as the JSON string of its first 64 KiB (65,543
// bytes: 2 quotes, and a backslash before each of the 5 quotes in those 64 KiB), so of its 5
// failing elements' dead letters the first 3 have it (196,629 bytes; a 4th would make
// 262,172) and the last 2 say recordOmitted.
func testDeadLetterRecordsPerEventBounded(t *testing.T, st store.Store) {
	createScenario(t, st, "failing", strings.Replace(deadLetterForEachGraph, "1..#input.n", "1..5", 1))
	r := newRuntime(t, st)
	deploy(t, r, "failing", 0)
	event := []byte(`{"ts": 1000, "pad": "` + strings.Repeat("x", 100_000-len(`{"ts": 1000, "pad": ""}`)) + `"}`)
	if len(event) != 100_000 {
		t.Fatalf("the event is %d bytes", len(event))
	}
	if _, err := r.Ingest(t.Context(), "failing", "in", "", [][]byte{event}); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, r, "failing", 1)
	dls := readDeadLetters(t, st, "failing")
	if len(dls) != 5 {
		t.Fatalf("%d dead letters, want 5", len(dls))
	}
	for i, d := range dls {
		kept := i < 3
		if kept != (len(d.Record) == 65_543) || kept != d.RecordTruncated || kept == d.RecordOmitted {
			t.Errorf("dead letter %d: record %d bytes, truncated %v, omitted %v; want kept %v", i, len(d.Record), d.RecordTruncated, d.RecordOmitted, kept)
		}
	}
}
