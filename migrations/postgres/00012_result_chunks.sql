-- The SQLite store keeps sink results in chunks (migrations/sqlite/00012_result_chunks.sql);
-- the PostgreSQL store keeps one row per result, written with COPY: its schema stays as it is.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
