-- The audit log (store.AuditEntry); the same table as migrations/sqlite/00007_audit_log.sql.

-- +goose Up
CREATE TABLE audit_log (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL,
    subject    text        NOT NULL,
    name       text        NOT NULL,
    address    text        NOT NULL,
    action     text        NOT NULL,
    scenario   text        NOT NULL,
    version    integer     NOT NULL,
    outcome    text        NOT NULL,
    request_id text        NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_scenario ON audit_log (scenario, id);

-- +goose Down
DROP TABLE audit_log;
