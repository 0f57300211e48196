-- Four-eyes deploy (store.DeployRequest): with --deploy-approval a deploy is a request that
-- another deployer approves or rejects. At most one request per scenario is pending (the
-- partial unique index). Times in microseconds since the Unix epoch.

-- +goose Up
CREATE TABLE deploy_requests (
    id                 INTEGER PRIMARY KEY,
    scenario           TEXT    NOT NULL,
    version            INTEGER NOT NULL,
    comment            TEXT    NOT NULL,
    status             TEXT    NOT NULL,
    requested_subject  TEXT    NOT NULL,
    requested_name     TEXT    NOT NULL,
    requested_at       INTEGER NOT NULL,
    decided_subject    TEXT    NOT NULL DEFAULT '',
    decided_name       TEXT    NOT NULL DEFAULT '',
    decided_at         INTEGER,
    decision_comment   TEXT    NOT NULL DEFAULT '',
    deployment_id      INTEGER,
    outcome            TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE UNIQUE INDEX deploy_requests_one_pending ON deploy_requests (scenario) WHERE status = 'PENDING';
CREATE INDEX deploy_requests_scenario ON deploy_requests (scenario, id);

-- +goose Down
DROP TABLE deploy_requests;
