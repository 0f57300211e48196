package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// longStepGraph counts per key in windows of 10 minutes sliding every second, of #input.t
// with no disorder, into the collect sink "out".
const longStepGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.t"}},
    {"name": "maxOutOfOrderness", "value": "0s"}]}},
  {"id": "win", "type": "CustomNode", "nodeType": "aggregate-hopping", "outputVar": "agg", "parameters": [
    {"name": "groupBy", "value": [{"language": "expr", "expression": "#input.k"}]},
    {"name": "aggregations", "value": [{"name": "n", "aggregator": "Count"}]},
    {"name": "windowLength", "value": "10m"},
    {"name": "slide", "value": "1s"}]},
  {"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "{k: #key[0], e: #window.end, n: #agg.n}"}}]}}
], "edges": [{"from": "in", "to": "win", "edgeType": null}, {"from": "win", "to": "out", "edgeType": null}]}`

// A watermark step that closes more windows than one checkpoint may carry is committed in
// parts, and a crash between two parts loses and repeats none of them (a hostile round: 3,000
// keys of a window of 24 minutes sliding every second, then one event 40 minutes on, closed
// 4.32 M windows in one step; their results passed 4 times the bound on those waiting for a
// checkpoint, the deployment failed, and failed again at every redeploy, which resumed from
// the checkpoint before the event).
//
// By hand: one event at 1,700,000,000,000 for each of 20 keys is in the 600 windows ending
// 1 s to 600 s after it; an event 40 minutes on moves the watermark past all of them: 12,000
// results in one step, each of 35 or 36 bytes ({"k":"k0","e":1700000001000,"n":1}) counted
// with collectResultBytes (64), 1.2 MB, against a bound of 64 KiB (262,144 bytes within one
// event). A step pauses at half of those 262,144 bytes (deployment.stepResultsFull): a
// checkpoint takes about 1,320 of them, at most 2,000 in any. The store holds the third checkpoint with
// results until the runtime dies; the next runtime resumes from the second, mid-step, and
// the results are each key's 600 windows, each once, n 1. (Without the parts: the deployment
// failed, "passed their limit within one event: 262144 bytes".)
func TestLongStepCommittedInParts(t *testing.T) {
	checkJumpResults(t, crashMidStep(t, longStepGraph, 20))
}

// crashMidStep deploys graph (results bound 64 KiB) and jumpEvents(keys), holds its third
// checkpoint with results, aborts the runtime there (a crash part way through the step),
// starts another, and returns the collect results once there are 12,000, checking that two
// checkpoints had committed some of them before the crash, none carried more than 2,000, and
// the deployment runs.
func crashMidStep(t *testing.T, graph string, keys int) []string {
	t.Helper()
	inner := sqliteStore(t)
	st := newStepCommits(inner)
	st.blockAt = 3
	createScenario(t, st, "jump", graph)
	r := newRuntime(t, st, stepResultsBound)
	deploy(t, r, "jump", 0)
	recs := jumpEvents(keys)
	ingestAll(t, r, "jump", recs, 0, len(recs))
	waitFor(t, "the third checkpoint with results held", func() bool { return st.blocked.Load() })
	before := st.committed.Load()
	if before == 0 || before >= 12_000 {
		t.Fatalf("%d results committed in two checkpoints; want some of the 12,000, not all", before)
	}
	t.Logf("before the crash: %d results in %d checkpoints", before, st.withResults.Load()-1)
	r.abort() // the process dies with the step half done

	st.blockAt = 0
	r = newRuntime(t, st, stepResultsBound)
	waitFor(t, "the 12,000 results", func() bool { return st.committed.Load() >= 12_000 })
	waitCommitted(t, r, "jump", int64(len(recs)))
	got := collected(t, inner, "jump")
	if len(got) != 12_000 {
		t.Fatalf("%d results; want 12,000", len(got))
	}
	t.Logf("%d commits with results asked (one refused), the largest %d results", st.withResults.Load(), st.most.Load())
	if most := st.most.Load(); most > 2000 {
		t.Errorf("a checkpoint carried %d results; want at most 2,000", most)
	}
	if l, _ := r.Live("jump"); l.Phase != PhaseRunning {
		t.Errorf("phase %s, want running", l.Phase)
	}
	return got
}

// stepCommits counts the collect results committed and the most one checkpoint carried
// (largestCommit), and holds the blockAt-th checkpoint with results (0: none) until release
// is closed or its context ends.
type stepCommits struct {
	largestCommit
	blockAt     int
	release     chan struct{} // closed: the held checkpoint commits
	withResults atomic.Int64  // (one deployment: commits one at a time)
	blocked     atomic.Bool
}

func newStepCommits(st store.Store) *stepCommits {
	return &stepCommits{largestCommit: largestCommit{Store: st}}
}

func (s *stepCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if len(results) > 0 {
		if s.withResults.Add(1) == int64(s.blockAt) {
			s.blocked.Store(true)
			select {
			case <-s.release: // (nil: never)
			case <-ctx.Done():
				return store.Checkpoint{}, nil, ctx.Err()
			}
		}
	}
	return s.largestCommit.CommitCheckpoint(ctx, c, results)
}

// jumpEvents is an event at 1,700,000,000,000 for each of keys keys, then one 40 minutes on:
// for longStepGraph, the last closes each key's 600 windows in one step.
func jumpEvents(keys int) [][]byte {
	var recs [][]byte
	for k := range keys {
		recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "k%d"}`, t0, k))
	}
	return append(recs, fmt.Appendf(nil, `{"t": %d, "k": "jump"}`, t0+40*60_000))
}

