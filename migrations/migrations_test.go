package migrations_test

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/scenario-server/scenario-server/migrations"
)

// Both databases get the same migrations, version for version.
func TestSameMigrationsForBothDatabases(t *testing.T) {
	sqlite, err := fs.Glob(migrations.SQLite(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	postgres, err := fs.Glob(migrations.Postgres(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(sqlite) == 0 || !slices.Equal(sqlite, postgres) {
		t.Errorf("migrations differ:\n sqlite   %q\n postgres %q", sqlite, postgres)
	}
}
