package deploy

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// ambiguousCommits commits a checkpoint with results once armed and then answers an error,
// as when the connection drops after COMMIT reached the database.
type ambiguousCommits struct {
	store.Store
	armed atomic.Bool
}

func (a *ambiguousCommits) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	cp, ids, err := a.Store.CommitCheckpoint(ctx, c, results)
	if err == nil && len(results) > 0 && a.armed.CompareAndSwap(true, false) {
		return store.Checkpoint{}, nil, errInjected
	}
	return cp, ids, err
}

// A checkpoint committed although the store answered an error is taken as committed (its
// state and positions are the store's latest): its results are not committed a second time,
// and the collected results equal a replay of the input (a review found 305 results of 284).
func TestAmbiguousCommitStoresResultsOnce(t *testing.T) {
	st := &ambiguousCommits{Store: sqliteStore(t)}
	graph := tumblingGraph("")
	createScenario(t, st, "sums", graph)
	r := newRuntime(t, st)
	deploy(t, r, "sums", 0)
	recs := records(3000)
	ingestAll(t, r, "sums", recs[:1000], 0, 250)
	waitCommitted(t, r, "sums", 1000)
	st.armed.Store(true)
	ingestAll(t, r, "sums", recs, 1000, 250)
	waitCommitted(t, r, "sums", int64(len(recs)))
	if st.armed.Load() {
		t.Fatal("no checkpoint with results was committed after arming")
	}
	equalResults(t, collected(t, st, "sums"), replay(t, graph, recs))
}
