package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
)

const requestColumns = `id, scenario, version, comment, status, requested_subject, requested_name, requested_at,
	decided_subject, decided_name, decided_at, decision_comment, deployment_id, outcome`

func scanRequest(row pgx.Row) (store.DeployRequest, error) {
	var r store.DeployRequest
	var decided *time.Time
	var deployment *int64
	if err := row.Scan(&r.ID, &r.Scenario, &r.Version, &r.Comment, &r.Status, &r.RequestedSubject, &r.RequestedName, &r.RequestedAt,
		&r.DecidedSubject, &r.DecidedName, &decided, &r.DecisionComment, &deployment, &r.Outcome); err != nil {
		return r, err
	}
	r.RequestedAt = r.RequestedAt.UTC()
	if decided != nil {
		r.DecidedAt = decided.UTC()
	}
	if deployment != nil {
		r.DeploymentID = *deployment
	}
	return r, nil
}

// CreateDeployRequest implements store.Store.
func (s *Store) CreateDeployRequest(ctx context.Context, nr store.NewDeployRequest) (store.DeployRequest, error) {
	r, err := scanRequest(s.pool.QueryRow(ctx,
		`INSERT INTO deploy_requests (scenario, version, comment, status, requested_subject, requested_name, requested_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+requestColumns,
		nr.Scenario, nr.Version, nr.Comment, store.RequestPending, nr.RequestedSubject, nr.RequestedName, now()))
	if isUnique(err, "deploy_requests_one_pending") {
		err = store.ErrRequestPending
	}
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("requesting a deploy of %q: %w", nr.Scenario, s.classify(err))
	}
	return r, nil
}

// GetDeployRequest implements store.Store.
func (s *Store) GetDeployRequest(ctx context.Context, id int64) (store.DeployRequest, error) {
	r, err := scanRequest(s.pool.QueryRow(ctx, `SELECT `+requestColumns+` FROM deploy_requests WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("reading deploy request %d: %w", id, err)
	}
	return r, nil
}

// ListDeployRequests implements store.Store.
func (s *Store) ListDeployRequests(ctx context.Context, scenario string, limit int) ([]store.DeployRequest, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT `+requestColumns+` FROM deploy_requests WHERE scenario = $1 ORDER BY id DESC LIMIT $2`,
		scenario, store.RequestLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("listing deploy requests of %q: %w", scenario, err)
	}
	defer rows.Close()
	var list []store.DeployRequest
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("listing deploy requests of %q: %w", scenario, err)
		}
		list = append(list, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing deploy requests of %q: %w", scenario, err)
	}
	return list, nil
}

// DecideDeployRequest implements store.Store.
func (s *Store) DecideDeployRequest(ctx context.Context, id int64, d store.DeployDecision) (store.DeployRequest, error) {
	var r store.DeployRequest
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = scanRequest(tx.QueryRow(ctx,
			`UPDATE deploy_requests SET status = $1, decided_subject = $2, decided_name = $3, decided_at = $4, decision_comment = $5
			 WHERE id = $6 AND status = $7 RETURNING `+requestColumns,
			d.Status, d.Subject, d.Name, now(), d.Comment, id, store.RequestPending))
		if errors.Is(err, pgx.ErrNoRows) {
			var status string
			switch err := tx.QueryRow(ctx, `SELECT status FROM deploy_requests WHERE id = $1`, id).Scan(&status); {
			case errors.Is(err, pgx.ErrNoRows):
				return store.ErrNotFound
			case err != nil:
				return err
			}
			return fmt.Errorf("it is %s: %w", status, store.ErrRequestDecided)
		}
		return err
	})
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("deciding deploy request %d: %w", id, err)
	}
	return r, nil
}

// SetDeployRequestOutcome implements store.Store.
func (s *Store) SetDeployRequestOutcome(ctx context.Context, id, deploymentID int64, outcome string) (store.DeployRequest, error) {
	var dep *int64
	if deploymentID != 0 {
		dep = &deploymentID
	}
	r, err := scanRequest(s.pool.QueryRow(ctx,
		`UPDATE deploy_requests SET deployment_id = $1, outcome = $2 WHERE id = $3 RETURNING `+requestColumns, dep, outcome, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("recording the outcome of deploy request %d: %w", id, s.classify(err))
	}
	return r, nil
}
