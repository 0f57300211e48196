package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
)

// scenarioSelect reads a store.Scenario with scanScenario; version 1 gives the creation, the
// latest version the modification.
// (The versions' metadata come from the index scenario_versions_meta alone: a version's row
// holds its graph first, and reading the columns after it walks the graph's pages.)
const scenarioSelect = `
SELECT s.name, s.archived, s.latest_version, f.created_at, f.author, l.created_at, l.author
FROM scenarios s
JOIN scenario_versions f INDEXED BY scenario_versions_meta ON f.scenario_id = s.id AND f.number = 1
JOIN scenario_versions l INDEXED BY scenario_versions_meta ON l.scenario_id = s.id AND l.number = s.latest_version`

func scanScenario(row interface{ Scan(...any) error }) (store.Scenario, error) {
	var sc store.Scenario
	var created, modified int64
	err := row.Scan(&sc.Name, &sc.Archived, &sc.LatestVersion, &created, &sc.CreatedBy, &modified, &sc.ModifiedBy)
	sc.CreatedAt, sc.ModifiedAt = fromMicros(created), fromMicros(modified)
	return sc, err
}

func getScenario(ctx context.Context, q queryer, name string) (store.Scenario, error) {
	sc, err := scanScenario(q.QueryRowContext(ctx, scenarioSelect+` WHERE s.name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, store.ErrNotFound
	}
	return sc, err
}

// CreateScenario implements store.Store.
func (s *Store) CreateScenario(ctx context.Context, name string, first store.Draft) (store.Version, error) {
	if err := store.ValidateName(name); err != nil {
		return store.Version{}, fmt.Errorf("creating scenario: %w", err)
	}
	if err := check.Graph(first.Graph); err != nil {
		return store.Version{}, fmt.Errorf("creating scenario %q: %w", name, err)
	}
	v := store.Version{Scenario: name, Number: 1, Graph: first.Graph, Comment: first.Comment,
		Author: first.Author, CreatedAt: now()}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO scenarios (name, latest_version) VALUES (?, 1)`, name)
		if isUnique(err) {
			return store.ErrAlreadyExists
		}
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		return insertVersion(ctx, tx, id, v)
	})
	if err != nil {
		return store.Version{}, fmt.Errorf("creating scenario %q: %w", name, err)
	}
	return v, nil
}

func insertVersion(ctx context.Context, tx *sql.Tx, scenarioID int64, v store.Version) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO scenario_versions (scenario_id, number, graph, comment, author, created_at)
		 VALUES (?, ?, ?, ?, ?, ?)`,
		scenarioID, v.Number, string(v.Graph), v.Comment, v.Author, micros(v.CreatedAt))
	return err
}

// GetScenario implements store.Store.
func (s *Store) GetScenario(ctx context.Context, name string) (store.Scenario, error) {
	sc, err := getScenario(ctx, s.read, name)
	if err != nil {
		return store.Scenario{}, fmt.Errorf("getting scenario %q: %w", name, err)
	}
	return sc, nil
}

// ListScenarios implements store.Store.
func (s *Store) ListScenarios(ctx context.Context, filter store.ScenarioFilter) ([]store.Scenario, error) {
	query := scenarioSelect + ` WHERE (? = '' OR instr(lower(s.name), ?) > 0)`
	switch filter.Archived {
	case store.NotArchived:
		query += ` AND NOT s.archived`
	case store.OnlyArchived:
		query += ` AND s.archived`
	}
	needle := strings.ToLower(filter.NameContains)
	args := []any{needle, needle}
	if filter.After != "" {
		query += ` AND s.name > ?` // BINARY collation: byte order
		args = append(args, filter.After)
	}
	query += ` ORDER BY s.name`
	if filter.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, filter.Limit)
	}
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	defer rows.Close()
	var list []store.Scenario
	for rows.Next() {
		sc, err := scanScenario(rows)
		if err != nil {
			return nil, fmt.Errorf("listing scenarios: %w", err)
		}
		list = append(list, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	return list, nil
}

// SetArchived implements store.Store.
func (s *Store) SetArchived(ctx context.Context, name string, archived bool) (store.Scenario, error) {
	var sc store.Scenario
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		row, err := lookupScenario(ctx, tx, name)
		if err != nil {
			return err
		}
		if archived {
			var active bool
			err := tx.QueryRowContext(ctx,
				`SELECT EXISTS (SELECT 1 FROM deployments WHERE scenario_id = ? AND status IN ('DEPLOYING', 'RUNNING'))`,
				row.id).Scan(&active)
			if err != nil {
				return err
			}
			if active {
				return store.ErrDeploymentActive
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE scenarios SET archived = ? WHERE id = ?`, archived, row.id); err != nil {
			return err
		}
		sc, err = getScenario(ctx, tx, name)
		return err
	})
	if err != nil {
		return store.Scenario{}, fmt.Errorf("setting archived=%t on scenario %q: %w", archived, name, err)
	}
	return sc, nil
}

