package store

import (
	"context"
	"time"
)

// TestCaseStore keeps a scenario's saved test cases: named sample records and the sink outputs
// they must give. Store embeds it.
type TestCaseStore interface {
	// PutTestCase stores c, replacing the scenario's test case of the same name, with the
	// store's clock as UpdatedAt, and returns it. It does not check the scenario (the caller
	// does).
	PutTestCase(ctx context.Context, c TestCase) (TestCase, error)

	// ListTestCases returns the scenario's test cases ordered by name. An empty result is a
	// nil slice and no error.
	ListTestCases(ctx context.Context, scenario string) ([]TestCase, error)

	// DeleteTestCase removes the scenario's test case name. Errors: ErrNotFound.
	DeleteTestCase(ctx context.Context, scenario, name string) error
}

// TestCase is a saved test case.
type TestCase struct {
	Scenario string
	Name     string
	// Records are the sample records, JSON lines.
	Records string
	// Expected is a JSON object: sink node id → the list of values the sink must write, in
	// order.
	Expected string
	// Author is who saved it (the identity's name).
	Author    string
	UpdatedAt time.Time
}
