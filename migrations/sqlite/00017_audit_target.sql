-- What an audit entry acted on besides a scenario (store.AuditEntry.Target): the token of
-- token.create and token.revoke, the role a sign-in gave; '' when none applies.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN target TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE audit_log DROP COLUMN target;
