package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// A checkpoint's commit still open in the database (its client's connection dropped while the
// server writes it) decides a conditional commit on the same previous checkpoint, the fence or
// second sending of a deployment whose checkpoint is in doubt: that commit waits on the
// checkpoint row, then is refused with ErrCheckpointMoved (nothing of it stored) when the open
// one commits, and is stored when the open one rolls back.
func TestConditionalCheckpointWaitsForTheOpenCommit(t *testing.T) {
	for name, commitFirst := range map[string]bool{"OpenOneCommits": true, "OpenOneRollsBack": false} {
		t.Run(name, func(t *testing.T) {
			s := openSchema(t, "")
			ctx := t.Context()
			if _, err := s.CreateScenario(ctx, "sums", store.Draft{Graph: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			d, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "sums", Version: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("K"), Conditional: true}, nil); err != nil {
				t.Fatal(err)
			}

			// The first sending: its upsert done, its transaction not committed yet.
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var pid int32
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			first := store.Checkpoint{Deployment: d.ID, State: []byte("in doubt"), Conditional: true, Previous: 1, CreatedAt: now()}
			if err := checkPrevious(ctx, tx, first); err != nil {
				t.Fatal(err)
			}
			if err := putCheckpoint(ctx, tx, &first, "[]"); err != nil {
				t.Fatal(err)
			}

			done := make(chan error, 1)
			go func() {
				_, _, err := s.CommitCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: []byte("fence"), Conditional: true, Previous: 1},
					[]store.NewSinkResult{{Sink: "out", Value: []byte(`1`)}})
				done <- err
			}()
			deadline := time.Now().Add(20 * time.Second)
			for {
				var waiting int
				err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&waiting)
				if err != nil {
					t.Fatal(err)
				}
				if waiting > 0 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("the conditional commit ended (%v) while the first sending was open", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the conditional commit does not wait for the open one")
				}
				time.Sleep(5 * time.Millisecond)
			}

			want, wantState, wantResults := error(nil), "fence", 1
			if commitFirst {
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				want, wantState, wantResults = store.ErrCheckpointMoved, "in doubt", 0
			} else if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, want) || (want == nil && err != nil) {
				t.Fatalf("the conditional commit: %v, want %v", err, want)
			}
			latest, err := s.GetLatestCheckpoint(ctx, d.ID)
			if err != nil || latest.Sequence != 2 || string(latest.State) != wantState {
				t.Errorf("latest checkpoint: %d %q (%v), want 2 %q", latest.Sequence, latest.State, err, wantState)
			}
			res, err := s.ReadSinkResults(ctx, "sums", "", 0, 0)
			if err != nil || len(res) != wantResults {
				t.Errorf("%d results stored (%v), want %d", len(res), err, wantResults)
			}
		})
	}
}