// fastClock makes the runtime's clock go 400 ms on at each look: a step pauses about every
// third look (pauseStep: a second of step). The graph's source then needs an idle timeout
// longer than the test (idleForAYear): the clock's pace would move its watermark on.
func fastClock(c *Config) {
	var ticks atomic.Int64
	start := time.Now()
	c.Now = func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * 400 * time.Millisecond) }
}

// idleForAYear gives longStepGraph's source an idle timeout of a year.
func idleForAYear(graph string) string {
	return strings.Replace(graph, `"value": "0s"}`, `"value": "0s"}, {"name": "idleTimeout", "value": "8760h"}`, 1)
}

// A long step pauses on time too, with few results waiting (a step closing windows whose
// sink writes nothing kept 60 s of a core in one piece, past stops and checkpoints): it
// pauses once it has run for the checkpoint interval, at least a second, and what it did is
// committed. The runtime's clock here goes 400 ms on at each look, so the step pauses about
// every third look, and its 12,000 results, far below the bound on results waiting (64 MiB),
// are committed in several checkpoints.
func TestLongStepPausesOnTime(t *testing.T) {
	st := newStepCommits(sqliteStore(t))
	createScenario(t, st, "jump", idleForAYear(longStepGraph))
	r := newRuntime(t, st, fastClock)
	deploy(t, r, "jump", 0)
	recs := jumpEvents(20)
	ingestAll(t, r, "jump", recs, 0, len(recs))
	waitFor(t, "the 12,000 results", func() bool { return st.committed.Load() >= 12_000 })
	if st.committed.Load() != 12_000 || st.most.Load() == 12_000 {
		t.Fatalf("%d results committed, at most %d in one checkpoint: want 12,000 in several", st.committed.Load(), st.most.Load())
	}
}

