-- Client keys of appended event batches (store.AppendEventBatch); the same table as
-- migrations/sqlite/00002_event_batches.sql.

-- +goose Up
CREATE TABLE event_batches (
    scenario_id  bigint      NOT NULL,
    source       text        NOT NULL,
    batch_key    text        NOT NULL,
    first_offset bigint      NOT NULL,
    event_count  integer     NOT NULL,
    accepted_at  timestamptz NOT NULL,
    PRIMARY KEY (scenario_id, source, batch_key),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
);

-- +goose Down
DROP TABLE event_batches;
