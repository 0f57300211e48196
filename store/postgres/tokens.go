package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
)

const tokenColumns = `id, name, role, secret_hash, created_at, expires_at, revoked_at`

func scanToken(row pgx.Row) (store.Token, error) {
	var t store.Token
	var expires, revoked *time.Time
	if err := row.Scan(&t.ID, &t.Name, &t.Role, &t.SecretHash, &t.CreatedAt, &expires, &revoked); err != nil {
		return t, err
	}
	t.CreatedAt = t.CreatedAt.UTC()
	if expires != nil {
		t.ExpiresAt = expires.UTC()
	}
	if revoked != nil {
		t.RevokedAt = revoked.UTC()
	}
	return t, nil
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// CreateToken implements store.Store.
func (s *Store) CreateToken(ctx context.Context, nt store.NewToken) (store.Token, error) {
	t := store.Token{Name: nt.Name, Role: nt.Role, SecretHash: nt.SecretHash, CreatedAt: now()}
	if !nt.ExpiresAt.IsZero() {
		t.ExpiresAt = nt.ExpiresAt.UTC().Truncate(time.Microsecond)
	}
	err := s.pool.QueryRow(ctx,
		`INSERT INTO api_tokens (name, role, secret_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		t.Name, t.Role, t.SecretHash, t.CreatedAt, nullTime(t.ExpiresAt)).Scan(&t.ID)
	if isUnique(err, "api_tokens_secret_hash_key") {
		err = store.ErrAlreadyExists
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("creating token %q: %w", nt.Name, err)
	}
	return t, nil
}

// ListTokens implements store.Store.
func (s *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY id`)
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
	t, err := scanToken(s.pool.QueryRow(ctx,
		`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 RETURNING `+tokenColumns,
		now(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("revoking token %d: %w", id, err)
	}
	return t, nil
}

// LookupToken implements store.Store.
func (s *Store) LookupToken(ctx context.Context, hash []byte, at time.Time) (store.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx,
		`SELECT `+tokenColumns+` FROM api_tokens
		 WHERE secret_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)`, hash, at))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("looking up a token: %w", err)
	}
	return t, nil
}
