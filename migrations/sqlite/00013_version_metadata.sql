-- The metadata of each version without its graph: listing scenarios (their first and latest
-- versions' times and authors) and a version history read the index alone. The table's rows
-- hold the graph before these columns, so reading them from the table walks the graph's
-- overflow pages: a list page of scenarios with 9 MiB graphs took 0.5 to 1 s of a read
-- connection each.

-- +goose Up
CREATE INDEX scenario_versions_meta ON scenario_versions (scenario_id, number, created_at, author, comment);

-- +goose Down
DROP INDEX scenario_versions_meta;
