package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
)

const deploymentSelect = `
SELECT d.id, s.name, d.version, d.status, d.reason, d.comment, d.user_name, d.created_at, d.updated_at, d.unclean_runs
FROM deployments d JOIN scenarios s ON s.id = d.scenario_id`

func scanDeployment(row interface{ Scan(...any) error }) (store.Deployment, error) {
	var d store.Deployment
	var created, updated int64
	err := row.Scan(&d.ID, &d.Scenario, &d.Version, &d.Status, &d.Reason, &d.Comment, &d.User, &created, &updated, &d.UncleanRuns)
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	return d, err
}

func getDeployment(ctx context.Context, q queryer, id int64) (store.Deployment, error) {
	d, err := scanDeployment(q.QueryRowContext(ctx, deploymentSelect+` WHERE d.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, store.ErrNotFound
	}
	return d, err
}

func listDeployments(ctx context.Context, q queryer, where string, args ...any) ([]store.Deployment, error) {
	rows, err := q.QueryContext(ctx, deploymentSelect+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []store.Deployment
	for rows.Next() {
		d, err := scanDeployment(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, d)
	}
	return list, rows.Err()
}

// CreateDeployment implements store.Store.
func (s *Store) CreateDeployment(ctx context.Context, nd store.NewDeployment) (store.Deployment, error) {
	t := now()
	d := store.Deployment{Scenario: nd.Scenario, Version: nd.Version, Status: store.StatusDeploying,
		Comment: nd.Comment, User: nd.User, CreatedAt: t, UpdatedAt: t}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		row, err := lookupScenario(ctx, tx, nd.Scenario)
		if err != nil {
			return err
		}
		if nd.Version < 1 || nd.Version > row.latestVersion {
			return fmt.Errorf("version %d: %w", nd.Version, store.ErrNotFound)
		}
		if row.archived {
			return store.ErrArchived
		}
		if nd.Replaces != 0 {
			old, err := getDeployment(ctx, tx, nd.Replaces)
			if errors.Is(err, store.ErrNotFound) || err == nil && old.Scenario != nd.Scenario {
				return fmt.Errorf("replacing deployment %d: %w", nd.Replaces, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if old.Status.Active() { // else another caller ended it: nothing to replace
				if err := writeStatus(ctx, tx, &old, store.StatusCanceled, nd.ReplacedReason); err != nil {
					return err
				}
			}
		}
		err = tx.QueryRowContext(ctx,
			`INSERT INTO deployments (scenario_id, version, status, comment, user_name, created_at, updated_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			row.id, d.Version, d.Status, d.Comment, d.User, micros(t), micros(t)).Scan(&d.ID)
		if isUnique(err) { // deployments_one_active
			return store.ErrDeploymentActive
		}
		return err
	})
	if err != nil {
		return store.Deployment{}, fmt.Errorf("deploying version %d of %q: %w", nd.Version, nd.Scenario, err)
	}
	return d, nil
}

// GetDeployment implements store.Store.
func (s *Store) GetDeployment(ctx context.Context, id int64) (store.Deployment, error) {
	d, err := getDeployment(ctx, s.read, id)
	if err != nil {
		return store.Deployment{}, fmt.Errorf("getting deployment %d: %w", id, err)
	}
	return d, nil
}

// SetDeploymentStatus implements store.Store.
func (s *Store) SetDeploymentStatus(ctx context.Context, id int64, to store.DeploymentStatus, reason string) (store.Deployment, error) {
	return s.setStatus(ctx, id, to, reason, 0)
}

// FailDeployment implements store.Store.
func (s *Store) FailDeployment(ctx context.Context, lease store.Lease, reason string) (store.Deployment, error) {
	if lease.Epoch == 0 {
		return store.Deployment{}, fmt.Errorf("failing deployment %d: %w: no lease", lease.Deployment, store.ErrLeaseLost)
	}
	return s.setStatus(ctx, lease.Deployment, store.StatusFailed, reason, lease.Epoch)
}

// setStatus is SetDeploymentStatus, under the lease of epoch when it is not 0 (checkEpoch).
func (s *Store) setStatus(ctx context.Context, id int64, to store.DeploymentStatus, reason string, epoch int64) (store.Deployment, error) {
	var d store.Deployment
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		d, err = getDeployment(ctx, tx, id)
		if err != nil {
			return err
		}
		// After the deployment's row is locked, as a cancel and a lease's take lock it before
		// the lease's row (the other order deadlocked with them on PostgreSQL).
		if err := checkEpoch(ctx, tx, id, epoch); err != nil {
			return err
		}
		return writeStatus(ctx, tx, &d, to, reason)
	})
	if err != nil {
		return store.Deployment{}, fmt.Errorf("setting status of deployment %d to %s: %w", id, to, err)
	}
	return d, nil
}

