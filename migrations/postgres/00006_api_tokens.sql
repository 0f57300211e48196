-- API tokens (store.Token); the same table as migrations/sqlite/00006_api_tokens.sql.

-- +goose Up
CREATE TABLE api_tokens (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL,
    role        text        NOT NULL,
    secret_hash bytea       NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    revoked_at  timestamptz
);

-- +goose Down
DROP TABLE api_tokens;
