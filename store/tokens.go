package store

import (
	"context"
	"time"
)

// TokenStore keeps the API tokens (see auth.Tokens): their names, roles and the SHA-256 of
// their secrets, never the secrets themselves. Store embeds it.
type TokenStore interface {
	// CreateToken stores t and returns it with its ID and CreatedAt.
	// Errors: ErrAlreadyExists when a token with the same SecretHash exists (a 256-bit secret
	// drawn twice: the caller draws again).
	CreateToken(ctx context.Context, t NewToken) (Token, error)

	// ListTokens returns every token, revoked and expired ones too, ordered by ID. An empty
	// result is a nil slice and no error.
	ListTokens(ctx context.Context) ([]Token, error)

	// RevokeToken marks the token id revoked at the store's clock and returns it. Revoking a
	// revoked token is not an error and keeps its first RevokedAt. Errors: ErrNotFound.
	RevokeToken(ctx context.Context, id int64) (Token, error)

	// LookupToken returns the token whose SecretHash is hash, when it is neither revoked nor
	// expired at the time at. Errors: ErrNotFound when there is no such token, or it is
	// revoked, or its ExpiresAt is not after at (the caller answers all three the same way).
	LookupToken(ctx context.Context, hash []byte, at time.Time) (Token, error)
}

// NewToken is what CreateToken stores.
type NewToken struct {
	// Name says who or what uses the token ("ci"); it is the name the history and the audit
	// log show.
	Name string
	// Role is the role the token grants, one of auth.Roles' names.
	Role string
	// SecretHash is the SHA-256 of the token's secret (32 bytes).
	SecretHash []byte
	// ExpiresAt is when the token stops being accepted; zero means never.
	ExpiresAt time.Time
}

// Token is a stored API token.
type Token struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	Role       string    `json:"role"`
	SecretHash []byte    `json:"-"`
	CreatedAt  time.Time `json:"createdAt"`
	// ExpiresAt is zero for a token that never expires.
	ExpiresAt time.Time `json:"expiresAt"`
	// RevokedAt is zero for a token not revoked.
	RevokedAt time.Time `json:"revokedAt"`
}

// SessionStore keeps the sessions of the designer's sign-in (auth.SignIn): a session cookie
// is accepted while its session is here and not expired. Store embeds it.
type SessionStore interface {
	// CreateSession stores s, and deletes sessions expired at s's creation (at most 100 at a
	// time, so that the table does not grow with them).
	// Errors: ErrAlreadyExists when a session with s.ID exists.
	CreateSession(ctx context.Context, s Session) error

	// SessionLive reports whether session id is stored and its ExpiresAt is after at.
	SessionLive(ctx context.Context, id string, at time.Time) (bool, error)

	// EndSession deletes session id (signing out). An unknown id is not an error.
	EndSession(ctx context.Context, id string) error

	// EndSessions deletes the sessions of subject whose role is one of roles (a sign-in with
	// a lower role ends those with higher ones), and returns how many it deleted.
	EndSessions(ctx context.Context, subject string, roles []string) (int64, error)
}

// Session is a stored session of the designer's sign-in.
type Session struct {
	// ID is the session's random name, which its signed cookie carries.
	ID      string
	Subject string
	// Role is the role the provider gave at sign-in, one of auth.Roles' names.
	Role      string
	ExpiresAt time.Time
}
