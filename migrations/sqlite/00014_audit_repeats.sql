-- Requests repeated in a loop (reading results) are folded into one audit entry a minute
-- (store.AuditStore.FoldAudit): repeats counts the requests folded in after the first, last_at
-- is the time of the last of them (microseconds since the Unix epoch; 0 while none was).

-- +goose Up
ALTER TABLE audit_log ADD COLUMN repeats INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN last_at INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE audit_log DROP COLUMN last_at;
ALTER TABLE audit_log DROP COLUMN repeats;
