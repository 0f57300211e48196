-- One row per appended batch of events instead of one per event; the same tables as
-- migrations/sqlite/00009_event_chunks.sql. Down keeps the chunks of one event only: drain
-- the deployments before going back.

-- +goose Up
ALTER TABLE event_logs ADD COLUMN truncated_below bigint NOT NULL DEFAULT 0;

CREATE TABLE event_chunks (
    scenario_id bigint      NOT NULL,
    source      text        NOT NULL,
    last_offset bigint      NOT NULL,
    event_count integer     NOT NULL CHECK (event_count >= 1),
    payloads    bytea       NOT NULL,
    accepted_at timestamptz NOT NULL,
    PRIMARY KEY (scenario_id, source, last_offset),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
);

INSERT INTO event_chunks (scenario_id, source, last_offset, event_count, payloads, accepted_at)
    SELECT scenario_id, source, event_offset, 1, payload, accepted_at FROM events;

UPDATE event_logs l SET truncated_below = coalesce(
    (SELECT min(e.event_offset) FROM events e WHERE e.scenario_id = l.scenario_id AND e.source = l.source),
    l.next_offset);

DROP TABLE events;

-- +goose Down
CREATE TABLE events (
    scenario_id  bigint      NOT NULL,
    source       text        NOT NULL,
    event_offset bigint      NOT NULL,
    payload      bytea       NOT NULL,
    accepted_at  timestamptz NOT NULL,
    PRIMARY KEY (scenario_id, source, event_offset),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
);

INSERT INTO events (scenario_id, source, event_offset, payload, accepted_at)
    SELECT c.scenario_id, c.source, c.last_offset, c.payloads, c.accepted_at
    FROM event_chunks c JOIN event_logs l ON l.scenario_id = c.scenario_id AND l.source = c.source
    WHERE c.event_count = 1 AND c.last_offset >= l.truncated_below;

DROP TABLE event_chunks;
ALTER TABLE event_logs DROP COLUMN truncated_below;