// writeStatus moves d to status to with reason in tx, and ends its lease when to is final.
// Errors: *store.TransitionError when d's status does not allow it; the database's.
func writeStatus(ctx context.Context, tx *sql.Tx, d *store.Deployment, to store.DeploymentStatus, reason string) error {
	if !d.Status.CanMoveTo(to) {
		return &store.TransitionError{Deployment: d.ID, From: d.Status, To: to}
	}
	d.Status, d.Reason, d.UpdatedAt = to, reason, now()
	_, err := tx.ExecContext(ctx, `UPDATE deployments SET status = ?, reason = ?, updated_at = ? WHERE id = ?`,
		d.Status, d.Reason, micros(d.UpdatedAt), d.ID)
	if err != nil || to.Active() {
		return err
	}
	// A final status ends the lease: a server still running it is fenced off.
	_, err = tx.ExecContext(ctx, `UPDATE deployment_leases SET epoch = epoch + 1, owner = '', expires_at = 0 WHERE deployment_id = ?`, d.ID)
	return err
}

// ListDeployments implements store.Store.
func (s *Store) ListDeployments(ctx context.Context, scenario string, before int64, limit int) ([]store.Deployment, error) {
	row, err := lookupScenario(ctx, s.read, scenario)
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	list, err := listDeployments(ctx, s.read, ` WHERE d.scenario_id = ? AND d.id < ? ORDER BY d.id DESC LIMIT ?`, row.id, before, limit)
	if err != nil {
		return nil, fmt.Errorf("listing deployments of %q: %w", scenario, err)
	}
	return list, nil
}

// LastCheckpointedDeployment implements store.Store.
func (s *Store) LastCheckpointedDeployment(ctx context.Context, scenario string, before int64) (store.Deployment, error) {
	row, err := lookupScenario(ctx, s.read, scenario)
	if err != nil {
		return store.Deployment{}, fmt.Errorf("finding the last deployment with a checkpoint: %w", err)
	}
	list, err := listDeployments(ctx, s.read, ` WHERE d.scenario_id = ? AND d.id < ?
		AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.deployment_id = d.id) ORDER BY d.id DESC LIMIT 1`, row.id, before)
	if err == nil && len(list) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Deployment{}, fmt.Errorf("finding the last deployment of %q with a checkpoint: %w", scenario, err)
	}
	return list[0], nil
}

// ListActiveDeployments implements store.Store.
func (s *Store) ListActiveDeployments(ctx context.Context) ([]store.Deployment, error) {
	list, err := listDeployments(ctx, s.read, ` WHERE d.status IN ('DEPLOYING', 'RUNNING') ORDER BY d.id`)
	if err != nil {
		return nil, fmt.Errorf("listing active deployments: %w", err)
	}
	return list, nil
}

// ListLatestDeployments implements store.Store.
func (s *Store) ListLatestDeployments(ctx context.Context) ([]store.Deployment, error) {
	list, err := listDeployments(ctx, s.read,
		` WHERE d.id = (SELECT max(l.id) FROM deployments l WHERE l.scenario_id = d.scenario_id) ORDER BY s.name`)
	if err != nil {
		return nil, fmt.Errorf("listing latest deployments: %w", err)
	}
	return list, nil
}

// LatestDeploymentsOf implements store.Store.
func (s *Store) LatestDeploymentsOf(ctx context.Context, names []string) ([]store.Deployment, error) {
	return check.LatestOf(names, func(names []string) ([]store.Deployment, error) {
		js, err := json.Marshal(names)
		if err != nil {
			return nil, err
		}
		return listDeployments(ctx, s.read,
			` WHERE s.name IN (SELECT value FROM json_each(?)) AND d.id = (SELECT max(l.id) FROM deployments l WHERE l.scenario_id = d.scenario_id) ORDER BY s.name`, string(js))
	})
}

// PutCheckpoint implements store.Store.
func (s *Store) PutCheckpoint(ctx context.Context, c store.Checkpoint) (store.Checkpoint, error) {
	c, _, err := s.commitCheckpoint(ctx, c, nil)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("saving checkpoint of deployment %d: %w", c.Deployment, err)
	}
	return c, nil
}

