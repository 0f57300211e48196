package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/scenario-server/scenario-server/store"
)

// diskFull is SQLSTATE disk_full.
const diskFull = "53100"

func isFull(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == diskFull
}

// classify wraps a write's error in store.ErrStoreFull when the disk is full, and remembers
// whether the latest write failed that way (Ping reports it).
func (s *Store) classify(err error) error {
	switch {
	case err == nil:
		s.full.Store(false)
		return nil
	case isFull(err):
		s.full.Store(true)
		return fmt.Errorf("%w: %w", store.ErrStoreFull, err)
	}
	return err
}

// checkEpoch returns store.ErrLeaseLost unless epoch is 0 or the deployment's current epoch
// (a checkpoint's, a status's written under a lease).
// FOR SHARE: an AcquireLease of the deployment waits until this transaction ends, so a
// checkpoint either commits before the take-over (and the new holder reads it) or is refused.
func checkEpoch(ctx context.Context, tx pgx.Tx, deployment, epoch int64) error {
	if epoch == 0 {
		return nil
	}
	var current int64
	err := tx.QueryRow(ctx, `SELECT epoch FROM deployment_leases WHERE deployment_id = $1 FOR SHARE`, deployment).Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if current != epoch {
		return fmt.Errorf("%w: written under epoch %d, the deployment's epoch is %d", store.ErrLeaseLost, epoch, current)
	}
	return nil
}

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, id int64, owner string, ttl time.Duration) (store.Lease, error) {
	l := store.Lease{Deployment: id, Owner: owner}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Locks the deployment: concurrent takes of one deployment are serialized.
		d, err := getDeployment(ctx, tx, id, ` FOR NO KEY UPDATE OF d`)
		if err != nil {
			return err
		}
		if !d.Status.Active() {
			return &store.TransitionError{Deployment: id, From: d.Status, To: d.Status}
		}
		var cur store.Lease
		var expires time.Time
		var expired bool
		err = tx.QueryRow(ctx, `SELECT owner, epoch, expires_at, expires_at <= now() FROM deployment_leases WHERE deployment_id = $1 FOR UPDATE`, id).
			Scan(&cur.Owner, &cur.Epoch, &expires, &expired)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if cur.Owner != "" && cur.Owner != owner && !expired {
			return &store.LeaseHeldError{Deployment: id, Owner: cur.Owner, ExpiresAt: expires.UTC()}
		}
		l.Epoch = cur.Epoch + 1
		return tx.QueryRow(ctx,
			`INSERT INTO deployment_leases (deployment_id, owner, epoch, expires_at) VALUES ($1, $2, $3, now() + $4 * interval '1 microsecond')
			 ON CONFLICT (deployment_id) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, expires_at = excluded.expires_at
			 RETURNING expires_at`,
			id, owner, l.Epoch, ttl.Microseconds()).Scan(&l.ExpiresAt)
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("taking the lease of deployment %d: %w", id, err)
	}
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l, nil
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx,
			`UPDATE deployment_leases SET expires_at = now() + $1 * interval '1 microsecond'
			 WHERE deployment_id = $2 AND epoch = $3 AND owner = $4 RETURNING expires_at`,
			ttl.Microseconds(), l.Deployment, l.Epoch, l.Owner).Scan(&l.ExpiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("renewing the lease of deployment %d (epoch %d): %w", l.Deployment, l.Epoch, err)
	}
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE deployment_leases SET owner = '', expires_at = to_timestamp(0) WHERE deployment_id = $1 AND epoch = $2 AND owner = $3`,
			l.Deployment, l.Epoch, l.Owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("releasing the lease of deployment %d: %w", l.Deployment, err)
	}
	return nil
}

// GetLease implements store.Store.
func (s *Store) GetLease(ctx context.Context, id int64) (store.Lease, error) {
	l := store.Lease{Deployment: id}
	if _, err := getDeployment(ctx, s.pool, id, ""); err != nil {
		return l, fmt.Errorf("getting the lease of deployment %d: %w", id, err)
	}
	var expires *time.Time // NULL once the lease ended
	err := s.pool.QueryRow(ctx, `SELECT owner, epoch, CASE WHEN expires_at = to_timestamp(0) THEN NULL ELSE expires_at END FROM deployment_leases WHERE deployment_id = $1`, id).
		Scan(&l.Owner, &l.Epoch, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return l, nil
	case err != nil:
		return store.Lease{}, fmt.Errorf("getting the lease of deployment %d: %w", id, err)
	}
	if expires != nil {
		l.ExpiresAt = expires.UTC()
	}
	return l, nil
}

// ActiveLeases implements store.Store.
func (s *Store) ActiveLeases(ctx context.Context) ([]store.Lease, error) {
	rows, err := s.pool.Query(ctx, `SELECT d.id, coalesce(l.owner, ''), coalesce(l.epoch, 0), CASE WHEN l.expires_at = to_timestamp(0) THEN NULL ELSE l.expires_at END
		FROM deployments d LEFT JOIN deployment_leases l ON l.deployment_id = d.id
		WHERE d.status IN ('DEPLOYING', 'RUNNING') ORDER BY d.id`)
	if err != nil {
		return nil, fmt.Errorf("listing the leases of active deployments: %w", err)
	}
	list, err := collect(rows, func(row pgx.Row) (store.Lease, error) {
		var l store.Lease
		var expires *time.Time // NULL once the lease ended
		if err := row.Scan(&l.Deployment, &l.Owner, &l.Epoch, &expires); err != nil {
			return l, err
		}
		if expires != nil {
			l.ExpiresAt = expires.UTC()
		}
		return l, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the leases of active deployments: %w", err)
	}
	return list, nil
}

// BeginRun implements store.Store.
func (s *Store) BeginRun(ctx context.Context, id int64) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE deployments SET unclean_runs = unclean_runs + 1 WHERE id = $1 RETURNING unclean_runs`, id).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recording a run of deployment %d: %w", id, err)
	}
	return n, nil
}

