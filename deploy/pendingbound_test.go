package deploy

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// While the store refuses every checkpoint, a deployment stops reading at maxPendingResults
// results not committed, those of a checkpoint committing included: when commits fail from
// the first one on, no retried checkpoint carries more, however long the backlog (a slow
// commit that then fails allows about twice as many, see pendingResults) (a review found async commits carrying 62,000 and
// growing, since the results of the commit in flight were not counted).
func TestPendingResultsBoundedWhileCommitsFail(t *testing.T) {
	st := &failingCommits{Store: sqliteStore(t)}
	createScenario(t, st, "pass", `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input.v"}}]}}
	], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.MaxBacklog = 1_000_000 })
	deploy(t, r, "pass", 0)
	waitFor(t, "the first checkpoint", func() bool { l, ok := r.Live("pass"); return ok && l.Phase == PhaseRunning })
	st.fail.Store(1 << 30)          // every commit from now on
	recs := make([][]byte, 200_000) // ten times the bound, each a result
	for i := range recs {
		recs[i] = fmt.Appendf(nil, `{"v": %d}`, i)
	}
	ingestAll(t, r, "pass", recs, 0, 50_000)
	// Six failed commits: each retry could have carried what was read meanwhile.
	waitFor(t, "six failed checkpoints", func() bool { return st.failed.Load() >= 6 })
	l, _ := r.Live("pass")
	bound := int64(maxPendingResults + readBatch) // reading stops at the first batch reaching it
	if most := st.most.Load(); most > bound {
		t.Fatalf("a checkpoint carried %d results while commits failed, over %d", most, bound)
	}
	if p := l.Sources[0].Processed; p > 2*bound {
		t.Fatalf("%d events processed while commits failed, over %d", p, 2*bound)
	}
}

// The collect results waiting for a checkpoint hold at most Config.MaxPendingResultBytes
// and one event's results more: the deployment stops reading between two events once they
// reach it and commits them. 200 events of one batch (one read), each a result of 64 KiB
// (65,536 bytes of "x" and the two quotes), against a bound of 1 MiB: a checkpoint carries at
// most 17 results (16 reach 1,048,608 bytes). Read in one step and committed together, as
// before, the 200 were 13 MB in one checkpoint; a collect sink of 1 MB values did that with
// 2,000 events and the process died.
func TestPendingResultBytesBounded(t *testing.T) {
	st := &largestCommit{Store: sqliteStore(t)}
	createScenario(t, st, "big", `{"nodes": [
		{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "repeat('x', 65536)"}}]}}
	], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`)
	r := newRuntime(t, st, func(c *Config) { c.MaxPendingResultBytes = 1 << 20 })
	deploy(t, r, "big", 0)
	recs := make([][]byte, 200)
	for i := range recs {
		recs[i] = fmt.Appendf(nil, `{"i": %d}`, i)
	}
	ingestAll(t, r, "big", recs, 0, len(recs))
	waitFor(t, "the 200 results committed", func() bool { return st.committed.Load() == 200 })
	if most := st.most.Load(); most > 17 {
		t.Errorf("a checkpoint carried %d results of 65,538 bytes; want at most 17", most)
	}
}

// largestCommit counts the collect results committed and the most one checkpoint carried.
type largestCommit struct {
	store.Store
	committed, most atomic.Int64
}

func (l *largestCommit) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	cp, ids, err := l.Store.CommitCheckpoint(ctx, c, results)
	if err == nil {
		l.committed.Add(int64(len(results)))
		for m := l.most.Load(); int64(len(results)) > m && !l.most.CompareAndSwap(m, int64(len(results))); {
			m = l.most.Load()
		}
	}
	return cp, ids, err
}
