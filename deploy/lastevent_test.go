package deploy

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A deployment lets go of what a large event decoded to once the event has gone through its
// graph, whether the event is timed by an expression (the engine's PushJSON) or by its
// arrival (decoded here and given to PushValue): before, each deployment held its last
// event, and a hostile client sent one event of 524,280 empty objects (1.5 MB of JSON, about
// 40 MB decoded) to each of 140 deployments: `fatal error: out of memory` (helper 113). Here 6
// deployments, 3 of each kind, each get one event of 500,000 integers (8 MB decoded);
// once all are committed the live heap holds less than 8 MiB more than before.
func TestDeploymentsLetGoOfTheirLastEvent(t *testing.T) {
	st := sqliteStore(t)
	graph := func(timed bool) string {
		ts := ""
		if timed {
			ts = `{"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}`
		}
		return `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [` + ts + `]}},
  {"id": "v", "type": "Variable", "varName": "v", "value": {"language": "expr", "expression": "#input.a"}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "len(#v)"}}]}}
], "edges": [{"from": "in", "to": "v", "edgeType": null}, {"from": "v", "to": "out", "edgeType": null}]}`
	}
	r := newRuntime(t, st)
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("big%d", i)
		createScenario(t, st, name, graph(i%2 == 0))
		deploy(t, r, name, 0)
		names = append(names, name)
	}
	// Integers: len(#v) converts the list within the expression's memory (16 MiB; 24 bytes an
	// integer), where 150,000 empty objects would take 53 MB and be refused.
	big := []byte(`{"ts": 1700000000000, "a": [` + strings.Repeat("0,", 499_999) + `0]}`)
	var m runtime.MemStats
	heap := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, name := range names { // a small event first: each deployment's buffers made
		if _, err := r.Ingest(context.Background(), name, "in", "", [][]byte{[]byte(`{"ts": 1700000000000, "a": [{}]}`)}); err != nil {
			t.Fatal(err)
		}
		waitCommitted(t, r, name, 1)
	}
	before := heap()
	for _, name := range names {
		if _, err := r.Ingest(context.Background(), name, "in", "", [][]byte{big}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		waitCommitted(t, r, name, 2)
	}
	after := heap()
	for _, name := range names {
		if got := collected(t, st, name); len(got) != 2 || got[1] != "500000" {
			t.Fatalf("%s collected %v, want [1 500000]", name, got)
		}
	}
	if after > before+8<<20 {
		t.Errorf("after one large event to each of 6 deployments the heap holds %d bytes more; want under 8 MiB", after-before)
	}
}
