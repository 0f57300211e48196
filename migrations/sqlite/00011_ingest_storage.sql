-- The PostgreSQL storage settings of migrations/postgres/00011_ingest_storage.sql (lz4 for
-- event chunks, no per-row foreign key check on sink results) have no SQLite counterpart:
-- SQLite does not compress, and its schema stays as it is.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
