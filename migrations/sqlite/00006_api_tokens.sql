-- API tokens (store.Token): only the SHA-256 of each token's secret is kept, so a copy of the
-- database does not give the tokens away. Tokens are revoked, never deleted.

-- +goose Up
CREATE TABLE api_tokens (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    secret_hash BLOB    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER
);

-- +goose Down
DROP TABLE api_tokens;