// The dead letters of a step committed in parts are the event's that moved the watermark,
// counted once for the whole step: every result of the 12,000 windows fails ([1, 2][6] is
// out of range), and the step, pausing about every third look at the clock (400 ms on at
// each), keeps 100 dead letters naming the event (source in, offset 20, the 21st) and one
// more saying 11,900 were not kept. Each part counted apart, and without its event, kept
// 100 more a part, naming none (a hostile round: 1,111 for one step, 1,010 of them nameless).
func TestLongStepDeadLettersNameItsEvent(t *testing.T) {
	st := newStepCommits(sqliteStore(t))
	createScenario(t, st, "jump", strings.Replace(idleForAYear(longStepGraph), `{k: #key[0], e: #window.end, n: #agg.n}`, `[1, 2][#agg.n + 5]`, 1))
	r := newRuntime(t, st, fastClock)
	deploy(t, r, "jump", 0)
	recs := jumpEvents(20)
	ingestAll(t, r, "jump", recs, 0, len(recs))
	var letters []store.SinkResult
	partway := int64(0) // errors counted while the step was paused part way
	waitFor(t, "the step's 12,000 errors and its dead letters", func() bool {
		l, _ := r.Live("jump")
		var err error
		letters, err = st.ReadSinkResults(t.Context(), "jump", DeadLetterSink, 0, store.MaxReadLimit)
		if err != nil {
			t.Fatal(err)
		}
		if n := l.Nodes["out"].Errors; n > 0 && n < 12_000 {
			partway = n
		}
		return l.Nodes["out"].Errors == 12_000 && len(letters) > 0 && strings.Contains(string(letters[len(letters)-1].Value), "more per-event errors") || len(letters) > 101
	})
	if partway == 0 {
		t.Error("the step was not seen part way: the counts went from 0 to 12,000 errors at once")
	}
	if len(letters) != 101 {
		t.Fatalf("%d dead letters; want 101", len(letters))
	}
	for i, l := range letters {
		var dl DeadLetter
		if err := json.Unmarshal(l.Value, &dl); err != nil {
			t.Fatal(err)
		}
		if dl.Source != "in" || dl.Offset == nil || *dl.Offset != 20 || i == 100 && !strings.HasPrefix(dl.Message, "11900 more per-event errors") {
			t.Fatalf("dead letter %d: %s; want one of the event at offset 20 of in", i, l.Value)
		}
	}
}

// Long steps of several deployments at once stay within the server's bound on the results
// waiting in all of them: a step pauses once those reach half of it, and goes on once the
// others' are committed. Four deployments each close 12,000 windows of results of about 100
// bytes (1.2 MB each, counted with collectResultBytes) in one step, each pausing at 64 KiB
// of its own, against a server's bound of 256 KiB: each has up to 64 KiB committing and as
// much waiting (a hostile round: 4 of 4 failed, "the results waiting in all deployments ...
// would pass"); all four commit their 12,000, and none fails.
func TestLongStepsShareTheServersBound(t *testing.T) {
	st := newStepCommits(sqliteStore(t))
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes, c.MaxTotalPendingResultBytes = 64<<10, 256<<10 })
	names := []string{"a", "b", "c", "d"}
	ids := map[string]int64{}
	for _, name := range names {
		createScenario(t, st, name, longStepGraph)
		ids[name] = deploy(t, r, name, 0).ID
	}
	for _, name := range names {
		recs := jumpEvents(20)
		ingestAll(t, r, name, recs, 0, len(recs))
	}
	waitFor(t, "the four steps' 48,000 results", func() bool {
		for _, name := range names {
			if d, err := st.GetDeployment(t.Context(), ids[name]); err != nil || d.Status != store.StatusRunning {
				t.Fatalf("%s: %s %s (%v)", name, d.Status, d.Reason, err)
			}
		}
		return st.committed.Load() == 48_000
	})
}

