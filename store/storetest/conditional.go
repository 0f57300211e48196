package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// A conditional checkpoint (Checkpoint.Conditional) is stored only on top of the checkpoint it
// names (Previous; 0 for none), results included; otherwise it is refused with
// ErrCheckpointMoved and nothing is stored. A stale epoch is refused first, with ErrLeaseLost.
// Of concurrent conditional commits on the same Previous, exactly one is stored, on a
// deployment with no checkpoint (the insert) as on one with (the update).
func testConditionalCheckpoint(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	must(s.CreateScenario(ctx, "cas", draft(1, "")))(t)
	d := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "cas", Version: 1}))(t)
	lease := must(s.AcquireLease(ctx, d.ID, "server-a", time.Hour))(t)
	results := func(from, n int) []store.NewSinkResult {
		r := make([]store.NewSinkResult, n)
		for i := range r {
			r[i] = store.NewSinkResult{Sink: "out", Value: sinkValue(from + i)}
		}
		return r
	}
	stored := func(what string, want int) {
		t.Helper()
		if got := len(must(s.ReadSinkResults(ctx, "cas", "", 0, 0))(t)); got != want {
			t.Errorf("%s: %d results stored, want %d", what, got, want)
		}
	}
	latest := func(what string, seq int64, state string) {
		t.Helper()
		c := must(s.GetLatestCheckpoint(ctx, d.ID))(t)
		if c.Sequence != seq || string(c.State) != state {
			t.Errorf("%s: latest checkpoint %d %q, want %d %q", what, c.Sequence, c.State, seq, state)
		}
	}
	cp := func(state string, previous int64) store.Checkpoint {
		return store.Checkpoint{Deployment: d.ID, State: []byte(state), Epoch: lease.Epoch, Conditional: true, Previous: previous}
	}

	_, _, err := s.CommitCheckpoint(ctx, cp("after one", 1), results(1, 2))
	wantErr(t, "commit after checkpoint 1 before any", err, store.ErrCheckpointMoved)
	_, err = s.GetLatestCheckpoint(ctx, d.ID)
	wantErr(t, "GetLatestCheckpoint after a refused first commit", err, store.ErrNotFound)
	stored("after a refused first commit", 0)

	c, ids, err := s.CommitCheckpoint(ctx, cp("one", 0), results(1, 3))
	if err != nil || c.Sequence != 1 || len(ids) != 3 {
		t.Fatalf("first commit, after none: %+v, %v, %v", c, ids, err)
	}
	// Sent again (its answer was lost): refused, the first sending stays the one stored.
	_, _, err = s.CommitCheckpoint(ctx, cp("one again", 0), results(1, 3))
	wantErr(t, "commit after none, again", err, store.ErrCheckpointMoved)
	latest("after the first commit sent again", 1, "one")
	stored("after the first commit sent again", 3)

	c, _, err = s.CommitCheckpoint(ctx, cp("two", 1), results(4, 2))
	if err != nil || c.Sequence != 2 {
		t.Fatalf("commit after checkpoint 1: %+v, %v", c, err)
	}
	for _, prev := range []int64{0, 1, 3} {
		_, _, err = s.CommitCheckpoint(ctx, cp("stale", prev), results(6, 1))
		wantErr(t, fmt.Sprintf("commit after checkpoint %d when the latest is 2", prev), err, store.ErrCheckpointMoved)
		_, err = s.PutCheckpoint(ctx, cp("stale", prev))
		wantErr(t, fmt.Sprintf("put after checkpoint %d when the latest is 2", prev), err, store.ErrCheckpointMoved)
	}
	latest("after refused commits", 2, "two")
	stored("after refused commits", 5)
	c = must(s.PutCheckpoint(ctx, cp("three", 2)))(t)
	if c.Sequence != 3 {
		t.Errorf("put after checkpoint 2: sequence %d, want 3", c.Sequence)
	}
	// Without Conditional, Previous is not looked at.
	c, _, err = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("four"), Epoch: lease.Epoch, Previous: 1}, nil)
	if err != nil || c.Sequence != 4 {
		t.Errorf("unconditional commit naming an old Previous: %+v, %v", c, err)
	}

	// The epoch is checked first: a server that lost its lease is told so.
	newer := must(s.AcquireLease(ctx, d.ID, "server-a", time.Hour))(t)
	_, _, err = s.CommitCheckpoint(ctx, cp("fenced", 1), results(6, 1))
	wantErr(t, "commit under an old epoch after an old checkpoint", err, store.ErrLeaseLost)
	stored("after the fenced commit", 5)

	// Concurrent commits on the same Previous: one wins, the others store nothing.
	race := func(dep int64, previous int64, epoch int64) {
		t.Helper()
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: dep, State: []byte(fmt.Sprintf("racer %d", i)),
					Epoch: epoch, Conditional: true, Previous: previous}, results(100+10*i, 2))
			}()
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrCheckpointMoved):
				t.Errorf("racer %d after checkpoint %d: %v, want success or ErrCheckpointMoved", i, previous, err)
			}
		}
		if won != 1 {
			t.Errorf("%d of %d concurrent commits after checkpoint %d stored, want 1", won, n, previous)
		}
	}
	race(d.ID, 4, newer.Epoch)
	if c := must(s.GetLatestCheckpoint(ctx, d.ID))(t); c.Sequence != 5 || !strings.HasPrefix(string(c.State), "racer ") {
		t.Errorf("after the race on checkpoint 4: latest %d %q, want 5, a racer's", c.Sequence, c.State)
	}
	stored("after the race on checkpoint 4", 7)
	must(s.CreateScenario(ctx, "cas2", draft(1, "")))(t)
	d2 := must(s.CreateDeployment(ctx, store.NewDeployment{Scenario: "cas2", Version: 1}))(t)
	race(d2.ID, 0, 0)
	if got := len(must(s.ReadSinkResults(ctx, "cas2", "", 0, 0))(t)); got != 2 {
		t.Errorf("race on a deployment's first checkpoint: %d results stored, want 2", got)
	}
	if c := must(s.GetLatestCheckpoint(ctx, d2.ID))(t); c.Sequence != 1 {
		t.Errorf("race on a deployment's first checkpoint: latest %d, want 1", c.Sequence)
	}
}
