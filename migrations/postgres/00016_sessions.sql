-- The sessions of the designer's sign-in (auth.SignIn): a session cookie is accepted while
-- its row is here and not expired. Signing out deletes the row, and a sign-in with a lower
-- role than the subject's other sessions deletes theirs: before, a session lived only in its
-- signed cookie, and a copy of it kept its role until it expired, after a sign-out too.
-- The same table as migrations/sqlite/00016_sessions.sql.

-- +goose Up
CREATE TABLE sessions (
    id         text        PRIMARY KEY,
    subject    text        NOT NULL,
    role       text        NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE INDEX sessions_by_subject ON sessions (subject);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- +goose Down
DROP TABLE sessions;
