package deploy

import (
	"sync"
	"testing"
	"time"
)

// The events of all deployments take at most Config.EventMemoryBytes at once by what their
// expressions may make. An event of a scenario with an expression run by expr takes what its
// variables may hold and one run may make: 64 MiB + 3 × 16 MiB = 112 MiB with the default
// budgets (engine.DefaultMaxEventBytes, expression.DefaultMemory), at most a quarter of the
// budget. Six such scenarios (the sink's value doubles a count: expr runs it), each sent three
// events, with a budget of 4 × 112 MiB, hold a multiple of 112 MiB and at most four parts at a
// time (each holds its part 20 ms), and every event goes through. A scenario whose expressions
// are all paths and records of paths (tumblingGraph's own sink) takes no part: its three
// events make no call. Before, nothing bounded them together: 150 deployments each holding
// 48 MB of strings made by a 7-byte event took 5.57 GB and ended the server (hostile round).
func TestEventMemoryBounded(t *testing.T) {
	st := sqliteStore(t)
	const part = 112 << 20
	const budget = 4 * part
	exprSink := `{"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], twice: #agg.n * 2}"}}]}`
	names := []string{"a", "b", "c", "d", "e", "f"}
	for _, n := range names {
		createScenario(t, st, n, tumblingGraph(exprSink))
	}
	createScenario(t, st, "paths", tumblingGraph(""))
	var mu sync.Mutex
	var most, calls, odd int64
	r := newRuntime(t, st, func(c *Config) { c.EventMemoryBytes = budget })
	r.onEventMemory = func(inUse int64) {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		most, calls = max(most, inUse), calls+1
		if inUse%part != 0 {
			odd++
		}
		mu.Unlock()
	}
	for _, n := range append(names, "paths") {
		deploy(t, r, n, 0)
	}
	var wg sync.WaitGroup
	for _, n := range append(names, "paths") {
		wg.Go(func() { ingestAll(t, r, n, records(3), 0, 1) })
	}
	wg.Wait()
	for _, n := range append(names, "paths") {
		waitCommitted(t, r, n, 3)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > budget || calls != 18 || odd != 0 {
		t.Errorf("event memory: %d bytes in use at most, %d events, %d in-use figures not a multiple of %d; want at most %d, 18 (not those of paths), 0",
			most, calls, odd, part, budget)
	}
	if got := r.eventMemory.inUseBytes(); got != 0 {
		t.Errorf("%d bytes still in use after every event went through, want 0", got)
	}
}
