package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/scenario-server/scenario-server/store"
)

// PutTestCase implements store.Store.
func (s *Store) PutTestCase(ctx context.Context, c store.TestCase) (store.TestCase, error) {
	c.UpdatedAt = now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO test_cases (scenario, name, records, expected, author, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			 ON CONFLICT (scenario, name) DO UPDATE SET records = excluded.records, expected = excluded.expected,
			   author = excluded.author, updated_at = excluded.updated_at`,
			c.Scenario, c.Name, c.Records, c.Expected, c.Author, micros(c.UpdatedAt))
		return err
	})
	if err != nil {
		return store.TestCase{}, fmt.Errorf("saving test case %q of %q: %w", c.Name, c.Scenario, err)
	}
	return c, nil
}

// ListTestCases implements store.Store.
func (s *Store) ListTestCases(ctx context.Context, scenario string) ([]store.TestCase, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT scenario, name, records, expected, author, updated_at FROM test_cases WHERE scenario = ? ORDER BY name`, scenario)
	if err != nil {
		return nil, fmt.Errorf("listing test cases of %q: %w", scenario, err)
	}
	defer rows.Close()
	var list []store.TestCase
	for rows.Next() {
		var c store.TestCase
		var at int64
		if err := rows.Scan(&c.Scenario, &c.Name, &c.Records, &c.Expected, &c.Author, &at); err != nil {
			return nil, fmt.Errorf("listing test cases of %q: %w", scenario, err)
		}
		c.UpdatedAt = fromMicros(at)
		list = append(list, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing test cases of %q: %w", scenario, err)
	}
	return list, nil
}

// DeleteTestCase implements store.Store.
func (s *Store) DeleteTestCase(ctx context.Context, scenario, name string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM test_cases WHERE scenario = ? AND name = ?`, scenario, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting test case %q of %q: %w", name, scenario, err)
	}
	return nil
}
