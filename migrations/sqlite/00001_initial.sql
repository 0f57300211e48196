-- The first schema of the store. Times are INTEGER unix microseconds, UTC. JSON is TEXT,
-- validated by the store before it writes. Tables are STRICT so a wrong type fails loudly.

-- +goose Up
CREATE TABLE scenarios (
    id                  INTEGER PRIMARY KEY,
    name                TEXT    NOT NULL UNIQUE,
    archived            INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    latest_version      INTEGER NOT NULL CHECK (latest_version >= 1),
    -- ID of the scenario's latest sink result; the next one gets last_sink_result_id + 1.
    last_sink_result_id INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE scenario_versions (
    scenario_id INTEGER NOT NULL REFERENCES scenarios (id),
    number      INTEGER NOT NULL CHECK (number >= 1),
    graph       TEXT    NOT NULL,
    comment     TEXT    NOT NULL,
    author      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    -- Refuses a second version with the same number: two saves on the same base cannot both win.
    PRIMARY KEY (scenario_id, number)
) STRICT;

CREATE TABLE deployments (
    -- AUTOINCREMENT: IDs are never reused, even for the highest deleted one.
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    scenario_id INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('DEPLOYING', 'RUNNING', 'CANCELED', 'FAILED')),
    reason      TEXT    NOT NULL DEFAULT '',
    comment     TEXT    NOT NULL,
    user_name   TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    FOREIGN KEY (scenario_id, version) REFERENCES scenario_versions (scenario_id, number)
) STRICT;

CREATE INDEX deployments_by_scenario ON deployments (scenario_id, id);

-- At most one deploying or running deployment per scenario.
CREATE UNIQUE INDEX deployments_one_active ON deployments (scenario_id)
    WHERE status IN ('DEPLOYING', 'RUNNING');

-- Only the latest checkpoint of each deployment.
CREATE TABLE checkpoints (
    deployment_id INTEGER PRIMARY KEY REFERENCES deployments (id),
    sequence      INTEGER NOT NULL,
    state         BLOB    NOT NULL,
    positions     TEXT    NOT NULL, -- JSON array of {"source", "partition", "offset"}
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE sink_results (
    scenario_id INTEGER NOT NULL REFERENCES scenarios (id),
    id          INTEGER NOT NULL,
    sink        TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (scenario_id, id)
) STRICT, WITHOUT ROWID;

-- One row per HTTP source that has accepted events; next_offset survives truncation.
CREATE TABLE event_logs (
    scenario_id INTEGER NOT NULL REFERENCES scenarios (id),
    source      TEXT    NOT NULL,
    next_offset INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scenario_id, source)
) STRICT;

CREATE TABLE events (
    scenario_id  INTEGER NOT NULL,
    source       TEXT    NOT NULL,
    event_offset INTEGER NOT NULL,
    payload      BLOB    NOT NULL,
    accepted_at  INTEGER NOT NULL,
    PRIMARY KEY (scenario_id, source, event_offset),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE events;
DROP TABLE event_logs;
DROP TABLE sink_results;
DROP TABLE checkpoints;
DROP TABLE deployments;
DROP TABLE scenario_versions;
DROP TABLE scenarios;