// EndRun implements store.Store.
func (s *Store) EndRun(ctx context.Context, id int64) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE deployments SET unclean_runs = 0 WHERE id = $1`, id)
		if err == nil && tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("ending a run of deployment %d: %w", id, err)
	}
	return nil
}

// SetDeploymentReason implements store.Store.
func (s *Store) SetDeploymentReason(ctx context.Context, id int64, reason string) (store.Deployment, error) {
	var d store.Deployment
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if d, err = getDeployment(ctx, tx, id, ` FOR NO KEY UPDATE OF d`); err != nil {
			return err
		}
		if !d.Status.Active() {
			return &store.TransitionError{Deployment: id, From: d.Status, To: d.Status}
		}
		d.Reason = reason
		_, err = tx.Exec(ctx, `UPDATE deployments SET reason = $1 WHERE id = $2`, reason, id)
		return err
	})
	if err != nil {
		return store.Deployment{}, fmt.Errorf("setting the reason of deployment %d: %w", id, err)
	}
	return d, nil
}

// EventLogEnd implements store.Store.
func (s *Store) EventLogEnd(ctx context.Context, log store.EventLog) (int64, error) {
	row, err := lookupScenario(ctx, s.pool, log.Scenario, "")
	if err != nil {
		return 0, fmt.Errorf("reading the end of event log %q: %w", log.Source, err)
	}
	var end int64
	err = s.pool.QueryRow(ctx, `SELECT next_offset FROM event_logs WHERE scenario_id = $1 AND source = $2`, row.id, log.Source).Scan(&end)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("reading the end of event log %q of %q: %w", log.Source, log.Scenario, err)
	}
	return end, nil
}

// EventLogBacklog implements store.Store.
func (s *Store) EventLogBacklog(ctx context.Context, log store.EventLog) (int64, error) {
	row, err := lookupScenario(ctx, s.pool, log.Scenario, "")
	if err != nil {
		return 0, fmt.Errorf("reading the backlog of event log %q: %w", log.Source, err)
	}
	var n int64
	err = s.pool.QueryRow(ctx, `SELECT next_offset - truncated_below FROM event_logs WHERE scenario_id = $1 AND source = $2`, row.id, log.Source).Scan(&n)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("reading the backlog of event log %q of %q: %w", log.Source, log.Scenario, err)
	}
	return max(n, 0), nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if s.full.Load() {
		return fmt.Errorf("%w: the latest write failed because the disk is full, and none succeeded since", store.ErrStoreFull)
	}
	// Not through inTx: a tiny write succeeding says little about the writes that failed.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO store_probe (id, at) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = excluded.at`)
		return err
	})
	if err != nil {
		if isFull(err) {
			err = fmt.Errorf("%w: %w", store.ErrStoreFull, err)
		}
		return fmt.Errorf("writing to the store: %w", err)
	}
	return nil
}
