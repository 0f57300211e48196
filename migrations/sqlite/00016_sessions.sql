-- The sessions of the designer's sign-in (auth.SignIn): a session cookie is accepted while
-- its row is here and not expired. Signing out deletes the row, and a sign-in with a lower
-- role than the subject's other sessions deletes theirs: before, a session lived only in its
-- signed cookie, and a copy of it kept its role until it expired, after a sign-out too.
-- The same table as migrations/postgres/00016_sessions.sql.

-- +goose Up
CREATE TABLE sessions (
    id         TEXT    PRIMARY KEY,
    subject    TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX sessions_by_subject ON sessions (subject);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- +goose Down
DROP TABLE sessions;
