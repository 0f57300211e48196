package deploy

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// An HTTP source with a 1 s idle timeout into 10 s tumbling counts; an event with big true
// also writes a 100 kB collect result, past the 64 KiB bound on pending results
// (restoreBacklogBound), so that a read stops after it and, while checkpoints fail, nothing
// more is read.
const restoreBacklogGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}},
    {"name": "maxOutOfOrderness", "value": "2s"}, {"name": "idleTimeout", "value": "1s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-tumbling", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.key"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "10s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{start: #window.start, n: #agg.n}"}}]}},
  {"id": "sp", "type": "Split"},
  {"id": "big", "type": "Filter", "expression": {"language": "expr", "expression": "#input.big"}},
  {"id": "bigout", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "repeat('x', 100000)"}}]}}
], "edges": [
  {"from": "in", "to": "sp", "edgeType": null},
  {"from": "sp", "to": "win", "edgeType": null},
  {"from": "win", "to": "out", "edgeType": null},
  {"from": "sp", "to": "big", "edgeType": null},
  {"from": "big", "to": "bigout", "edgeType": {"type": "FilterTrue"}}
]}`

func restoreBacklogBound(c *Config) { c.MaxPendingResultBytes = 64 << 10 }

// A deployment restored with a backlog in its HTTP source's event log does not let an idle
// step pass the backlog (found by review). The log holds, accepted while the server was
// down: 4,000 events 5 ms apart from 0 s (the 2,000th and the 4,000th big), 2,000 events
// 1 ms apart from 18 s, and one at 40 s; the restored deployment reads the first 2,000 (a
// read is at most 2,000) and its big result fills the pending bound while the store fails
// commits for 3 s (three idle timeouts), so nothing more is read meanwhile. Worked by hand:
// [0 s, 10 s) counts 2,000 and [10 s, 20 s) 4,000 (the window at 40 s stays open), none late.
// The restored source counted as accepted only its checkpoint's position, so the idle step
// saw nothing waiting and moved the watermark on with the wall clock: 2,000 events came
// late and [10 s, 20 s) counted 2,000.
func TestRestoredBacklogHoldsTheIdleStep(t *testing.T) {
	st := &failingCommits{Store: sqliteStore(t)}
	createScenario(t, st, "backlog", restoreBacklogGraph)
	r1 := newRuntime(t, st, restoreBacklogBound)
	deploy(t, r1, "backlog", 0)
	if err := r1.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000)
	var events [][]byte
	for i := range 4000 {
		events = append(events, fmt.Appendf(nil, `{"ts": %d, "key": "k", "big": %v}`, base+int64(i)*5, i%2000 == 1999))
	}
	for i := range 2000 {
		events = append(events, fmt.Appendf(nil, `{"ts": %d, "key": "k", "big": false}`, base+18000+int64(i)))
	}
	events = append(events, fmt.Appendf(nil, `{"ts": %d, "key": "k", "big": false}`, base+40000))
	if _, err := st.AppendEventBatch(t.Context(), store.EventLog{Scenario: "backlog", Source: "in"}, "", events); err != nil {
		t.Fatal(err)
	}
	st.fail.Store(1 << 30)
	r2 := newRuntime(t, st, restoreBacklogBound)
	waitFor(t, "the first read processed, its checkpoint failed", func() bool {
		l, ok := r2.Live("backlog")
		return ok && len(l.Sources) > 0 && l.Sources[0].Processed >= 2000 && st.failed.Load() > 0
	})
	time.Sleep(3 * time.Second) // the store away for three idle timeouts
	st.fail.Store(0)
	l := waitCommitted(t, r2, "backlog", int64(len(events)))
	var windows []string
	for _, r := range collected(t, st, "backlog") {
		if len(r) < 100 {
			windows = append(windows, r)
		}
	}
	want := []string{fmt.Sprintf(`{"start":%d,"n":2000}`, base), fmt.Sprintf(`{"start":%d,"n":4000}`, base+10000)}
	if late := l.Nodes["win"].Late; late != 0 || !slices.Equal(windows, want) {
		t.Errorf("%d late, windows %v; want none late, windows %v", late, windows, want)
	}
}
