-- Saved test cases (store.TestCase): per scenario, named sample records and the sink outputs
-- they must give. Deploys run them first. Records and expected outputs are kept as text
-- (JSON lines; a JSON object of sink id to a list of values).

-- +goose Up
CREATE TABLE test_cases (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scenario   text NOT NULL,
    name       text NOT NULL,
    records    text NOT NULL,
    expected   text NOT NULL,
    author     text NOT NULL,
    updated_at timestamptz NOT NULL,
    UNIQUE (scenario, name)
);

-- +goose Down
DROP TABLE test_cases;
