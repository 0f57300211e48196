-- Durability: one owner per deployment (leases with a fencing epoch), crash-loop counting,
-- checkpoint checksums and a row for the store's write probe (/readyz).

-- +goose Up
-- How many runs in a row started without a clean stop (store.Store.BeginRun, EndRun).
ALTER TABLE deployments ADD COLUMN unclean_runs INTEGER NOT NULL DEFAULT 0;

-- CRC-32C of state; NULL for checkpoints written before checksums were kept.
ALTER TABLE checkpoints ADD COLUMN state_crc32c INTEGER;

-- The server that runs each deployment. epoch increases at each take-over; a checkpoint
-- commits only under the current epoch. owner '' and expires_at 0: nobody holds it.
CREATE TABLE deployment_leases (
    deployment_id INTEGER PRIMARY KEY REFERENCES deployments (id),
    owner         TEXT    NOT NULL,
    epoch         INTEGER NOT NULL CHECK (epoch >= 1),
    expires_at    INTEGER NOT NULL
) STRICT;

-- One row, rewritten by each readiness probe.
CREATE TABLE store_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE store_probe;
DROP TABLE deployment_leases;
ALTER TABLE checkpoints DROP COLUMN state_crc32c;
ALTER TABLE deployments DROP COLUMN unclean_runs;