// A new version deployed while a long step is committed in parts takes it up: the new
// version, whose sink only adds a field, keeps the window state, so the stop pauses the step
// at once (with the default grace: Runtime.stopCurrent, Engine.StepCarriedOnBy), says so,
// and the final checkpoint holds the part done; the new version goes on with the step.
// Version 1 commits two parts (the third is held until the deploy has asked it to stop),
// version 2 the rest: each key's 600 windows once in all, n 1, the later ones with version
// 2's field (by hand, as in TestLongStepCommittedInParts). (With the grace for every stop,
// version 1 went on with the step: "12000 results, 0 of version 2".)
func TestNewVersionTakesUpALongStep(t *testing.T) {
	v2 := strings.Replace(longStepGraph, `{k: #key[0], e: #window.end, n: #agg.n}`, `{k: #key[0], e: #window.end, n: #agg.n, v: 2}`, 1)
	var out lockedBuffer
	got := deployDuringAStep(t, v2, 0, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	fromV2 := checkJumpResults(t, got)
	if len(got) != 12_000 || fromV2 == 0 || fromV2 == 12_000 {
		t.Fatalf("%d results, %d of version 2; want 12,000, some of each version", len(got), fromV2)
	}
	if !strings.Contains(out.String(), `msg="stopped part way through a watermark step that closes many windows: the new version keeps the aggregates, and emits the rest"`) {
		t.Errorf("version 1 stopped part way through its step without a word:\n%s", out.String())
	}
}

// A shutdown pauses a long step at once (the next run goes on with it: round 152 saw two
// scenarios' steps, each let go on for 5 s, run their final checkpoints into the 10 s of
// --shutdown-timeout, canceled): version 1's third part is held until Shutdown has asked it
// to stop; its final checkpoint then holds the two parts done, fewer than the 12,000 results,
// and the next runtime on the store emits the rest, each key's 600 windows once in all (by
// hand, as in TestLongStepCommittedInParts).
func TestShutdownPausesALongStep(t *testing.T) {
	inner, st := shutdownMidStep(t)
	if n := st.committed.Load(); n == 0 || n >= 12_000 {
		t.Fatalf("%d results committed by the shutdown; want some of the 12,000, not all", n)
	}
	newRuntime(t, st, stepResultsBound)
	waitFor(t, "the 12,000 results", func() bool { return st.committed.Load() >= 12_000 })
	if got := collected(t, inner, "jump"); checkJumpResults(t, got) != 0 || len(got) != 12_000 {
		t.Fatalf("%d results; want 12,000", len(got))
	}
}

// stepResultsBound is the bound on results waiting for a checkpoint that longStepGraph's
// tests run with: a step of jumpEvents(20) is committed in parts.
func stepResultsBound(c *Config) { c.MaxPendingResultBytes = 64 << 10 }

// heldMidStep deploys longStepGraph (stepResultsBound, configured further by configure) and
// jumpEvents(20), and returns once its third checkpoint with results is held (until
// st.release is closed): the store, the commits seen, and the runtime.
func heldMidStep(t *testing.T, configure ...func(*Config)) (store.Store, *stepCommits, *Runtime) {
	t.Helper()
	inner := sqliteStore(t)
	st := newStepCommits(inner)
	st.blockAt, st.release = 3, make(chan struct{})
	createScenario(t, st, "jump", longStepGraph)
	r := newRuntime(t, st, append([]func(*Config){stepResultsBound}, configure...)...)
	deploy(t, r, "jump", 0)
	recs := jumpEvents(20)
	ingestAll(t, r, "jump", recs, 0, len(recs))
	waitFor(t, "the third checkpoint with results held", func() bool { return st.blocked.Load() })
	return inner, st, r
}

// shutdownMidStep deploys longStepGraph (stepResultsBound) and jumpEvents(20), holds its
// third checkpoint with results, shuts the runtime down, and lets the held checkpoint
// commit once the deployment was asked to stop. It returns the store and the commits seen
// (with no more held).
func shutdownMidStep(t *testing.T) (store.Store, *stepCommits) {
	t.Helper()
	inner, st, r := heldMidStep(t)
	d := r.lookup("jump")
	shut := make(chan error, 1)
	go func() { shut <- r.Shutdown(t.Context()) }()
	waitFor(t, "the deployment asked to stop", func() bool { return d.stopAt.Load() != 0 })
	close(st.release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	st.blockAt = 0
	return inner, st
}

// deployDuringAStep deploys longStepGraph (results bound 64 KiB, configured further by
// configure) and jumpEvents(20), holds its third checkpoint with results, deploys version 2
// (graph v2), lets the held checkpoint commit hold after version 1 is asked to stop, and
// returns the collect results once there are 12,000.
func deployDuringAStep(t *testing.T, v2 string, hold time.Duration, configure func(*Config)) []string {
	t.Helper()
	inner, st, r := heldMidStep(t, configure)
	v1 := r.lookup("jump")
	if _, err := st.SaveVersion(t.Context(), "jump", 1, store.Draft{Graph: json.RawMessage(v2)}); err != nil {
		t.Fatal(err)
	}
	deployed := make(chan error, 1)
	go func() {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "jump", Version: 2, User: "ann"})
		deployed <- err
	}()
	waitFor(t, "version 1 asked to stop", func() bool {
		select {
		case <-v1.stopCh:
			return true
		default:
			return false
		}
	})
	time.Sleep(hold)
	close(st.release)
	if err := <-deployed; err != nil {
		t.Fatal(err)
	}
	var got []string
	waitFor(t, "the 12,000 results", func() bool { got = collected(t, inner, "jump"); return len(got) >= 12_000 })
	return got
}

