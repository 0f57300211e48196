package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
)

const deploymentSelect = `
SELECT d.id, s.name, d.version, d.status, d.reason, d.comment, d.user_name, d.created_at, d.updated_at, d.unclean_runs
FROM deployments d JOIN scenarios s ON s.id = d.scenario_id`

func scanDeployment(row pgx.Row) (store.Deployment, error) {
	var d store.Deployment
	err := row.Scan(&d.ID, &d.Scenario, &d.Version, &d.Status, &d.Reason, &d.Comment, &d.User, &d.CreatedAt, &d.UpdatedAt, &d.UncleanRuns)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, err
}

// getDeployment reads the deployment id, with suffix appended to the query (such as
// " FOR NO KEY UPDATE OF d").
func getDeployment(ctx context.Context, q querier, id int64, suffix string) (store.Deployment, error) {
	d, err := scanDeployment(q.QueryRow(ctx, deploymentSelect+` WHERE d.id = $1`+suffix, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, store.ErrNotFound
	}
	return d, err
}

// CreateDeployment implements store.Store.
func (s *Store) CreateDeployment(ctx context.Context, nd store.NewDeployment) (store.Deployment, error) {
	t := now()
	d := store.Deployment{Scenario: nd.Scenario, Version: nd.Version, Status: store.StatusDeploying,
		Comment: nd.Comment, User: nd.User, CreatedAt: t, UpdatedAt: t}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// FOR NO KEY UPDATE: a concurrent SetArchived waits, so we never deploy an archived scenario.
		row, err := lookupScenario(ctx, tx, nd.Scenario, ` FOR NO KEY UPDATE`)
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
			// After the scenario's row, as SetArchived and other deploys lock it first.
			old, err := getDeployment(ctx, tx, nd.Replaces, ` FOR NO KEY UPDATE OF d`)
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
		err = tx.QueryRow(ctx,
			`INSERT INTO deployments (scenario_id, version, status, comment, user_name, created_at, updated_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id`,
			row.id, d.Version, d.Status, d.Comment, d.User, t).Scan(&d.ID)
		if isUnique(err, "deployments_one_active") {
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
	d, err := getDeployment(ctx, s.pool, id, "")
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
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		// FOR NO KEY UPDATE OF d: concurrent changes of one deployment see each other's result.
		d, err = getDeployment(ctx, tx, id, ` FOR NO KEY UPDATE OF d`)
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

// writeStatus moves d, whose row tx has locked, to status to with reason, and ends its lease
// when to is final. Errors: *store.TransitionError when d's status does not allow it; the
// database's.
func writeStatus(ctx context.Context, tx pgx.Tx, d *store.Deployment, to store.DeploymentStatus, reason string) error {
	if !d.Status.CanMoveTo(to) {
		return &store.TransitionError{Deployment: d.ID, From: d.Status, To: to}
	}
	d.Status, d.Reason, d.UpdatedAt = to, reason, now()
	_, err := tx.Exec(ctx, `UPDATE deployments SET status = $1, reason = $2, updated_at = $3 WHERE id = $4`,
		d.Status, d.Reason, d.UpdatedAt, d.ID)
	if err != nil || to.Active() {
		return err
	}
	// A final status ends the lease: a server still running it is fenced off.
	_, err = tx.Exec(ctx, `UPDATE deployment_leases SET epoch = epoch + 1, owner = '', expires_at = to_timestamp(0) WHERE deployment_id = $1`, d.ID)
	return err
}

// ListDeployments implements store.Store.
func (s *Store) ListDeployments(ctx context.Context, scenario string, before int64, limit int) ([]store.Deployment, error) {
	row, err := lookupScenario(ctx, s.pool, scenario, "")
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, deploymentSelect+` WHERE d.scenario_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3`, row.id, before, lim)
	if err != nil {
		return nil, fmt.Errorf("listing deployments of %q: %w", scenario, err)
	}
	list, err := collect(rows, scanDeployment)
	if err != nil {
		return nil, fmt.Errorf("listing deployments of %q: %w", scenario, err)
	}
	return list, nil
}

// LastCheckpointedDeployment implements store.Store.
func (s *Store) LastCheckpointedDeployment(ctx context.Context, scenario string, before int64) (store.Deployment, error) {
	row, err := lookupScenario(ctx, s.pool, scenario, "")
	if err != nil {
		return store.Deployment{}, fmt.Errorf("finding the last deployment with a checkpoint: %w", err)
	}
	rows, err := s.pool.Query(ctx, deploymentSelect+` WHERE d.scenario_id = $1 AND d.id < $2
		AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.deployment_id = d.id) ORDER BY d.id DESC LIMIT 1`, row.id, before)
	var list []store.Deployment
	if err == nil {
		list, err = collect(rows, scanDeployment)
	}
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
	rows, err := s.pool.Query(ctx, deploymentSelect+` WHERE d.status IN ('DEPLOYING', 'RUNNING') ORDER BY d.id`)
	if err != nil {
		return nil, fmt.Errorf("listing active deployments: %w", err)
	}
	list, err := collect(rows, scanDeployment)
	if err != nil {
		return nil, fmt.Errorf("listing active deployments: %w", err)
	}
	return list, nil
}

// ListLatestDeployments implements store.Store.
func (s *Store) ListLatestDeployments(ctx context.Context) ([]store.Deployment, error) {
	rows, err := s.pool.Query(ctx, deploymentSelect+
		` WHERE d.id = (SELECT max(l.id) FROM deployments l WHERE l.scenario_id = d.scenario_id) ORDER BY s.name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("listing latest deployments: %w", err)
	}
	list, err := collect(rows, scanDeployment)
	if err != nil {
		return nil, fmt.Errorf("listing latest deployments: %w", err)
	}
	return list, nil
}

// LatestDeploymentsOf implements store.Store.
func (s *Store) LatestDeploymentsOf(ctx context.Context, names []string) ([]store.Deployment, error) {
	return check.LatestOf(names, func(names []string) ([]store.Deployment, error) {
		rows, err := s.pool.Query(ctx, deploymentSelect+
			` WHERE s.name = ANY($1) AND d.id = (SELECT max(l.id) FROM deployments l WHERE l.scenario_id = d.scenario_id) ORDER BY s.name COLLATE "C"`, names)
		if err != nil {
			return nil, err
		}
		return collect(rows, scanDeployment)
	})
}

// foreignKeyViolation is SQLSTATE foreign_key_violation.
const foreignKeyViolation = "23503"

// PutCheckpoint implements store.Store.
func (s *Store) PutCheckpoint(ctx context.Context, c store.Checkpoint) (store.Checkpoint, error) {
	positions, err := encodePositions(c.Positions)
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("saving checkpoint of deployment %d: %w", c.Deployment, err)
	}
	c.CreatedAt = now()
	// The upsert locks the checkpoint row, and the foreign key refuses a deployment that does
	// not exist.
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := checkEpoch(ctx, tx, c.Deployment, c.Epoch); err != nil {
			return err
		}
		if err := checkPrevious(ctx, tx, c); err != nil {
			return err
		}
		return putCheckpoint(ctx, tx, &c, positions)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == foreignKeyViolation {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("saving checkpoint of deployment %d: %w", c.Deployment, err)
	}
	return c, nil
}

// CommitCheckpoint implements store.Store.
func (s *Store) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	fail := func(err error) (store.Checkpoint, []int64, error) {
		return store.Checkpoint{}, nil, fmt.Errorf("committing checkpoint of deployment %d with %d results: %w", c.Deployment, len(results), err)
	}
	if err := check.SinkResults(results); err != nil {
		return fail(err)
	}
	positions, err := encodePositions(c.Positions)
	if err != nil {
		return fail(err)
	}
	var ids []int64
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var scenarioID int64
		err := tx.QueryRow(ctx, `SELECT scenario_id FROM deployments WHERE id = $1`, c.Deployment).Scan(&scenarioID)
		if errors.Is(err, pgx.ErrNoRows) {
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
			if ids, err = appendSinkResults(ctx, tx, `id = $2`, scenarioID, results); err != nil {
				return err
			}
		}
		c.CreatedAt = now()
		return putCheckpoint(ctx, tx, &c, positions)
	})
	if err != nil {
		return fail(err)
	}
	return c, ids, nil
}

// encodePositions is the JSON of the positions column; nil encodes as [].
func encodePositions(p []store.SourcePosition) (string, error) {
	if p == nil {
		p = []store.SourcePosition{}
	}
	b, err := json.Marshal(p)
	return string(b), err
}

// checkPrevious refuses early a conditional checkpoint (c.Conditional) whose Previous is not
// the deployment's latest committed checkpoint: sequences only grow, so it never will be.
// putCheckpoint makes the decisive check, on the row it locks.
func checkPrevious(ctx context.Context, tx pgx.Tx, c store.Checkpoint) error {
	if !c.Conditional {
		return nil
	}
	var latest int64
	err := tx.QueryRow(ctx, `SELECT sequence FROM checkpoints WHERE deployment_id = $1`, c.Deployment).Scan(&latest)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return movedUnless(latest == c.Previous, c, latest)
}

func movedUnless(ok bool, c store.Checkpoint, latest int64) error {
	if ok {
		return nil
	}
	if latest < 0 {
		return fmt.Errorf("%w: the checkpoint follows checkpoint %d, the deployment's latest is another", store.ErrCheckpointMoved, c.Previous)
	}
	return fmt.Errorf("%w: the checkpoint follows checkpoint %d, the deployment's latest is %d", store.ErrCheckpointMoved, c.Previous, latest)
}

// putCheckpoint upserts c (CreatedAt set) and sets its Sequence. A conditional checkpoint
// (c.Conditional) updates the row only while its sequence is c.Previous; it inserts one only
// when there is none, which checkPrevious passed only for Previous 0 (rows are never deleted).
// The upsert locks the row, or waits on the key of a row another transaction is inserting, and
// checks the condition on the row as committed (in READ COMMITTED): a concurrent write of the
// same deployment (one whose client lost the connection while the server still commits it)
// is decided before this one.
func putCheckpoint(ctx context.Context, q querier, c *store.Checkpoint, positions string) error {
	err := q.QueryRow(ctx,
		`INSERT INTO checkpoints AS c (deployment_id, sequence, state, positions, created_at, state_crc32c)
		 VALUES ($1, 1, $2, $3, $4, $5)
		 ON CONFLICT (deployment_id) DO UPDATE SET sequence = c.sequence + 1, state = excluded.state,
		   positions = excluded.positions, created_at = excluded.created_at, state_crc32c = excluded.state_crc32c
		   WHERE NOT $6 OR c.sequence = $7
		 RETURNING sequence`,
		c.Deployment, nonNil(c.State), positions, c.CreatedAt, int64(store.StateChecksum(c.State)), c.Conditional, c.Previous).Scan(&c.Sequence)
	if errors.Is(err, pgx.ErrNoRows) { // refused by the condition
		return movedUnless(false, *c, -1)
	}
	return err
}

// GetLatestCheckpoint implements store.Store.
func (s *Store) GetLatestCheckpoint(ctx context.Context, deployment int64) (store.Checkpoint, error) {
	c := store.Checkpoint{Deployment: deployment}
	var positions []byte
	var checksum *int64
	err := s.pool.QueryRow(ctx,
		`SELECT sequence, state, positions::text, created_at, state_crc32c FROM checkpoints WHERE deployment_id = $1`, deployment).
		Scan(&c.Sequence, &c.State, &positions, &c.CreatedAt, &checksum)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err == nil {
		c.CreatedAt = c.CreatedAt.UTC()
		if err = json.Unmarshal(positions, &c.Positions); err != nil {
			err = fmt.Errorf("%w: decoding the source positions of checkpoint %d: %v", store.ErrCorrupt, c.Sequence, err)
		}
		if len(c.Positions) == 0 {
			c.Positions = nil
		}
	}
	if err == nil {
		err = store.CheckPositions(c.Positions)
	}
	if err == nil && checksum != nil {
		err = store.VerifyState(deployment, c.Sequence, c.State, uint32(*checksum))
	}
	if err != nil {
		return store.Checkpoint{}, fmt.Errorf("getting latest checkpoint of deployment %d: %w", deployment, err)
	}
	return c, nil
}
