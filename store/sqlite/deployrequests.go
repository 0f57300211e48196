package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
)

const requestColumns = `id, scenario, version, comment, status, requested_subject, requested_name, requested_at,
	decided_subject, decided_name, decided_at, decision_comment, deployment_id, outcome`

func scanRequest(row interface{ Scan(...any) error }) (store.DeployRequest, error) {
	var r store.DeployRequest
	var requested int64
	var decided, deployment sql.NullInt64
	if err := row.Scan(&r.ID, &r.Scenario, &r.Version, &r.Comment, &r.Status, &r.RequestedSubject, &r.RequestedName, &requested,
		&r.DecidedSubject, &r.DecidedName, &decided, &r.DecisionComment, &deployment, &r.Outcome); err != nil {
		return r, err
	}
	r.RequestedAt = fromMicros(requested)
	if decided.Valid {
		r.DecidedAt = fromMicros(decided.Int64)
	}
	r.DeploymentID = deployment.Int64
	return r, nil
}

// CreateDeployRequest implements store.Store.
func (s *Store) CreateDeployRequest(ctx context.Context, nr store.NewDeployRequest) (store.DeployRequest, error) {
	var r store.DeployRequest
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRequest(tx.QueryRowContext(ctx,
			`INSERT INTO deploy_requests (scenario, version, comment, status, requested_subject, requested_name, requested_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+requestColumns,
			nr.Scenario, nr.Version, nr.Comment, store.RequestPending, nr.RequestedSubject, nr.RequestedName, micros(now())))
		if isUnique(err) {
			return store.ErrRequestPending
		}
		return err
	})
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("requesting a deploy of %q: %w", nr.Scenario, err)
	}
	return r, nil
}

// GetDeployRequest implements store.Store.
func (s *Store) GetDeployRequest(ctx context.Context, id int64) (store.DeployRequest, error) {
	r, err := scanRequest(s.read.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM deploy_requests WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("reading deploy request %d: %w", id, err)
	}
	return r, nil
}

// ListDeployRequests implements store.Store.
func (s *Store) ListDeployRequests(ctx context.Context, scenario string, limit int) ([]store.DeployRequest, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT `+requestColumns+` FROM deploy_requests WHERE scenario = ? ORDER BY id DESC LIMIT ?`,
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
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRequest(tx.QueryRowContext(ctx,
			`UPDATE deploy_requests SET status = ?, decided_subject = ?, decided_name = ?, decided_at = ?, decision_comment = ?
			 WHERE id = ? AND status = ? RETURNING `+requestColumns,
			d.Status, d.Subject, d.Name, micros(now()), d.Comment, id, store.RequestPending))
		if errors.Is(err, sql.ErrNoRows) {
			var status string
			switch err := tx.QueryRowContext(ctx, `SELECT status FROM deploy_requests WHERE id = ?`, id).Scan(&status); {
			case errors.Is(err, sql.ErrNoRows):
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
	var r store.DeployRequest
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRequest(tx.QueryRowContext(ctx,
			`UPDATE deploy_requests SET deployment_id = ?, outcome = ? WHERE id = ? RETURNING `+requestColumns,
			sql.NullInt64{Int64: deploymentID, Valid: deploymentID != 0}, outcome, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.DeployRequest{}, fmt.Errorf("recording the outcome of deploy request %d: %w", id, err)
	}
	return r, nil
}
