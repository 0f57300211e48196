package deploy

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// lockedBuffer is a log's output read while the runtime writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// slowEventGraph sends each event's elements 1..#input.n to a filter that, for an event with
// slow true, runs an expression of about 3 ms, well within every expression budget (10,000
// steps of 1,000,000, and of 1 s even under the race detector on a loaded machine: one
// evaluation of 100,000 steps took 1.003 s there): 100,000 elements make one event of minutes.
const slowEventGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "each", "type": "CustomNode", "nodeType": "for-each", "outputVar": "el", "parameters": [
    {"name": "Elements", "expression": {"language": "expr", "expression": "1..#input.n"}}]},
  {"id": "slow", "type": "Filter", "expression": {"language": "expr", "expression": "#input.slow ? count(1..10000, # % 7 == 0) < 0 : true"}},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [
    {"name": "value", "expression": {"language": "expr", "expression": "#el"}}]}}
], "edges": [
  {"from": "in", "to": "each", "edgeType": null},
  {"from": "each", "to": "slow", "edgeType": null},
  {"from": "slow", "to": "out", "edgeType": {"type": "FilterTrue"}}
]}`

// A cancel, and a shutdown, end a deployment in the middle of an event of minutes within
// interruptGrace and a little: the event's partial work is not committed (the checkpoint
// stays where it was, after the first event), and a deploy reads the event again.
func testStopInterruptsALongEvent(t *testing.T, st store.Store) {
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	createScenario(t, st, "slow", slowEventGraph)
	r := newRuntime(t, st, func(c *Config) { c.Logger = logger })
	d := deploy(t, r, "slow", 0)
	ingest := func(ev string) {
		if _, err := r.Ingest(t.Context(), "slow", "in", "", [][]byte{[]byte(ev)}); err != nil {
			t.Fatal(err)
		}
	}
	ingest(`{"ts": 1000, "n": 1, "slow": false}`)
	waitCommitted(t, r, "slow", 1)
	ingest(`{"ts": 2000, "n": 100000, "slow": true}`)
	// Nothing shows that the deployment has started on the event (its counts are published
	// between events): give it half a second. The interruption's log line below shows that
	// it had.
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	canceled, err := r.Cancel(t.Context(), "slow", "ann", "")
	if took := time.Since(start); err != nil || canceled.Status != store.StatusCanceled || took > interruptGrace+10*time.Second {
		t.Fatalf("cancel: %+v, %v after %v; want CANCELED within %v and a little", canceled, err, took, interruptGrace)
	}
	if !strings.Contains(logs.String(), "stopped in the middle of an event") {
		t.Fatalf("the event was not interrupted; the logs:\n%s", logs)
	}
	cp, err := st.GetLatestCheckpoint(t.Context(), d.ID)
	if err != nil || !slices.Equal(cp.Positions, []store.SourcePosition{{Source: "in", Offset: 1}}) {
		t.Errorf("the canceled deployment's checkpoint: %+v, %v; want the first event's", cp, err)
	}
	if got := collected(t, st, "slow"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("collected %v, want the first event's one element", got)
	}

	// Deployed again, it reads the slow event again; a shutdown interrupts it too.
	deploy(t, r, "slow", 0)
	time.Sleep(500 * time.Millisecond) // as above; the second log line shows it
	start = time.Now()
	if err := r.Shutdown(t.Context()); err != nil || time.Since(start) > interruptGrace+10*time.Second {
		t.Fatalf("shutdown: %v after %v", err, time.Since(start))
	}
	if n := strings.Count(logs.String(), "stopped in the middle of an event"); n != 2 {
		t.Errorf("%d interruptions logged, want 2:\n%s", n, logs)
	}
	if got := collected(t, st, "slow"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("collected %v after the shutdown, want the first event's one element", got)
	}
}

// An event past the runtime's EventTimeout (1 s here) is abandoned where it is, with its
// dead letter at the node it was entering (the filter), and the deployment goes on: the next
// event's result is collected. (Without the timeout the first event takes minutes: 100,000 evaluations of 10,000 steps,
// each well within the expression's own 1 s time budget even under the race detector.)
func testEventTimeout(t *testing.T, st store.Store) {
	createScenario(t, st, "slow", slowEventGraph)
	r := newRuntime(t, st, func(c *Config) { c.EventTimeout = time.Second })
	deploy(t, r, "slow", 0)
	batch := [][]byte{[]byte(`{"ts": 1000, "n": 100000, "slow": true}`), []byte(`{"ts": 2000, "n": 1, "slow": false}`)}
	if _, err := r.Ingest(t.Context(), "slow", "in", "", batch); err != nil {
		t.Fatal(err)
	}
	l := waitCommitted(t, r, "slow", 2)
	if l.Nodes["slow"].Errors != 1 {
		t.Errorf("the filter's errors: %d, want 1", l.Nodes["slow"].Errors)
	}
	dls := readDeadLetters(t, st, "slow")
	if len(dls) != 1 || dls[0].NodeID != "slow" || dls[0].Offset == nil || *dls[0].Offset != 0 ||
		!strings.Contains(dls[0].Message, "abandoned") || !strings.Contains(dls[0].Message, "more than 1s") {
		t.Errorf("dead letters %+v; want the first event's, at the filter, abandoned after 1s", dls)
	}
	if got := collected(t, st, "slow"); !slices.Equal(got, []string{"1"}) {
		t.Errorf("collected %v, want the second event's one element", got)
	}
}

// Slow events read in one batch are committed as they go, a batch cut once it has run for
// the checkpoint interval and at least a second (batchLong), not when the whole batch ends: 20
// events of 200 elements through the filter (about 0.14 s each, 2.8 s in all, on the 2-core
// development machine; ten times that under the race detector) show a committed count
// between 0 and 20 while they run. (With 20 elements an event took 14 ms once the filter
// evaluated 10,000 steps instead of 100,000, the batch under a second: the test failed
// without the race detector.) (Read as
// one batch they were committed all at once, and a stop that interrupted one of them lost them
// all.)
func testSlowEventsCommitOneByOne(t *testing.T, st store.Store) {
	createScenario(t, st, "slow", slowEventGraph)
	r := newRuntime(t, st)
	deploy(t, r, "slow", 0)
	batch := make([][]byte, 20)
	for i := range batch {
		batch[i] = fmt.Appendf(nil, `{"ts": %d, "n": 200, "slow": true}`, 1000*(i+1))
	}
	if _, err := r.Ingest(t.Context(), "slow", "in", "", batch); err != nil {
		t.Fatal(err)
	}
	// The first count between 0 and 20 shows the property; waiting for all 20 would only
	// measure the machine (under the race detector on a loaded CI machine an event took 5 s).
	seen := map[int64]bool{}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		l, ok := r.Live("slow")
		if ok && len(l.Sources) > 0 {
			c := l.Sources[0].Committed
			seen[c] = true
			if c > 0 && c < 20 {
				return
			}
			if c == 20 {
				t.Fatalf("committed counts seen %v: none between 0 and 20", seen)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event committed after 90 s; committed counts seen %v", seen)
		}
	}
}
