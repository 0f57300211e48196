package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, ss store.Session) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id IN
		(SELECT id FROM sessions WHERE expires_at <= $1 LIMIT 100)`, now()); err != nil {
		return fmt.Errorf("creating a session of %q: %w", ss.Subject, err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (id, subject, role, expires_at) VALUES ($1, $2, $3, $4)`,
		ss.ID, ss.Subject, ss.Role, ss.ExpiresAt)
	if isUnique(err, "sessions_pkey") {
		err = store.ErrAlreadyExists
	}
	if err != nil {
		return fmt.Errorf("creating a session of %q: %w", ss.Subject, err)
	}
	return nil
}

// SessionLive implements store.Store.
func (s *Store) SessionLive(ctx context.Context, id string, at time.Time) (bool, error) {
	var live bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND expires_at > $2)`, id, at).Scan(&live)
	if err != nil {
		return false, fmt.Errorf("looking up a session: %w", err)
	}
	return live, nil
}

// EndSession implements store.Store.
func (s *Store) EndSession(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id); err != nil {
		return fmt.Errorf("ending a session: %w", err)
	}
	return nil
}

// EndSessions implements store.Store.
func (s *Store) EndSessions(ctx context.Context, subject string, roles []string) (int64, error) {
	if len(roles) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE subject = $1 AND role = ANY($2)`, subject, roles)
	if err != nil {
		return 0, fmt.Errorf("ending the sessions of %q: %w", subject, err)
	}
	return tag.RowsAffected(), nil
}
