-- The same as migrations/sqlite/00004_leases_checksums.sql: leases with a fencing epoch,
-- crash-loop counting, checkpoint checksums and the write probe's row.

-- +goose Up
ALTER TABLE deployments ADD COLUMN unclean_runs integer NOT NULL DEFAULT 0;

-- CRC-32C of state (0 to 2^32-1); NULL for checkpoints written before checksums were kept.
ALTER TABLE checkpoints ADD COLUMN state_crc32c bigint;

CREATE TABLE deployment_leases (
    deployment_id bigint      PRIMARY KEY REFERENCES deployments (id),
    owner         text        NOT NULL,
    epoch         bigint      NOT NULL CHECK (epoch >= 1),
    expires_at    timestamptz NOT NULL
);

CREATE TABLE store_probe (
    id integer     PRIMARY KEY CHECK (id = 1),
    at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE store_probe;
DROP TABLE deployment_leases;
ALTER TABLE checkpoints DROP COLUMN state_crc32c;
ALTER TABLE deployments DROP COLUMN unclean_runs;
