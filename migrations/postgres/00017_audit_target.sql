-- The same column as migrations/sqlite/00017_audit_target.sql.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN target text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE audit_log DROP COLUMN target;
