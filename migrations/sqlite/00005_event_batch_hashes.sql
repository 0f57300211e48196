-- The SHA-256 of each keyed batch's events (store.AppendEventBatch): a key re-sent with other
-- events of the same number is refused instead of answered as a duplicate. NULL for batches
-- stored before hashes were kept: those compare by number of events only.

-- +goose Up
ALTER TABLE event_batches ADD COLUMN batch_sha256 BLOB;

-- +goose Down
ALTER TABLE event_batches DROP COLUMN batch_sha256;
