package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// FailDeployment locks the deployment's row before it reads the lease's, as a cancel and a
// lease's take do (found by review: it read the lease's row FOR SHARE first, and deadlocked
// with a cancel, SQLSTATE 40P01). tx replays SetDeploymentStatus(CANCELED)'s statements in
// its order (the deployment's row, then the lease's); FailDeployment runs between them: it
// waits for the cancel, then finds the lease ended (ErrLeaseLost).
func TestFailDeploymentWaitsForACancel(t *testing.T) {
	_, url := pgtest.Schema(t)
	s := open(t, url)
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "x", store.Draft{Graph: []byte(`{"nodes": [], "edges": []}`)}); err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "x", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, d.ID, "server-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT id FROM deployments WHERE id = $1 FOR NO KEY UPDATE`, d.ID); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() { _, err := s.FailDeployment(context.Background(), l, "over budget"); failed <- err }()
	// FailDeployment waits for a lock (before the fix, holding the lease's row).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("FailDeployment did not wait for the cancel's lock in 20 s")
		}
	}
	_, txErr := tx.Exec(ctx, `UPDATE deployments SET status = 'CANCELED' WHERE id = $1`, d.ID)
	if txErr == nil {
		_, txErr = tx.Exec(ctx, `UPDATE deployment_leases SET epoch = epoch + 1, owner = '' WHERE deployment_id = $1`, d.ID)
	}
	if txErr == nil {
		txErr = tx.Commit(ctx)
	}
	failErr := <-failed
	if txErr != nil || !errors.Is(failErr, store.ErrLeaseLost) {
		t.Errorf("cancel: %v; fail: %v, want ErrLeaseLost", txErr, failErr)
	}
}
