package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/scenario-server/scenario-server/store"
)

// isFull reports whether err is SQLite's SQLITE_FULL: the disk, or the database's
// max_page_count, is full.
func isFull(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_FULL
}

// classify wraps a write's error in store.ErrStoreFull when the database is full, and
// remembers whether the latest write failed that way (Ping reports it).
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
func checkEpoch(ctx context.Context, tx *sql.Tx, deployment, epoch int64) error {
	if epoch == 0 {
		return nil
	}
	var current int64
	err := tx.QueryRowContext(ctx, `SELECT epoch FROM deployment_leases WHERE deployment_id = ?`, deployment).Scan(&current)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
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
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		d, err := getDeployment(ctx, tx, id)
		if err != nil {
			return err
		}
		if !d.Status.Active() {
			return &store.TransitionError{Deployment: id, From: d.Status, To: d.Status}
		}
		var cur store.Lease
		var expires int64
		err = tx.QueryRowContext(ctx, `SELECT owner, epoch, expires_at FROM deployment_leases WHERE deployment_id = ?`, id).
			Scan(&cur.Owner, &cur.Epoch, &expires)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		t := now()
		if cur.Owner != "" && cur.Owner != owner && expires > micros(t) {
			return &store.LeaseHeldError{Deployment: id, Owner: cur.Owner, ExpiresAt: fromMicros(expires)}
		}
		l.Epoch, l.ExpiresAt = cur.Epoch+1, t.Add(ttl).Truncate(time.Microsecond)
		_, err = tx.ExecContext(ctx,
			`INSERT INTO deployment_leases (deployment_id, owner, epoch, expires_at) VALUES (?, ?, ?, ?)
			 ON CONFLICT (deployment_id) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, expires_at = excluded.expires_at`,
			id, owner, l.Epoch, micros(l.ExpiresAt))
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("taking the lease of deployment %d: %w", id, err)
	}
	return l, nil
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		l.ExpiresAt = now().Add(ttl)
		res, err := tx.ExecContext(ctx, `UPDATE deployment_leases SET expires_at = ? WHERE deployment_id = ? AND epoch = ? AND owner = ?`,
			micros(l.ExpiresAt), l.Deployment, l.Epoch, l.Owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(store.ErrLeaseLost, err)
		}
		return nil
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("renewing the lease of deployment %d (epoch %d): %w", l.Deployment, l.Epoch, err)
	}
	return l, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE deployment_leases SET owner = '', expires_at = 0 WHERE deployment_id = ? AND epoch = ? AND owner = ?`,
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
	if _, err := getDeployment(ctx, s.read, id); err != nil {
		return l, fmt.Errorf("getting the lease of deployment %d: %w", id, err)
	}
	var expires int64
	err := s.read.QueryRowContext(ctx, `SELECT owner, epoch, expires_at FROM deployment_leases WHERE deployment_id = ?`, id).
		Scan(&l.Owner, &l.Epoch, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return l, nil
	case err != nil:
		return store.Lease{}, fmt.Errorf("getting the lease of deployment %d: %w", id, err)
	}
	if expires > 0 {
		l.ExpiresAt = fromMicros(expires)
	}
	return l, nil
}

// ActiveLeases implements store.Store.
func (s *Store) ActiveLeases(ctx context.Context) ([]store.Lease, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT d.id, coalesce(l.owner, ''), coalesce(l.epoch, 0), coalesce(l.expires_at, 0)
		FROM deployments d LEFT JOIN deployment_leases l ON l.deployment_id = d.id
		WHERE d.status IN ('DEPLOYING', 'RUNNING') ORDER BY d.id`)
	if err != nil {
		return nil, fmt.Errorf("listing the leases of active deployments: %w", err)
	}
	defer rows.Close()
	var list []store.Lease
	for rows.Next() {
		var l store.Lease
		var expires int64
		if err := rows.Scan(&l.Deployment, &l.Owner, &l.Epoch, &expires); err != nil {
			return nil, fmt.Errorf("listing the leases of active deployments: %w", err)
		}
		if expires > 0 {
			l.ExpiresAt = fromMicros(expires)
		}
		list = append(list, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the leases of active deployments: %w", err)
	}
	return list, nil
}

// BeginRun implements store.Store.
func (s *Store) BeginRun(ctx context.Context, id int64) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE deployments SET unclean_runs = unclean_runs + 1 WHERE id = ? RETURNING unclean_runs`, id).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
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
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE deployments SET unclean_runs = 0 WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(store.ErrNotFound, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ending a run of deployment %d: %w", id, err)
	}
	return nil
}

// SetDeploymentReason implements store.Store.
func (s *Store) SetDeploymentReason(ctx context.Context, id int64, reason string) (store.Deployment, error) {
	var d store.Deployment
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if d, err = getDeployment(ctx, tx, id); err != nil {
			return err
		}
		if !d.Status.Active() {
			return &store.TransitionError{Deployment: id, From: d.Status, To: d.Status}
		}
		d.Reason = reason
		_, err = tx.ExecContext(ctx, `UPDATE deployments SET reason = ? WHERE id = ?`, reason, id)
		return err
	})
	if err != nil {
		return store.Deployment{}, fmt.Errorf("setting the reason of deployment %d: %w", id, err)
	}
	return d, nil
}

// EventLogEnd implements store.Store.
func (s *Store) EventLogEnd(ctx context.Context, log store.EventLog) (int64, error) {
	row, err := lookupScenario(ctx, s.read, log.Scenario)
	if err != nil {
		return 0, fmt.Errorf("reading the end of event log %q: %w", log.Source, err)
	}
	var end int64
	err = s.read.QueryRowContext(ctx, `SELECT next_offset FROM event_logs WHERE scenario_id = ? AND source = ?`, row.id, log.Source).Scan(&end)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("reading the end of event log %q of %q: %w", log.Source, log.Scenario, err)
	}
	return end, nil
}

// EventLogBacklog implements store.Store.
func (s *Store) EventLogBacklog(ctx context.Context, log store.EventLog) (int64, error) {
	row, err := lookupScenario(ctx, s.read, log.Scenario)
	if err != nil {
		return 0, fmt.Errorf("reading the backlog of event log %q: %w", log.Source, err)
	}
	var n int64
	err = s.read.QueryRowContext(ctx, `SELECT next_offset - truncated_below FROM event_logs WHERE scenario_id = ? AND source = ?`, row.id, log.Source).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("reading the backlog of event log %q of %q: %w", log.Source, log.Scenario, err)
	}
	return max(n, 0), nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM scenarios WHERE id = 0`).Scan(&one); err != nil {
		return fmt.Errorf("reading the store: %w", err)
	}
	if s.full.Load() {
		return fmt.Errorf("%w: the latest write failed because the database is full, and none succeeded since", store.ErrStoreFull)
	}
	if err := s.inTxProbe(ctx); err != nil {
		return fmt.Errorf("writing to the store: %w", err)
	}
	return nil
}

// inTxProbe commits a rewrite of the probe row without touching the full flag (a tiny write
// succeeding says little about the writes that failed).
func (s *Store) inTxProbe(ctx context.Context) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return wrapFull(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO store_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`, micros(now())); err != nil {
		tx.Rollback()
		return wrapFull(err)
	}
	return wrapFull(tx.Commit())
}

func wrapFull(err error) error {
	if err != nil && isFull(err) {
		return fmt.Errorf("%w: %w", store.ErrStoreFull, err)
	}
	return err
}
