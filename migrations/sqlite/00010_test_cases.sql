-- Saved test cases (store.TestCase): per scenario, named sample records and the sink outputs
-- they must give. Deploys run them first. Records and expected outputs are kept as text
-- (JSON lines; a JSON object of sink id to a list of values).

-- +goose Up
CREATE TABLE test_cases (
    id INTEGER PRIMARY KEY,
    scenario   TEXT NOT NULL,
    name       TEXT NOT NULL,
    records    TEXT NOT NULL,
    expected   TEXT NOT NULL,
    author     TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (scenario, name)
) STRICT;

-- +goose Down
DROP TABLE test_cases;
