-- The SHA-256 of each keyed batch's events; the same column as
-- migrations/sqlite/00005_event_batch_hashes.sql.

-- +goose Up
ALTER TABLE event_batches ADD COLUMN batch_sha256 bytea;

-- +goose Down
ALTER TABLE event_batches DROP COLUMN batch_sha256;
