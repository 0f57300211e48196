-- The same columns as migrations/sqlite/00014_audit_repeats.sql; last_at is null while no
-- request was folded in.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN repeats bigint NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN last_at timestamptz;

-- +goose Down
ALTER TABLE audit_log DROP COLUMN last_at;
ALTER TABLE audit_log DROP COLUMN repeats;