// checkJumpResults checks the results of jumpEvents through longStepGraph, by hand: each
// has n 1 and an end 1 s to 600 s after the events, on a whole second, and each (key, end)
// comes once. It returns how many carry v 2 (a second version's sink).
func checkJumpResults(t *testing.T, got []string) (fromV2 int) {
	t.Helper()
	seen := map[string]bool{}
	for _, g := range got {
		var v struct {
			K       string
			E, N, V int64
		}
		if err := json.Unmarshal([]byte(g), &v); err != nil {
			t.Fatal(err)
		}
		after := v.E - t0
		if v.N != 1 || after < 1000 || after > 600_000 || after%1000 != 0 || seen[fmt.Sprint(v.K, v.E)] {
			t.Fatalf("result %s: want n 1, an end 1 s to 600 s after the events, each key's once", g)
		}
		seen[fmt.Sprint(v.K, v.E)] = true
		if v.V == 2 {
			fromV2++
		}
	}
	return fromV2
}

// One close of a window for many keys is committed in parts too (a hostile round: a tumbling
// window of 150,000 keys with 2 KB of results each emitted 300 MB in one close, past what
// one checkpoint may carry, and the deployment failed at every redeploy), and a crash between
// two parts of the close loses and repeats none of its results.
//
// By hand: longStepGraph with a tumbling window of 10 minutes instead: an event at
// 1,700,000,000,000 for each of 12,000 keys falls in the window [1,699,999,800,000,
// 1,700,000,400,000); the event 40 minutes on closes it, 12,000 results in one close, each
// of 38 to 40 bytes ({"k":"k11999","e":1700000400000,"n":1}) counted with
// collectResultBytes (64): about 1.2 MB, against a bound of 64 KiB (262,144 bytes within one
// event). A step pauses at half of those: a checkpoint takes about 1,280 of them, at most
// 2,000 in any. The store holds the
// third checkpoint with results until the runtime dies; the next resumes from the second,
// part way through the close, and the results are each key's window once, n 1. (Without the
// close in parts: the deployment failed, "passed their limit within one event".)
func TestOneCloseCommittedInParts(t *testing.T) {
	checkOneClose(t, crashMidStep(t, tumblingStepGraph(t), 12_000), 1)
}

// tumblingStepGraph is longStepGraph with a tumbling window of 10 minutes.
func tumblingStepGraph(t *testing.T) string {
	graph := strings.Replace(longStepGraph, `"aggregate-hopping"`, `"aggregate-tumbling"`, 1)
	graph = strings.Replace(graph, `,
    {"name": "slide", "value": "1s"}`, "", 1)
	if !strings.Contains(graph, "tumbling") || strings.Contains(graph, "slide") {
		t.Fatal("the graph is not a tumbling window's")
	}
	return graph
}

// checkOneClose checks the results of jumpEvents(12,000) through tumblingStepGraph, by hand:
// each key's window [1,699,999,800,000, 1,700,000,400,000) once, n as given.
func checkOneClose(t *testing.T, got []string, n int64) {
	t.Helper()
	if len(got) != 12_000 {
		t.Fatalf("%d results; want 12,000", len(got))
	}
	seen := map[string]bool{}
	for _, g := range got {
		var v struct {
			K    string
			E, N int64
		}
		if err := json.Unmarshal([]byte(g), &v); err != nil {
			t.Fatal(err)
		}
		if v.N != n || v.E != 1_700_000_400_000 || !strings.HasPrefix(v.K, "k") || seen[v.K] {
			t.Fatalf("result %.80s: want n %d, end 1,700,000,400,000, each key once", g, n)
		}
		seen[v.K] = true
	}
}