// CommitCheckpoint implements store.Store.
func (s *Store) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if err := check.SinkResults(results); err != nil {
		return store.Checkpoint{}, nil, fmt.Errorf("committing checkpoint of deployment %d: %w", c.Deployment, err)
	}
	c, ids, err := s.commitCheckpoint(ctx, c, results)
	if err != nil {
		return store.Checkpoint{}, nil, fmt.Errorf("committing checkpoint of deployment %d with %d results: %w", c.Deployment, len(results), err)
	}
	return c, ids, nil
}

// commitCheckpoint appends results (maybe none) to the deployment's scenario and stores c, in
// one transaction.
func (s *Store) commitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	positions, err := json.Marshal(nonNilPositions(c.Positions))
	if err != nil {
		return c, nil, err
	}
	c.CreatedAt = now()
	var ids []int64
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var scenarioID int64
		err := tx.QueryRowContext(ctx, `SELECT scenario_id FROM deployments WHERE id = ?`, c.Deployment).Scan(&scenarioID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := checkEpoch(ctx, tx, c.Deployment, c.Epoch); err != nil {
			return err
		}
		if err := checkPrevious(ctx, tx, c); err != nil {
			return err
		}
		if len(results) > 0 {
			if ids, err = appendSinkResults(ctx, tx, `id = ?`, scenarioID, results); err != nil {
				return err
			}
		}
		return tx.QueryRowContext(ctx,
			`INSERT INTO checkpoints (deployment_id, sequence, state, positions, created_at, state_crc32c) VALUES (?, 1, ?, ?, ?, ?)
			 ON CONFLICT (deployment_id) DO UPDATE SET sequence = sequence + 1, state = excluded.state,
			   positions = excluded.positions, created_at = excluded.created_at, state_crc32c = excluded.state_crc32c
			 RETURNING sequence`,
			c.Deployment, nonNil(c.State), string(positions), micros(c.CreatedAt), int64(store.StateChecksum(c.State))).Scan(&c.Sequence)
	})
	return c, ids, err
}

// checkPrevious refuses a conditional checkpoint (c.Conditional) with store.ErrCheckpointMoved
// when the deployment's latest checkpoint is not c.Previous. The write transaction is
// IMMEDIATE: no other write of the database runs until it ends.
func checkPrevious(ctx context.Context, tx *sql.Tx, c store.Checkpoint) error {
	if !c.Conditional {
		return nil
	}
	var latest int64
	err := tx.QueryRowContext(ctx, `SELECT sequence FROM checkpoints WHERE deployment_id = ?`, c.Deployment).Scan(&latest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if latest != c.Previous {
		return fmt.Errorf("%w: the checkpoint follows checkpoint %d, the deployment's latest is %d", store.ErrCheckpointMoved, c.Previous, latest)
	}
	return nil
}

// GetLatestCheckpoint implements store.Store.
func (s *Store) GetLatestCheckpoint(ctx context.Context, deployment int64) (store.Checkpoint, error) {
	c := store.Checkpoint{Deployment: deployment}
	var positions []byte
	var created int64
	var checksum sql.NullInt64
	err := s.read.QueryRowContext(ctx,
		`SELECT sequence, state, positions, created_at, state_crc32c FROM checkpoints WHERE deployment_id = ?`, deployment).
		Scan(&c.Sequence, &c.State, &positions, &created, &checksum)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err == nil {
		c.CreatedAt = fromMicros(created)
		err = decodePositions(positions, &c)
	}
	if err == nil && checksum.Valid {
		err = store.VerifyState(deployment, c.Sequence, c.State, uint32(checksum.Int64))
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("getting latest checkpoint of deployment %d: %w", deployment, err)
	}
	return c, nil
}

// nonNilPositions makes a nil list encode as [] instead of null.
func nonNilPositions(p []store.SourcePosition) []store.SourcePosition {
	if p == nil {
		return []store.SourcePosition{}
	}
	return p
}

// decodePositions sets c.Positions from their JSON; an empty list becomes nil.
func decodePositions(data []byte, c *store.Checkpoint) error {
	if err := json.Unmarshal(data, &c.Positions); err != nil {
		return fmt.Errorf("%w: decoding the source positions of checkpoint %d: %v", store.ErrCorrupt, c.Sequence, err)
	}
	if len(c.Positions) == 0 {
		c.Positions = nil
	}
	return store.CheckPositions(c.Positions)
}
