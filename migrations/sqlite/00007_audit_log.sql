-- The audit log (store.AuditEntry): who did what to which scenario, from where, and how it
-- ended. Entries are only appended. Time in microseconds since the Unix epoch.

-- +goose Up
CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    subject    TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    address    TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    scenario   TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    outcome    TEXT    NOT NULL,
    request_id TEXT    NOT NULL
) STRICT;
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_scenario ON audit_log (scenario, id);

-- +goose Down
DROP TABLE audit_log;
