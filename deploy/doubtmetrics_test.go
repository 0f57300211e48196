package deploy

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/store"
)

// doubtingStore, once armed, commits the next checkpoint but answers an unclear error, and
// from then fails reads of the latest checkpoint while failReads is set: the checkpoint stays
// in doubt until they are let through.
type doubtingStore struct {
	store.Store
	armed, failReads atomic.Bool
}

func (s *doubtingStore) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if !s.armed.CompareAndSwap(true, false) {
		return s.Store.CommitCheckpoint(ctx, c, results)
	}
	if _, _, err := s.Store.CommitCheckpoint(ctx, c, results); err != nil {
		return store.Checkpoint{}, nil, err
	}
	s.failReads.Store(true)
	return store.Checkpoint{}, nil, errInjected
}

func (s *doubtingStore) GetLatestCheckpoint(ctx context.Context, deployment int64) (store.Checkpoint, error) {
	if s.failReads.Load() {
		return store.Checkpoint{}, errInjected
	}
	return s.Store.GetLatestCheckpoint(ctx, deployment)
}

// A checkpoint in doubt shows in Live and in Prometheus (scenario_server_checkpoint_in_doubt
// 1, scenario_server_checkpoint_failures counting the checkpoints that could not decide it)
// until the store decides it; then both are 0 again, and the last success's time is the
// committed checkpoint's.
func TestCheckpointInDoubtShown(t *testing.T) {
	st := &doubtingStore{Store: sqliteStore(t)}
	reg := prometheus.NewRegistry()
	r := newRuntime(t, st, func(c *Config) { c.Metrics = reg })
	createScenario(t, st, "sums", tumblingGraph(""))
	deploy(t, r, "sums", 0)
	recs := records(1000)
	ingestAll(t, r, "sums", recs[:500], 0, 250)
	check := func(what string, inDoubt bool, minFailures int64) {
		t.Helper()
		g := gauges(t, reg, "sums", "")
		l, _ := r.Live("sums")
		wantDoubt := map[bool]float64{true: 1}[inDoubt]
		if l.CheckpointInDoubt != inDoubt || g["scenario_server_checkpoint_in_doubt"] != wantDoubt {
			t.Errorf("%s: in doubt %v in Live, %v in Prometheus; want %v", what, l.CheckpointInDoubt, g["scenario_server_checkpoint_in_doubt"], inDoubt)
		}
		if f := g["scenario_server_checkpoint_failures"]; f < float64(minFailures) || (minFailures == 0 && f != 0) {
			t.Errorf("%s: %v checkpoint failures in Prometheus, want at least %d", what, f, minFailures)
		}
		if at, ok := g["scenario_server_checkpoint_last_success_timestamp_seconds"]; !ok || at != float64(l.CheckpointAt.UnixMilli())/1000 {
			t.Errorf("%s: last success at %v (%v), Live's checkpoint at %v", what, at, ok, l.CheckpointAt)
		}
	}
	waitCommitted(t, r, "sums", 500)
	check("committed", false, 0)

	st.armed.Store(true)
	ingestAll(t, r, "sums", recs, 500, 250)
	waitFor(t, "a checkpoint in doubt, two checkpoints failing", func() bool {
		l, _ := r.Live("sums")
		return l.CheckpointInDoubt && l.CheckpointFailures >= 2
	})
	check("in doubt", true, 2)

	st.failReads.Store(false)
	waitCommitted(t, r, "sums", 1000)
	waitFor(t, "the doubt decided", func() bool {
		l, _ := r.Live("sums")
		return !l.CheckpointInDoubt && l.CheckpointFailures == 0
	})
	check("decided", false, 0)
}
