package postgres

import (
	"context"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
)

// PutTestCase implements store.Store.
func (s *Store) PutTestCase(ctx context.Context, c store.TestCase) (store.TestCase, error) {
	c.UpdatedAt = now()
	_, err := s.pool.Exec(ctx,
		`INSERT INTO test_cases (scenario, name, records, expected, author, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		 ON CONFLICT (scenario, name) DO UPDATE SET records = excluded.records, expected = excluded.expected,
		   author = excluded.author, updated_at = excluded.updated_at`,
		c.Scenario, c.Name, c.Records, c.Expected, c.Author, c.UpdatedAt)
	if err != nil {
		return store.TestCase{}, fmt.Errorf("saving test case %q of %q: %w", c.Name, c.Scenario, s.classify(err))
	}
	return c, nil
}

// ListTestCases implements store.Store.
func (s *Store) ListTestCases(ctx context.Context, scenario string) ([]store.TestCase, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT scenario, name, records, expected, author, updated_at FROM test_cases WHERE scenario = $1 ORDER BY name`, scenario)
	if err != nil {
		return nil, fmt.Errorf("listing test cases of %q: %w", scenario, err)
	}
	defer rows.Close()
	var list []store.TestCase
	for rows.Next() {
		var c store.TestCase
		if err := rows.Scan(&c.Scenario, &c.Name, &c.Records, &c.Expected, &c.Author, &c.UpdatedAt); err != nil {
			return nil, fmt.Errorf("listing test cases of %q: %w", scenario, err)
		}
		c.UpdatedAt = c.UpdatedAt.UTC()
		list = append(list, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing test cases of %q: %w", scenario, err)
	}
	return list, nil
}

// DeleteTestCase implements store.Store.
func (s *Store) DeleteTestCase(ctx context.Context, scenario, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM test_cases WHERE scenario = $1 AND name = $2`, scenario, name)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("deleting test case %q of %q: %w", name, scenario, err)
	}
	return nil
}
