-- The index FoldAudit finds the entry to fold a request into by: its key, then the newest
-- time. Found by audit_log_at or the primary key instead, a request that matched nothing read
-- every entry of the fold window, or of the whole log (a generic plan walked audit_log_pkey
-- backwards: 143 ms a request with 1,000,000 older entries, under the audit append lock).
-- The same index as migrations/sqlite/00015_audit_fold_index.sql.

-- +goose Up
CREATE INDEX audit_log_fold ON audit_log (subject, name, address, action, scenario, version, outcome, at, id);

-- +goose Down
DROP INDEX audit_log_fold;
