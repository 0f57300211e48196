package postgres_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scenario-server/scenario-server/migrations"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
	"github.com/scenario-server/scenario-server/store/storetest"
)

func open(t *testing.T, schemaURL string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), schemaURL)
	if err != nil {
		t.Fatalf("opening PostgreSQL store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t) // skip (or fail, under CI) once rather than in every subtest
	var mu sync.Mutex
	urls := map[*testing.T]string{} // one schema per subtest, reused on reopen
	schemaURL := func(t *testing.T) string {
		mu.Lock()
		defer mu.Unlock() // also when Schema ends t
		if _, ok := urls[t]; !ok {
			_, urls[t] = pgtest.Schema(t)
		}
		return urls[t]
	}
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, schemaURL(t)) })
}

// Servers starting together on one schema take turns migrating.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	schema, schemaURL := pgtest.Schema(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), schemaURL)
			if err != nil {
				t.Error(err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	conn, err := pgx.Connect(t.Context(), schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied int
	err = conn.QueryRow(t.Context(),
		fmt.Sprintf(`SELECT count(*) FROM %s.goose_db_version WHERE version_id > 0`, pgx.Identifier{schema}.Sanitize())).Scan(&applied)
	if err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(migrations.Postgres(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if applied != len(files) {
		t.Errorf("%d migrations recorded, want %d", applied, len(files))
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://someone:s3cret-pw@127.0.0.1:1/nowhere?connect_timeout=2")
	if err == nil {
		t.Fatal("Open of an unreachable database succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("error shows the password: %v", err)
	}
}
