package deploy

import (
	"context"
	"encoding/json"
	"fmt"
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
// event). A checkpoint takes about 660 of them (the results reach 64 KiB; the step looks
// between slides of 20): at most 1,000 in any. The store holds the third checkpoint with
// results until the runtime dies; the next runtime resumes from the second, mid-step, and
// the results are each key's 600 windows, each once, n 1. (Without the parts: the deployment
// failed, "passed their limit within one event: 262144 bytes".)
func TestLongStepCommittedInParts(t *testing.T) {
	inner := sqliteStore(t)
	st := &stepCommits{Store: inner, blockAt: 3}
	createScenario(t, st, "jump", longStepGraph)
	bound := func(c *Config) { c.MaxPendingResultBytes = 64 << 10 }
	r := newRuntime(t, st, bound)
	deploy(t, r, "jump", 0)
	const t0, keys = int64(1_700_000_000_000), 20
	var recs [][]byte
	for k := range keys {
		recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "k%d"}`, t0, k))
	}
	recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "jump"}`, t0+40*60_000))
	ingestAll(t, r, "jump", recs, 0, len(recs))
	waitFor(t, "the third checkpoint with results held", func() bool { return st.blocked.Load() })
	before := st.committed.Load()
	if before == 0 || before >= keys*600 {
		t.Fatalf("%d results committed in two checkpoints; want some of the 12,000, not all", before)
	}
	t.Logf("before the crash: %d results in %d checkpoints", before, st.withResults.Load()-1)
	r.abort() // the process dies with the step half done

	st.blockAt = 0
	r = newRuntime(t, st, bound)
	waitFor(t, "the 12,000 results", func() bool { return st.committed.Load() >= keys*600 })
	waitCommitted(t, r, "jump", int64(len(recs)))
	got := collected(t, inner, "jump")
	if len(got) != keys*600 {
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
		after := v.E - t0
		if v.N != 1 || after < 1000 || after > 600_000 || after%1000 != 0 || seen[fmt.Sprint(v.K, v.E)] {
			t.Fatalf("result %s: want n 1, an end 1 s to 600 s after the events, each key's once", g)
		}
		seen[fmt.Sprint(v.K, v.E)] = true
	}
	t.Logf("%d commits with results asked (one refused), the largest %d results", st.withResults.Load(), st.most.Load())
	if most := st.most.Load(); most > 1000 {
		t.Errorf("a checkpoint carried %d results; want at most 1,000", most)
	}
	if l, _ := r.Live("jump"); l.Phase != PhaseRunning {
		t.Errorf("phase %s, want running", l.Phase)
	}
}

// stepCommits counts the collect results committed and the most one checkpoint carried, and
// holds the blockAt-th checkpoint with results (0: none) until its context ends.
type stepCommits struct {
	store.Store
	blockAt         int
	withResults     atomic.Int64 // (one deployment: commits one at a time)
	committed, most atomic.Int64
	blocked         atomic.Bool
}

func (s *stepCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if len(results) > 0 {
		if s.withResults.Add(1) == int64(s.blockAt) {
			s.blocked.Store(true)
			<-ctx.Done()
			return store.Checkpoint{}, nil, ctx.Err()
		}
	}
	cp, ids, err := s.Store.CommitCheckpoint(ctx, c, results)
	if err == nil {
		s.committed.Add(int64(len(results)))
		for m := s.most.Load(); int64(len(results)) > m && !s.most.CompareAndSwap(m, int64(len(results))); {
			m = s.most.Load()
		}
	}
	return cp, ids, err
}

// A long step pauses on time too, with few results waiting (a step closing windows whose
// sink writes nothing kept 60 s of a core in one piece, past stops and checkpoints): it
// pauses once it has run for the checkpoint interval, at least a second, and what it did is
// committed. The runtime's clock here goes 400 ms on at each look, so the step pauses about
// every third look, and its 12,000 results, far below the bound on results waiting (64 MiB),
// are committed in several checkpoints.
func TestLongStepPausesOnTime(t *testing.T) {
	st := &stepCommits{Store: sqliteStore(t)}
	// (an idle timeout of a year: the clock's pace would move the watermark past the last event)
	createScenario(t, st, "jump", strings.Replace(longStepGraph, `"value": "0s"}`, `"value": "0s"}, {"name": "idleTimeout", "value": "8760h"}`, 1))
	var ticks atomic.Int64
	start := time.Now()
	r := newRuntime(t, st, func(c *Config) {
		c.Now = func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * 400 * time.Millisecond) }
	})
	deploy(t, r, "jump", 0)
	const t0 = int64(1_700_000_000_000)
	var recs [][]byte
	for k := range 20 {
		recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "k%d"}`, t0, k))
	}
	recs = append(recs, fmt.Appendf(nil, `{"t": %d, "k": "jump"}`, t0+40*60_000))
	ingestAll(t, r, "jump", recs, 0, len(recs))
	waitFor(t, "the 12,000 results", func() bool { return st.committed.Load() >= 12_000 })
	if st.committed.Load() != 12_000 || st.most.Load() == 12_000 {
		t.Fatalf("%d results committed, at most %d in one checkpoint: want 12,000 in several", st.committed.Load(), st.most.Load())
	}
}
