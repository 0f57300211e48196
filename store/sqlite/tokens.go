package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

const tokenSelect = `SELECT id, name, role, secret_hash, created_at, expires_at, revoked_at FROM api_tokens`

func scanToken(row interface{ Scan(...any) error }) (store.Token, error) {
	var t store.Token
	var created int64
	var expires, revoked sql.NullInt64
	if err := row.Scan(&t.ID, &t.Name, &t.Role, &t.SecretHash, &created, &expires, &revoked); err != nil {
		return t, err
	}
	t.CreatedAt = fromMicros(created)
	if expires.Valid {
		t.ExpiresAt = fromMicros(expires.Int64)
	}
	if revoked.Valid {
		t.RevokedAt = fromMicros(revoked.Int64)
	}
	return t, nil
}

// nullMicros is t in microseconds, NULL for the zero time.
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(t), Valid: true}
}

// CreateToken implements store.Store.
func (s *Store) CreateToken(ctx context.Context, nt store.NewToken) (store.Token, error) {
	t := store.Token{Name: nt.Name, Role: nt.Role, SecretHash: nt.SecretHash, CreatedAt: now()}
	if !nt.ExpiresAt.IsZero() {
		t.ExpiresAt = nt.ExpiresAt.UTC().Truncate(time.Microsecond)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx,
			`INSERT INTO api_tokens (name, role, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
			t.Name, t.Role, t.SecretHash, micros(t.CreatedAt), nullMicros(t.ExpiresAt)).Scan(&t.ID)
		if isUnique(err) {
			return store.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return store.Token{}, fmt.Errorf("creating token %q: %w", nt.Name, err)
	}
	return t, nil
}

// ListTokens implements store.Store.
func (s *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	rows, err := s.read.QueryContext(ctx, tokenSelect+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing tokens: %w", err)
	}
	defer rows.Close()
	var list []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("listing tokens: %w", err)
		}
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tokens: %w", err)
	}
	return list, nil
}

// RevokeToken implements store.Store.
func (s *Store) RevokeToken(ctx context.Context, id int64) (store.Token, error) {
	var t store.Token
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = scanToken(tx.QueryRowContext(ctx,
			`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?
			 RETURNING id, name, role, secret_hash, created_at, expires_at, revoked_at`, micros(now()), id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Token{}, fmt.Errorf("revoking token %d: %w", id, err)
	}
	return t, nil
}

// LookupToken implements store.Store.
func (s *Store) LookupToken(ctx context.Context, hash []byte, at time.Time) (store.Token, error) {
	t, err := scanToken(s.read.QueryRowContext(ctx,
		tokenSelect+` WHERE secret_hash = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`,
		hash, micros(at)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, fmt.Errorf("looking up a token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("looking up a token: %w", err)
	}
	return t, nil
}
