-- The first schema of the store; the same tables as migrations/sqlite/00001_initial.sql.
-- Graphs and sink values are json (validated, kept byte for byte), not jsonb.

-- +goose Up
CREATE TABLE scenarios (
    id                  bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                text    NOT NULL UNIQUE,
    archived            boolean NOT NULL DEFAULT false,
    latest_version      integer NOT NULL CHECK (latest_version >= 1),
    -- ID of the scenario's latest sink result; the next one gets last_sink_result_id + 1.
    last_sink_result_id bigint  NOT NULL DEFAULT 0
);

CREATE TABLE scenario_versions (
    scenario_id bigint      NOT NULL REFERENCES scenarios (id),
    number      integer     NOT NULL CHECK (number >= 1),
    graph       json        NOT NULL,
    comment     text        NOT NULL,
    author      text        NOT NULL,
    created_at  timestamptz NOT NULL,
    -- Refuses a second version with the same number: two saves on the same base cannot both win.
    PRIMARY KEY (scenario_id, number)
);

CREATE TABLE deployments (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scenario_id bigint      NOT NULL,
    version     integer     NOT NULL,
    status      text        NOT NULL CHECK (status IN ('DEPLOYING', 'RUNNING', 'CANCELED', 'FAILED')),
    reason      text        NOT NULL DEFAULT '',
    comment     text        NOT NULL,
    user_name   text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    FOREIGN KEY (scenario_id, version) REFERENCES scenario_versions (scenario_id, number)
);

CREATE INDEX deployments_by_scenario ON deployments (scenario_id, id);

-- At most one deploying or running deployment per scenario.
CREATE UNIQUE INDEX deployments_one_active ON deployments (scenario_id)
    WHERE status IN ('DEPLOYING', 'RUNNING');

-- Only the latest checkpoint of each deployment.
CREATE TABLE checkpoints (
    deployment_id bigint      PRIMARY KEY REFERENCES deployments (id),
    sequence      bigint      NOT NULL,
    state         bytea       NOT NULL,
    positions     jsonb       NOT NULL, -- array of {"source", "partition", "offset"}
    created_at    timestamptz NOT NULL
);

CREATE TABLE sink_results (
    scenario_id bigint      NOT NULL REFERENCES scenarios (id),
    id          bigint      NOT NULL,
    sink        text        NOT NULL,
    value       json        NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (scenario_id, id)
);

-- One row per HTTP source that has accepted events; next_offset survives truncation.
CREATE TABLE event_logs (
    scenario_id bigint NOT NULL REFERENCES scenarios (id),
    source      text   NOT NULL,
    next_offset bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (scenario_id, source)
);

CREATE TABLE events (
    scenario_id  bigint      NOT NULL,
    source       text        NOT NULL,
    event_offset bigint      NOT NULL,
    payload      bytea       NOT NULL,
    accepted_at  timestamptz NOT NULL,
    PRIMARY KEY (scenario_id, source, event_offset),
    FOREIGN KEY (scenario_id, source) REFERENCES event_logs (scenario_id, source)
);

-- +goose Down
DROP TABLE events;
DROP TABLE event_logs;
DROP TABLE sink_results;
DROP TABLE checkpoints;
DROP TABLE deployments;
DROP TABLE scenario_versions;
DROP TABLE scenarios;
