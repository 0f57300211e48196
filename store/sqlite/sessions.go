package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/scenario-server/scenario-server/store"
)

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, ss store.Session) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id IN
			(SELECT id FROM sessions WHERE expires_at <= ? LIMIT 100)`, micros(now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, subject, role, expires_at) VALUES (?, ?, ?, ?)`,
			ss.ID, ss.Subject, ss.Role, micros(ss.ExpiresAt))
		if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
			return store.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating a session of %q: %w", ss.Subject, err)
	}
	return nil
}

// SessionLive implements store.Store.
func (s *Store) SessionLive(ctx context.Context, id string, at time.Time) (bool, error) {
	var live bool
	err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ? AND expires_at > ?)`,
		id, micros(at)).Scan(&live)
	if err != nil {
		return false, fmt.Errorf("looking up a session: %w", err)
	}
	return live, nil
}

// EndSession implements store.Store.
func (s *Store) EndSession(ctx context.Context, id string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("ending a session: %w", err)
	}
	return nil
}

// EndSessions implements store.Store.
func (s *Store) EndSessions(ctx context.Context, subject string, roles []string) (int64, error) {
	if len(roles) == 0 {
		return 0, nil
	}
	args := []any{subject}
	for _, r := range roles {
		args = append(args, r)
	}
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE subject = ? AND role IN (?`+
			strings.Repeat(", ?", len(roles)-1)+`)`, args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ending the sessions of %q: %w", subject, err)
	}
	return n, nil
}
