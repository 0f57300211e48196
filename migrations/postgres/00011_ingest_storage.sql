-- Cheaper writes on the ingestion path (issue 14); the same file name as
-- migrations/sqlite/00011_ingest_storage.sql, which changes nothing.
--
-- event_chunks.payloads: lz4 instead of pglz for the chunks PostgreSQL compresses (a batch
-- of JSON lines past 2 kB); pglz was a sixth of the server's CPU during ingestion. Only where
-- PostgreSQL has lz4 (version 14 on, built with it): elsewhere the column keeps pglz. Rows
-- stored before keep their compression; both read back the same.
--
-- sink_results: without its foreign key to scenarios, whose per-row check was a third of the
-- cost of inserting results at a checkpoint. Every insert takes the scenario's id from the
-- UPDATE of the scenario's row in the same transaction (appendSinkResults), which locks the
-- row until commit, and scenarios are never deleted: the key could not fail.

-- +goose Up
-- The three tables are locked first, scenarios first, in the order a running server's
-- checkpoint (scenarios, then sink_results) and appends (scenarios, then event_chunks) take
-- them: ALTER TABLE alone would lock event_chunks, then sink_results and scenarios, and could
-- deadlock with a server of the previous version still running (a rolling upgrade). The
-- lock waits at most 5 s (holding scenarios meanwhile, which stops the running servers'
-- statements on it): then the migration fails and the server does not start, and starting
-- it again tries again.
SET LOCAL lock_timeout = '5s';
LOCK TABLE scenarios, sink_results, event_chunks IN ACCESS EXCLUSIVE MODE;
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE event_chunks ALTER COLUMN payloads SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    NULL;
END
$$;
-- +goose StatementEnd
ALTER TABLE sink_results DROP CONSTRAINT sink_results_scenario_id_fkey;

-- +goose Down
SET LOCAL lock_timeout = '5s';
LOCK TABLE scenarios, sink_results, event_chunks IN ACCESS EXCLUSIVE MODE;
ALTER TABLE sink_results ADD CONSTRAINT sink_results_scenario_id_fkey
    FOREIGN KEY (scenario_id) REFERENCES scenarios (id);
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE event_chunks ALTER COLUMN payloads SET COMPRESSION pglz';
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
    NULL;
END
$$;
-- +goose StatementEnd
