package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/internal/check"
)

// scenarioSelect reads a store.Scenario with scanScenario; version 1 gives the creation, the
// latest version the modification.
const scenarioSelect = `
SELECT s.name, s.archived, s.latest_version, f.created_at, f.author, l.created_at, l.author
FROM scenarios s
JOIN scenario_versions f ON f.scenario_id = s.id AND f.number = 1
JOIN scenario_versions l ON l.scenario_id = s.id AND l.number = s.latest_version`

func scanScenario(row pgx.Row) (store.Scenario, error) {
	var sc store.Scenario
	err := row.Scan(&sc.Name, &sc.Archived, &sc.LatestVersion, &sc.CreatedAt, &sc.CreatedBy, &sc.ModifiedAt, &sc.ModifiedBy)
	sc.CreatedAt, sc.ModifiedAt = sc.CreatedAt.UTC(), sc.ModifiedAt.UTC()
	return sc, err
}

func getScenario(ctx context.Context, q querier, name string) (store.Scenario, error) {
	sc, err := scanScenario(q.QueryRow(ctx, scenarioSelect+` WHERE s.name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO scenarios (name, latest_version) VALUES ($1, 1) RETURNING id`, name).Scan(&id)
		if isUnique(err, "scenarios_name_key") {
			return store.ErrAlreadyExists
		}
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

func insertVersion(ctx context.Context, tx pgx.Tx, scenarioID int64, v store.Version) error {
	_, err := tx.Exec(ctx,
		`INSERT INTO scenario_versions (scenario_id, number, graph, comment, author, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6)`,
		scenarioID, v.Number, string(v.Graph), v.Comment, v.Author, v.CreatedAt)
	return err
}

// GetScenario implements store.Store.
func (s *Store) GetScenario(ctx context.Context, name string) (store.Scenario, error) {
	sc, err := getScenario(ctx, s.pool, name)
	if err != nil {
		return store.Scenario{}, fmt.Errorf("getting scenario %q: %w", name, err)
	}
	return sc, nil
}

// ListScenarios implements store.Store.
func (s *Store) ListScenarios(ctx context.Context, filter store.ScenarioFilter) ([]store.Scenario, error) {
	// lower() of ASCII names matches strings.ToLower of the needle; strpos takes no wildcards.
	query := scenarioSelect + ` WHERE ($1 = '' OR strpos(lower(s.name), $1) > 0)`
	switch filter.Archived {
	case store.NotArchived:
		query += ` AND NOT s.archived`
	case store.OnlyArchived:
		query += ` AND s.archived`
	}
	args := []any{strings.ToLower(filter.NameContains)}
	if filter.After != "" {
		args = append(args, filter.After)
		query += fmt.Sprintf(` AND s.name COLLATE "C" > $%d`, len(args))
	}
	query += ` ORDER BY s.name COLLATE "C"` // byte order, whatever the database's collation
	if filter.Limit > 0 {
		args = append(args, filter.Limit)
		query += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	list, err := collect(rows, scanScenario)
	if err != nil {
		return nil, fmt.Errorf("listing scenarios: %w", err)
	}
	return list, nil
}

// collect scans every row with scan; no rows give a nil slice.
func collect[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	var list []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, rows.Err()
}

// SetArchived implements store.Store.
func (s *Store) SetArchived(ctx context.Context, name string, archived bool) (store.Scenario, error) {
	var sc store.Scenario
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// FOR NO KEY UPDATE: a concurrent CreateDeployment waits, so it cannot deploy what we archive.
		row, err := lookupScenario(ctx, tx, name, ` FOR NO KEY UPDATE`)
		if err != nil {
			return err
		}
		if archived {
			var active bool
			err := tx.QueryRow(ctx,
				`SELECT EXISTS (SELECT 1 FROM deployments WHERE scenario_id = $1 AND status IN ('DEPLOYING', 'RUNNING'))`,
				row.id).Scan(&active)
			if err != nil {
				return err
			}
			if active {
				return store.ErrDeploymentActive
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE scenarios SET archived = $1 WHERE id = $2`, archived, row.id); err != nil {
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
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// FOR NO KEY UPDATE serializes saves of one scenario: the second reads the first's new latest.
		row, err := lookupScenario(ctx, tx, name, ` FOR NO KEY UPDATE`)
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
		_, err = tx.Exec(ctx, `UPDATE scenarios SET latest_version = $1 WHERE id = $2`, v.Number, row.id)
		return err
	})
	if err != nil {
		return store.Version{}, fmt.Errorf("saving version of %q: %w", name, err)
	}
	return v, nil
}

const versionSelect = `
SELECT v.number, v.graph::text, v.comment, v.author, v.created_at
FROM scenario_versions v JOIN scenarios s ON s.id = v.scenario_id`

// historySelect is versionSelect without the graphs.
const historySelect = `
SELECT v.number, NULL::text, v.comment, v.author, v.created_at
FROM scenario_versions v JOIN scenarios s ON s.id = v.scenario_id`

func versionScanner(name string) func(pgx.Row) (store.Version, error) {
	return func(row pgx.Row) (store.Version, error) {
		v := store.Version{Scenario: name}
		err := row.Scan(&v.Number, (*[]byte)(&v.Graph), &v.Comment, &v.Author, &v.CreatedAt)
		v.CreatedAt = v.CreatedAt.UTC()
		return v, err
	}
}

func getVersion(ctx context.Context, q querier, name string, number int) (store.Version, error) {
	v, err := versionScanner(name)(q.QueryRow(ctx, versionSelect+` WHERE s.name = $1 AND v.number = $2`, name, number))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, store.ErrNotFound
	}
	return v, err
}

// GetVersion implements store.Store.
func (s *Store) GetVersion(ctx context.Context, name string, number int) (store.Version, error) {
	v, err := getVersion(ctx, s.pool, name, number)
	if err != nil {
		return store.Version{}, fmt.Errorf("getting version %d of %q: %w", number, name, err)
	}
	return v, nil
}

// GetLatestVersion implements store.Store.
func (s *Store) GetLatestVersion(ctx context.Context, name string) (store.Version, error) {
	v, err := versionScanner(name)(s.pool.QueryRow(ctx,
		versionSelect+` WHERE s.name = $1 AND v.number = s.latest_version`, name))
	if errors.Is(err, pgx.ErrNoRows) {
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
		before = math.MaxInt32 // version numbers are integers
	}
	var lim *int // NULL: no limit
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, historySelect+` WHERE s.name = $1 AND v.number < $2 ORDER BY v.number DESC LIMIT $3`, name, before, lim)
	if err != nil {
		return nil, fmt.Errorf("listing versions of %q: %w", name, err)
	}
	list, err := collect(rows, versionScanner(name))
	if err != nil {
		return nil, fmt.Errorf("listing versions of %q: %w", name, err)
	}
	if len(list) == 0 { // every scenario has version 1
		var one int
		if err := s.pool.QueryRow(ctx, `SELECT 1 FROM scenarios WHERE name = $1`, name).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				err = store.ErrNotFound
			}
			return nil, fmt.Errorf("listing versions of %q: %w", name, err)
		}
	}
	return list, nil
}
