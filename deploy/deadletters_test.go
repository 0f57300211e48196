package deploy

import (
	"bytes"
	"encoding/json"
	"slices"
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
// good events alone (a failed timestamp moves no watermark, so nothing else changes).
func testDeadLetters(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "poison", graph)
	good := records(300)
	noTime := []byte(`{"key": "k1", "v": 1}`)
	badTime := []byte(`{"ts": "yesterday", "key": "k2", "v": 2}`)
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
	}{{100, noTime}, {201, badTime}} {
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
