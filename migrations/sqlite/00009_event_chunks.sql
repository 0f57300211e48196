-- One row per appended batch of events instead of one per event (store.AppendEventBatch):
-- event_chunks keeps a batch's payloads in one value (one event: its payload; several: each
-- payload's length as a uvarint and its bytes), keyed by the offset of its last event.
-- event_logs.truncated_below is the log's truncation point (TruncateEvents): the events below
-- it are gone, also those of a chunk that reaches above it.
-- Down keeps the chunks of one event only: drain the deployments before going back.

-- +goose Up
ALTER TABLE event_logs ADD COLUMN truncated_below INTEGER NOT NULL DEFAULT 0;

CREATE TABLE event_chunks (
    scenario_id INTEGER NOT NULL,
    source      TEXT    NOT NULL,
    last_offset INTEGER NOT NULL,
    event_count INTEGER NOT NULL CHECK (event_count >= 1),
    payloads    BLOB    NOT NULL,
    accepted_at INTEGER NOT NULL,
    PRIMARY KEY (scenario_id, source, last_offset),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
) STRICT;

INSERT INTO event_chunks (scenario_id, source, last_offset, event_count, payloads, accepted_at)
    SELECT scenario_id, source, event_offset, 1, payload, accepted_at FROM events;

UPDATE event_logs SET truncated_below = coalesce(
    (SELECT min(e.event_offset) FROM events e
     WHERE e.scenario_id = event_logs.scenario_id AND e.source = event_logs.source),
    next_offset);

DROP TABLE events;

-- +goose Down
CREATE TABLE events (
    scenario_id  INTEGER NOT NULL,
    source       TEXT    NOT NULL,
    event_offset INTEGER NOT NULL,
    payload      BLOB    NOT NULL,
    accepted_at  INTEGER NOT NULL,
    PRIMARY KEY (scenario_id, source, event_offset),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
) STRICT, WITHOUT ROWID;

INSERT INTO events (scenario_id, source, event_offset, payload, accepted_at)
    SELECT scenario_id, source, last_offset, payloads, accepted_at FROM event_chunks
    WHERE event_count = 1 AND last_offset >= (SELECT l.truncated_below FROM event_logs l
        WHERE l.scenario_id = event_chunks.scenario_id AND l.source = event_chunks.source);

DROP TABLE event_chunks;
ALTER TABLE event_logs DROP COLUMN truncated_below;
