package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
)

// auditAppendLock is the key of the transaction-level advisory lock AppendAudit takes.
const auditAppendLock = 0x617564697400 // "audit\0"

// AppendAudit implements store.Store.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) (store.AuditEntry, error) {
	return s.writeAudit(ctx, e, time.Time{}, false)
}

// FoldAudit implements store.Store. It takes AppendAudit's lock: folding or appending is
// one step, and two requests at once do not both append.
func (s *Store) FoldAudit(ctx context.Context, e store.AuditEntry, since time.Time) (store.AuditEntry, error) {
	return s.writeAudit(ctx, e, since, true)
}

// foldAuditQuery folds a request into the newest matching entry at or after a time ($2). The
// entry is found by audit_log_fold (the fold's key, then the time), which gives the order
// asked for: one step down the index, however long the log. Ordered by id, the generic plan
// walked audit_log_pkey backwards and, when nothing matched, read the whole log (143 ms a
// request with 1,000,000 entries, under auditAppendLock; round 25).
const foldAuditQuery = `UPDATE audit_log SET repeats = repeats + 1, last_at = $1
	WHERE id = (SELECT id FROM audit_log WHERE subject = $3 AND name = $4 AND address = $5
	  AND action = $6 AND scenario = $7 AND version = $8 AND outcome = $9 AND at >= $2
	  ORDER BY at DESC, id DESC LIMIT 1)
	RETURNING id, at, request_id, repeats`

// writeAudit appends e, or with fold folds it into the newest matching entry at or after
// since when there is one.
func (s *Store) writeAudit(ctx context.Context, e store.AuditEntry, since time.Time, fold bool) (store.AuditEntry, error) {
	e = store.CutAuditFields(e)
	if e.Time.IsZero() {
		e.Time = now()
	}
	e.Time = e.Time.UTC().Truncate(time.Microsecond)
	var out store.AuditEntry
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// One append at a time, to its commit: ids are then committed in the order they are
		// taken, so a reader paging with After (id > the last it saw) cannot pass an id
		// whose entry commits later (a sequence hands ids out before commit).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, auditAppendLock); err != nil {
			return err
		}
		out = e
		if fold {
			err := tx.QueryRow(ctx, foldAuditQuery,
				e.Time, since, e.Subject, e.Name, e.Address, e.Action, e.Scenario, e.Version, e.Outcome).
				Scan(&out.ID, &out.Time, &out.RequestID, &out.Repeats)
			if err == nil {
				out.Time, out.LastTime = out.Time.UTC(), &e.Time
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			out = e
		}
		return tx.QueryRow(ctx,
			`INSERT INTO audit_log (at, subject, name, address, action, scenario, version, target, outcome, request_id)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			e.Time, e.Subject, e.Name, e.Address, e.Action, e.Scenario, e.Version, e.Target, e.Outcome, e.RequestID).Scan(&out.ID)
	})
	if err != nil {
		return store.AuditEntry{}, fmt.Errorf("appending to the audit log: %w", err)
	}
	return out, nil
}

// ListAudit implements store.Store.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT id, at, subject, name, address, action, scenario, version, target, outcome, request_id, repeats, last_at FROM audit_log
		 WHERE id > $1
		   AND ($2::timestamptz IS NULL OR at >= $2) AND ($3::timestamptz IS NULL OR at < $3)
		   AND ($4 = '' OR subject = $4 OR name = $4)
		   AND ($5 = '' OR action = $5) AND ($6 = '' OR scenario = $6) AND ($7 = '' OR outcome = $7)
		 ORDER BY id LIMIT $8`,
		f.After, nullTime(f.From), nullTime(f.To), f.Identity, f.Action, f.Scenario, f.Outcome, f.AuditLimit())
	if err != nil {
		return nil, fmt.Errorf("listing the audit log: %w", err)
	}
	defer rows.Close()
	var list []store.AuditEntry
	for rows.Next() {
		var e store.AuditEntry
		if err := rows.Scan(&e.ID, &e.Time, &e.Subject, &e.Name, &e.Address, &e.Action, &e.Scenario, &e.Version, &e.Target, &e.Outcome, &e.RequestID, &e.Repeats, &e.LastTime); err != nil {
			return nil, fmt.Errorf("listing the audit log: %w", err)
		}
		e.Time = e.Time.UTC()
		if e.LastTime != nil {
			t := e.LastTime.UTC()
			e.LastTime = &t
		}
		list = append(list, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the audit log: %w", err)
	}
	return list, nil
}

// PruneAudit implements store.Store. The newest entry is kept, however old, as in SQLite.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.prune(ctx, `DELETE FROM audit_log WHERE id IN
		(SELECT id FROM audit_log WHERE at < $1 AND id < (SELECT max(id) FROM audit_log) LIMIT $2)`, before)
	if err != nil {
		return n, fmt.Errorf("pruning audit entries recorded before %v: %w", before, err)
	}
	return n, nil
}