// A close paused part way does not count the merged copy of its window's lists as state: a
// whole close takes it and lets go of it within one step, uncounted, and a close of 150,000
// keys' lists of 1.3 KB that passed so failed the deployment at each redeploy once it paused
// (hostile round 146: the copy doubled the state). Here: 12,000 keys each with a list of one
// string of 1,000 bytes in a tumbling window of 10 minutes (longStepGraph's, a List of #input.s
// instead of the count); the state is measured once they are in, and the server restarted
// with a budget of one and a half times that (the copy alone is about two thirds of it) and a
// bound on results of 64 KiB: the event 40 minutes on closes the window in parts, and the
// 12,000 results come, each key once, the deployment running.
func TestPausedCloseWithinTheStateBudget(t *testing.T) {
	graph := strings.Replace(tumblingStepGraph(t), `{"name": "n", "aggregator": "Count"}`,
		`{"name": "n", "aggregator": "List", "aggregateBy": {"language": "expr", "expression": "#input.s"}}`, 1)
	graph = strings.Replace(graph, `n: #agg.n}`, `n: len(#agg.n)}`, 1)
	if !strings.Contains(graph, "List") || !strings.Contains(graph, "len(#agg.n)") {
		t.Fatal("the graph is not a tumbling window's list")
	}
	st := sqliteStore(t)
	createScenario(t, st, "lists", graph)
	r := newRuntime(t, st)
	deploy(t, r, "lists", 0)
	const keys = 12_000
	s := strings.Repeat("x", 1000)
	var recs [][]byte
	for k := range keys {
		recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "k%d", "s": %q}`, t0, k, s))
	}
	ingestAll(t, r, "lists", recs, 0, len(recs))
	l := waitCommitted(t, r, "lists", keys)
	state := l.State["win"].Bytes
	if state < keys*1000 {
		t.Fatalf("the window's state is %d bytes; want the lists' 12,000,000 at least", state)
	}
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	r = newRuntime(t, st, func(c *Config) { c.MaxDeploymentState, c.MaxPendingResultBytes = int64(state)*3/2, 64<<10 })
	recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "jump", "s": ""}`, t0+40*60_000))
	ingestAll(t, r, "lists", recs, keys, keys+1)
	var got []string
	waitFor(t, "the 12,000 results", func() bool {
		if l, _ := r.Live("lists"); l.Phase == PhaseFailed {
			t.Fatalf("the deployment failed (%s)", l.CheckpointError)
		}
		got = collected(t, st, "lists")
		return len(got) >= keys
	})
	checkOneClose(t, got, 1)
	if l, _ := r.Live("lists"); l.Phase != PhaseRunning {
		t.Errorf("phase %s, want running", l.Phase)
	}
}

// A step that ends within Config.StepStopGrace of a stop ends in the version it began in: a
// new version whose window changed (11 minutes instead of 10) starts its windows empty, and
// would drop the rest of a step paused for the stop at once (hostile round 146: a redeploy
// mid-close kept 40,000 of 150,000 results). By hand, as in TestLongStepCommittedInParts:
// version 1 commits two parts of the 12,000 results, the third is held until the deploy of
// version 2 has asked it to stop; version 1 then commits the rest of the step in its parts
// (each well within the default grace of a second) before its final checkpoint: each key's
// 600 windows once, all of version 1 (without going on: "timed out waiting for the 12,000
// results").
func TestStopLetsAShortStepEnd(t *testing.T) {
	v2 := strings.Replace(longStepGraph, `{"name": "windowLength", "value": "10m"}`, `{"name": "windowLength", "value": "11m"}`, 1)
	if v2 == longStepGraph {
		t.Fatal("version 2 changes nothing")
	}
	got := deployDuringAStep(t, v2, 0, func(*Config) {})
	if fromV2 := checkJumpResults(t, got); len(got) != 12_000 || fromV2 != 0 {
		t.Fatalf("%d results, %d of version 2; want 12,000, all of version 1", len(got), fromV2)
	}
}

