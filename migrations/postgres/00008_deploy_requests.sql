-- Four-eyes deploy (store.DeployRequest); the same table as
-- migrations/sqlite/00008_deploy_requests.sql.

-- +goose Up
CREATE TABLE deploy_requests (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scenario           text        NOT NULL,
    version            integer     NOT NULL,
    comment            text        NOT NULL,
    status             text        NOT NULL,
    requested_subject  text        NOT NULL,
    requested_name     text        NOT NULL,
    requested_at       timestamptz NOT NULL,
    decided_subject    text        NOT NULL DEFAULT '',
    decided_name       text        NOT NULL DEFAULT '',
    decided_at         timestamptz,
    decision_comment   text        NOT NULL DEFAULT '',
    deployment_id      bigint,
    outcome            text        NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX deploy_requests_one_pending ON deploy_requests (scenario) WHERE status = 'PENDING';
CREATE INDEX deploy_requests_scenario ON deploy_requests (scenario, id);

-- +goose Down
DROP TABLE deploy_requests;
