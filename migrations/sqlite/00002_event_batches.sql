-- Client keys of appended event batches (store.AppendEventBatch): a batch re-sent under the
-- same key is not appended twice. Kept as long as the log, truncation included.

-- +goose Up
CREATE TABLE event_batches (
    scenario_id  INTEGER NOT NULL,
    source       TEXT    NOT NULL,
    batch_key    TEXT    NOT NULL,
    first_offset INTEGER NOT NULL,
    event_count  INTEGER NOT NULL,
    accepted_at  INTEGER NOT NULL,
    PRIMARY KEY (scenario_id, source, batch_key),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE event_batches;