// A stop waits for a step in parts past its interrupt (2 s after it), up to the step's grace:
// version 1's third part is held until 2.5 s after the deploy of version 2 (whose window
// changed) asked it to stop; it then commits the rest of the step in its parts, then its
// final checkpoint: each key's 600 windows once, all of version 1, by hand as in
// TestStopLetsAShortStepEnd (with the interrupt at 2 s, the step was interrupted: "timed out
// waiting for the 12,000 results"). The grace is 20 s here, so that the parts after the held
// one fit in it however loaded the machine.
func TestStopWaitsForAStepPastTheInterrupt(t *testing.T) {
	v2 := strings.Replace(longStepGraph, `{"name": "windowLength", "value": "10m"}`, `{"name": "windowLength", "value": "11m"}`, 1)
	got := deployDuringAStep(t, v2, interruptGrace+interruptGrace/4, func(c *Config) { c.StepStopGrace, c.StopWait = 20*time.Second, 40*time.Second })
	if fromV2 := checkJumpResults(t, got); len(got) != 12_000 || fromV2 != 0 {
		t.Fatalf("%d results, %d of version 2; want 12,000, all of version 1", len(got), fromV2)
	}
}

// pauseStep's time rule, by hand: a step pauses once it has run for the checkpoint interval,
// at least a second, and at least 4 times as long as the last checkpoint took (paused every
// second, 1,000,000 keys' close wrote its 322 MB of state 50 times: hostile round 146); its
// first look only starts the count. Nothing else pauses it here (no results wait, no stop).
func TestPauseStepTimeRule(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, c := range []struct{ interval, lastCommit, pausesAt time.Duration }{
		{0, 0, time.Second},
		{200 * time.Millisecond, 100 * time.Millisecond, time.Second},
		{5 * time.Second, time.Second, 5 * time.Second},
		{time.Second, 10 * time.Second, 40 * time.Second},
		{time.Minute, 10 * time.Second, time.Minute},
	} {
		at := start
		d := &deployment{rt: &Runtime{ctx: t.Context(), cfg: Config{CheckpointInterval: c.interval, MaxPendingResultBytes: 64 << 20,
			StepStopGrace: DefaultStepStopGrace, Now: func() time.Time { return at }}}, sinks: &sinks{}, lastCommitTook: c.lastCommit}
		if d.pauseStep() {
			t.Fatalf("%+v: paused at its first look", c)
		}
		at = start.Add(c.pausesAt - time.Millisecond)
		if d.pauseStep() {
			t.Fatalf("%+v: paused %v after its first look", c, c.pausesAt-time.Millisecond)
		}
		at = start.Add(c.pausesAt)
		if !d.pauseStep() {
			t.Fatalf("%+v: not paused %v after its first look", c, c.pausesAt)
		}
	}
}

