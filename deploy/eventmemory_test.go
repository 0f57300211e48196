package deploy

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
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
	r.onEventMemory = func(inUse int64, step bool) {
		if step {
			return // an idle step's part (TestIdleStepTakesEventMemory)
		}
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

// The windows an idle source's step closes run their sinks' expressions as an event's do,
// within the event memory: a scenario of an idle timeout of 1 s and windows of 1 s, sent one
// event, takes its
// part for the steps that close its window, whose result is committed (before, a step took
// none: many deployments' idle sources close their windows at about the same time, each
// making what its expressions make, the review found).
func TestIdleStepTakesEventMemory(t *testing.T) {
	st := sqliteStore(t)
	exprSink := `{"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{key: #key[0], twice: #agg.n * 2}"}}]}`
	g := strings.Replace(tumblingGraph(exprSink), `{"name": "maxOutOfOrderness", "value": "2s"}`,
		`{"name": "maxOutOfOrderness", "value": "0s"}, {"name": "idleTimeout", "value": "1s"}`, 1)
	createScenario(t, st, "idle", strings.Replace(g, `{"name": "windowLength", "value": "10s"}`, `{"name": "windowLength", "value": "1s"}`, 1))
	var mu sync.Mutex
	calls := 0
	r := newRuntime(t, st, func(c *Config) { c.EventMemoryBytes = 4 * 112 << 20 })
	r.onEventMemory = func(_ int64, step bool) {
		mu.Lock()
		if step {
			calls++
		}
		mu.Unlock()
	}
	deploy(t, r, "idle", 0)
	ingestAll(t, r, "idle", records(1), 0, 1)
	waitFor(t, "the window closed by the idle step, committed", func() bool {
		page, err := st.ReadSinkResults(t.Context(), "idle", "out", 0, store.MaxReadLimit)
		return err == nil && len(page) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if calls < 1 {
		t.Errorf("the event memory was taken for %d steps, want at least the one that closed the window", calls)
	}
}

// Windows an idle step closes stop counting in the state all deployments share
// (Config.MaxTotalState) at once, not at the deployment's next look at its state, which with
// no more events is never: "idle" holds 30 events of 100 KiB in a List (about 3 MB, within a
// total of 4 MiB) until its idle source's step closes the window; then "busy" takes 20 such
// events (about 2 MB) and runs. Before, idle's 3 MB still counted, and busy failed on the
// total (a hostile re-test: a deployment's 300 MB of closed windows failed another's 120 MB).
func TestIdleClosedWindowsLeaveTheTotalState(t *testing.T) {
	st := sqliteStore(t)
	list := func(g string) string {
		return strings.Replace(g, `{"name": "n", "aggregator": "Count"},`,
			`{"name": "n", "aggregator": "Count"}, {"name": "l", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.pad"}},`, 1)
	}
	idle := strings.Replace(list(tumblingGraph("")), `{"name": "maxOutOfOrderness", "value": "2s"}`,
		`{"name": "maxOutOfOrderness", "value": "0s"}, {"name": "idleTimeout", "value": "1s"}`, 1)
	createScenario(t, st, "idle", strings.Replace(idle, `{"name": "windowLength", "value": "10s"}`, `{"name": "windowLength", "value": "1s"}`, 1))
	createScenario(t, st, "busy", list(tumblingGraph("")))
	r := newRuntime(t, st, func(c *Config) { c.MaxTotalState = 4 << 20 })
	deploy(t, r, "idle", 0)
	busy := deploy(t, r, "busy", 0)
	events := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = fmt.Appendf(nil, `{"ts": %d, "key": "k", "v": 1, "pad": "%s"}`, 1_700_000_000_000+int64(i), strings.Repeat("x", 100<<10))
		}
		return out
	}
	ingestAll(t, r, "idle", events(30), 0, 30)
	waitFor(t, "idle's window closed by its idle step and committed", func() bool {
		page, err := st.ReadSinkResults(t.Context(), "idle", "out", 0, store.MaxReadLimit)
		return err == nil && len(page) == 1
	})
	ingestAll(t, r, "busy", events(20), 0, 20)
	waitCommitted(t, r, "busy", 20)
	if d, err := st.GetDeployment(t.Context(), busy.ID); err != nil || d.Status != store.StatusRunning {
		t.Fatalf("busy: %s %q (%v), want RUNNING", d.Status, d.Reason, err)
	}
}