// SaveVersion implements store.Store.
func (s *Store) SaveVersion(ctx context.Context, name string, base int, draft store.Draft) (store.Version, error) {
	if err := check.Graph(draft.Graph); err != nil {
		return store.Version{}, fmt.Errorf("saving version of %q: %w", name, err)
	}
	v := store.Version{Scenario: name, Number: base + 1, Graph: draft.Graph, Comment: draft.Comment,
		Author: draft.Author}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		row, err := lookupScenario(ctx, tx, name)
		if err != nil {
			return err
		}
		if base < 1 || base > row.latestVersion {
			return fmt.Errorf("base version %d: %w", base, store.ErrNotFound)
		}
		if row.archived {
			return store.ErrArchived
		}
		if base != row.latestVersion {
			latest, err := getVersion(ctx, tx, name, row.latestVersion)
			if err != nil {
				return err
			}
			return &store.ConflictError{Base: base, Latest: latest, Attempted: v}
		}
		v.CreatedAt = now()
		if err := insertVersion(ctx, tx, row.id, v); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE scenarios SET latest_version = ? WHERE id = ?`, v.Number, row.id)
		return err
	})
	if err != nil {
		return store.Version{}, fmt.Errorf("saving version of %q: %w", name, err)
	}
	return v, nil
}

const versionSelect = `
SELECT v.number, v.graph, v.comment, v.author, v.created_at
FROM scenario_versions v JOIN scenarios s ON s.id = v.scenario_id`

// historySelect is versionSelect without the graphs, read from the index of their metadata.
const historySelect = `
SELECT v.number, NULL, v.comment, v.author, v.created_at
FROM scenario_versions v INDEXED BY scenario_versions_meta JOIN scenarios s ON s.id = v.scenario_id`

func scanVersion(row interface{ Scan(...any) error }, name string) (store.Version, error) {
	v := store.Version{Scenario: name}
	var created int64
	err := row.Scan(&v.Number, (*[]byte)(&v.Graph), &v.Comment, &v.Author, &created)
	v.CreatedAt = fromMicros(created)
	return v, err
}

func getVersion(ctx context.Context, q queryer, name string, number int) (store.Version, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, versionSelect+` WHERE s.name = ? AND v.number = ?`, name, number), name)
	if errors.Is(err, sql.ErrNoRows) {
		return v, store.ErrNotFound
	}
	return v, err
}

// GetVersion implements store.Store.
func (s *Store) GetVersion(ctx context.Context, name string, number int) (store.Version, error) {
	v, err := getVersion(ctx, s.read, name, number)
	if err != nil {
		return store.Version{}, fmt.Errorf("getting version %d of %q: %w", number, name, err)
	}
	return v, nil
}

// GetLatestVersion implements store.Store.
func (s *Store) GetLatestVersion(ctx context.Context, name string) (store.Version, error) {
	v, err := scanVersion(s.read.QueryRowContext(ctx,
		versionSelect+` WHERE s.name = ? AND v.number = s.latest_version`, name), name)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Version{}, fmt.Errorf("getting latest version of %q: %w", name, err)
	}
	return v, nil
}

// ListVersions implements store.Store.
func (s *Store) ListVersions(ctx context.Context, name string, before, limit int) ([]store.Version, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.read.QueryContext(ctx, historySelect+` WHERE s.name = ? AND v.number < ? ORDER BY v.number DESC LIMIT ?`, name, before, limit)
	if err != nil {
		return nil, fmt.Errorf("listing versions of %q: %w", name, err)
	}
	defer rows.Close()
	var list []store.Version
	for rows.Next() {
		v, err := scanVersion(rows, name)
		if err != nil {
			return nil, fmt.Errorf("listing versions of %q: %w", name, err)
		}
		list = append(list, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing versions of %q: %w", name, err)
	}
	if len(list) == 0 { // every scenario has version 1
		var one int
		if err := s.read.QueryRowContext(ctx, `SELECT 1 FROM scenarios WHERE name = ?`, name).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				err = store.ErrNotFound
			}
			return nil, fmt.Errorf("listing versions of %q: %w", name, err)
		}
	}
	return list, nil
}