// A deploy whose client leaves once the running version has been stopped still records and
// runs the new version: version 1, in a long step whose third part is held, is asked to stop
// by the deploy of version 2, whose context then ends (a shutdown's timeout cut the
// connection) before version 1 has stopped; once it has, deployment 2 is in the store,
// RUNNING, and runs here, taking events. Before, deployment 1 was CANCELED "replaced by
// version 2" and deployment 2 never created: nothing ran, and nothing said so (round 154).
func TestDeployRecordedWhenItsClientLeaves(t *testing.T) {
	inner, st, r := heldMidStep(t)
	v1 := r.lookup("jump")
	v2 := strings.Replace(longStepGraph, `{"name": "windowLength", "value": "10m"}`, `{"name": "windowLength", "value": "11m"}`, 1)
	if _, err := st.SaveVersion(t.Context(), "jump", 1, store.Draft{Graph: json.RawMessage(v2)}); err != nil {
		t.Fatal(err)
	}
	ctx, leave := context.WithCancel(t.Context())
	deployed := make(chan error, 1)
	go func() {
		_, err := r.Deploy(ctx, DeployRequest{Scenario: "jump", Version: 2, User: "ann"})
		deployed <- err
	}()
	waitFor(t, "version 1 asked to stop", func() bool { return v1.stopAt.Load() != 0 })
	leave()
	close(st.release)
	<-deployed // (the client's context ended: its error, or the deployment if it had started)
	waitFor(t, "version 2 running", func() bool {
		l, ok := r.Live("jump")
		return ok && l.Version == 2 && l.Phase == PhaseRunning
	})
	var list []store.Deployment
	waitFor(t, "deployment 2 RUNNING in the store", func() bool { // (its run records it once started)
		var err error
		if list, err = inner.ListDeployments(t.Context(), "jump", 0, 2); err != nil {
			t.Fatal(err)
		}
		return len(list) > 0 && list[0].Status == store.StatusRunning
	})
	if len(list) != 2 || list[0].Version != 2 || list[1].Status != store.StatusCanceled {
		t.Fatalf("deployments %+v; want 2 RUNNING, 1 CANCELED", list)
	}
	if _, err := r.Ingest(t.Context(), "jump", "in", "after", [][]byte{fmt.Appendf(nil, `{"t": %d, "k": "after"}`, t0+41*60_000)}); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, r, "jump", int64(len(jumpEvents(20))+1))
}

// A version that changes an aggregate, deployed over a checkpoint part way through a step
// there (a shutdown paused it; the server restarted in safe mode, so nothing ran on with
// it), drops the results the step had yet to emit, and says so with a warning naming the
// aggregate and what was owed (round 154: 105,727 of 150,000 results, an INFO alone).
// By hand, as in TestLongStepCommittedInParts: the events at t0 = 1,700,000,000,000 and the
// one 40 minutes on with no disorder set the watermark to t0 + 2,400,000; the first window
// not yet emitted when the shutdown paused the step ends within (t0, t0 + 600,000]. A
// version 2 that changes only the sink keeps the aggregate and goes on with the step: no
// warning.
func TestChangedVersionOverAPausedStepWarns(t *testing.T) {
	for _, tc := range []struct {
		name, v2 string
		warns    bool
	}{
		{"window changed", strings.Replace(longStepGraph, `"value": "1s"}]}`, `"value": "2s"}]}`, 1), true},
		{"sink changed", strings.Replace(longStepGraph, `n: #agg.n}`, `n: #agg.n, v: 2}`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := shutdownMidStep(t)
			var out lockedBuffer
			safe := newRuntime(t, st, stepResultsBound, func(c *Config) {
				c.NoResume = true
				c.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
			})
			if _, err := st.SaveVersion(t.Context(), "jump", 1, store.Draft{Graph: json.RawMessage(tc.v2)}); err != nil {
				t.Fatal(err)
			}
			if _, err := safe.Deploy(t.Context(), DeployRequest{Scenario: "jump", Version: 2}); err != nil {
				t.Fatal(err)
			}
			var warning string
			for l := range strings.Lines(out.String()) {
				if strings.Contains(l, "level=WARN") && strings.Contains(l, "those results are dropped") {
					warning = l
				}
			}
			if !tc.warns {
				if warning != "" {
					t.Fatalf("version 2 keeps the aggregate, and yet: %s", warning)
				}
				return
			}
			var first time.Time
			for f := range strings.FieldsSeq(warning) {
				if v, ok := strings.CutPrefix(f, "firstClose="); ok {
					first, _ = time.Parse(time.RFC3339Nano, v)
				}
			}
			after := first.UnixMilli() - t0
			if !strings.Contains(warning, "node=win") || !strings.Contains(warning, "before=1") ||
				!strings.Contains(warning, "watermark=2023-11-14T22:53:20Z") || after <= 0 || after > 600_000 {
				t.Fatalf("want a warning naming win, version 1, a first close 1 s to 600 s after the events and the watermark t0 + 40 min (2023-11-14T22:53:20Z); the log:\n%s", out.String())
			}
		})
	}
}
