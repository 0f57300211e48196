package storetest

import (
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// Opener opens a fresh, empty store for t, closed when t ends.
type Opener func(t *testing.T) store.Store

// OpenSQLite opens a SQLite store in a temporary directory of t.
func OpenSQLite(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatalf("opening SQLite store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// OpenPostgres opens a PostgreSQL store in a fresh schema of the test
// database, dropped when t ends; without a test database t is skipped
// (failed under CI=true: see pgtest.URL).
func OpenPostgres(t *testing.T) store.Store {
	t.Helper()
	_, connString := pgtest.Schema(t)
	s, err := postgres.Open(t.Context(), connString)
	if err != nil {
		t.Fatalf("opening PostgreSQL store: %v", err)
	}
	t.Cleanup(func() { s.Close() }) // runs before the schema is dropped
	return s
}
