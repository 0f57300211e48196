package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/storetest"
	"github.com/scenario-server/scenario-server/value"
)

// newStoreFunc opens a fresh, empty store for t, closed when t ends.
type newStoreFunc = storetest.Opener

var (
	sqliteStore   = storetest.OpenSQLite
	postgresStore = storetest.OpenPostgres
)

// newRuntime starts a runtime on st with a short checkpoint interval; it is shut down when t
// ends (a no-op after abort).
func newRuntime(t *testing.T, st store.Store, configure ...func(*Config)) *Runtime {
	t.Helper()
	cfg := Config{
		Store:              st,
		Logger:             slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		CheckpointInterval: 20 * time.Millisecond,
		FileSinkDir:        t.TempDir(),
		// Tests stop runtimes without a clean stop on purpose, some more often than
		// DefaultCrashLoopLimit: the crash-loop tests set a limit.
		CrashLoopLimit: -1,
	}
	for _, f := range configure {
		f(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return r
}

// tumblingGraph counts and sums v per key in 10 s tumbling windows of #input.ts (epoch ms),
// with no out-of-orderness, into the collect sink "out". sink replaces the sink's ref.
func tumblingGraph(sinkRef string) string {
	if sinkRef == "" {
		sinkRef = `{"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], start: #window.start, n: #agg.n, sum: #agg.sum}"}}]}`
	}
	return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
    {"name": "maxOutOfOrderness", "value": "2s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [
      {"name": "n", "aggregator": "Count"},
      {"name": "sum", "aggregator": "Sum", "aggregateBy": {"language": "expr", "expression": "#input.v"}}]},
    {"name": "windowLength", "value": "10s"}]},
  {"id": "out", "type": "Sink", "ref": ` + sinkRef + `}
], "edges": [
  {"from": "in", "to": "win", "edgeType": null},
  {"from": "win", "to": "out", "edgeType": null}
]}`
}

// records makes n events of 7 keys, 137 ms apart with up to 1.5 s of disorder (within the
// graph's out-of-orderness, so none is late), from epoch ms 1,700,000,000,000.
func records(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		ts := int64(1_700_000_000_000) + int64(i)*137 - int64(i%5)*300
		out[i] = fmt.Appendf(nil, `{"ts": %d, "key": "k%d", "v": %d}`, ts, i%7, i)
	}
	return out
}

// replay is what the graph gives for the records in this order with no end of input: the
// windows the watermark closed, as collect would store them.
func replay(t *testing.T, graph string, recs [][]byte) []string {
	t.Helper()
	sc, err := scenario.Decode([]byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	e, err := engine.New(sc, engine.Options{ScenarioName: "oracle", Output: func(_ string, v value.Value, _ int64) {
		out = append(out, string(value.AppendJSON(nil, v)))
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if err := e.PushJSON("in", r, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func createScenario(t *testing.T, st store.Store, name, graph string) {
	t.Helper()
	if _, err := st.CreateScenario(t.Context(), name, store.Draft{Graph: json.RawMessage(graph), Author: "test"}); err != nil {
		t.Fatal(err)
	}
}

// ingestAll sends recs in batches of size, keyed "b<first index>", retrying backpressure.
func ingestAll(t *testing.T, r *Runtime, name string, recs [][]byte, from, size int) {
	t.Helper()
	for i := from; i < len(recs); i += size {
		batch := recs[i:min(i+size, len(recs))]
		for {
			_, err := r.Ingest(t.Context(), name, "in", fmt.Sprintf("b%d", i), batch)
			var bp *BackpressureError
			if asBackpressure(err, &bp) {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("ingesting batch %d: %v", i, err)
			}
			break
		}
	}
}

func asBackpressure(err error, target **BackpressureError) bool {
	bp, ok := err.(*BackpressureError)
	if ok {
		*target = bp
	}
	return ok
}

// waitFor polls cond every 5 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCommitted waits until the scenario's running deployment has committed n events of its
// first source.
func waitCommitted(t *testing.T, r *Runtime, name string, n int64) Live {
	t.Helper()
	var l Live
	waitFor(t, fmt.Sprintf("%d events committed", n), func() bool {
		var ok bool
		l, ok = r.Live(name)
		return ok && len(l.Sources) > 0 && l.Sources[0].Committed >= n
	})
	return l
}

// collected reads every stored result of the scenario's sinks (not its dead letters), as JSON text.
func collected(t *testing.T, st store.Store, name string) []string {
	t.Helper()
	var out []string
	after := int64(0)
	for {
		page, err := st.ReadSinkResults(t.Context(), name, "", after, store.MaxReadLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return out
		}
		for _, r := range page {
			if r.Sink != DeadLetterSink {
				out = append(out, string(r.Value))
			}
		}
		after = page[len(page)-1].ID
	}
}

func equalResults(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("result %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
