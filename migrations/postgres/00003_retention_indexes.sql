-- Indexes for retention; the same as migrations/sqlite/00003_retention_indexes.sql.

-- +goose Up
CREATE INDEX sink_results_created_at ON sink_results (created_at);
CREATE INDEX event_batches_accepted_at ON event_batches (accepted_at);

-- +goose Down
DROP INDEX event_batches_accepted_at;
DROP INDEX sink_results_created_at;
