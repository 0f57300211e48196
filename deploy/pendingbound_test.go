package deploy

import (
	"fmt"
	"testing"
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
