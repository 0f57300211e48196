package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scenario-server/scenario-server/migrations"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/storetest"
)

// databaseURLEnv names the environment variable with the test database's URL. scripts/pg.sh
// starts a throw-away PostgreSQL and prints it; scripts/test.sh does both.
const databaseURLEnv = "SCENARIO_SERVER_TEST_DATABASE_URL"

// testDatabase returns a pool on the test database, closed when t ends, and its URL. It skips
// t when the variable is empty, except under CI=true, where a silently skipped PostgreSQL
// store would hide its bugs.
func testDatabase(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	dbURL := os.Getenv(databaseURLEnv)
	if dbURL == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is empty but CI=true: CI must test the PostgreSQL store. "+
				`Start one with: eval "$(scripts/pg.sh start)" (scripts/test.sh does it).`, databaseURLEnv)
		}
		t.Skipf(`%s is empty; to test against PostgreSQL run: eval "$(scripts/pg.sh start)"`, databaseURLEnv)
	}
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatalf("connecting to %s: %v", databaseURLEnv, err)
	}
	t.Cleanup(pool.Close)
	return pool, dbURL
}

// freshSchema creates an empty schema, dropped with everything in it when t ends, and returns
// its name and dbURL changed to use it.
func freshSchema(t *testing.T, admin *pgxpool.Pool, dbURL string) (schema, schemaURL string) {
	t.Helper()
	schema = "test_" + strings.ToLower(rand.Text())
	if _, err := admin.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema, withSearchPath(t, dbURL, schema)
}

// withSearchPath sets search_path in a URL or keyword/value connection string.
func withSearchPath(t *testing.T, dbURL, schema string) string {
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		return dbURL + " search_path=" + schema
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("parsing %s: %v", databaseURLEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

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
	admin, dbURL := testDatabase(t)
	var mu sync.Mutex
	urls := map[*testing.T]string{} // one schema per subtest, reused on reopen
	storetest.Run(t, func(t *testing.T) store.Store {
		mu.Lock()
		schemaURL, ok := urls[t]
		if !ok {
			_, schemaURL = freshSchema(t, admin, dbURL)
			urls[t] = schemaURL
		}
		mu.Unlock()
		return open(t, schemaURL)
	})
}

// Servers starting together on one schema take turns migrating.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	admin, dbURL := testDatabase(t)
	schema, schemaURL := freshSchema(t, admin, dbURL)
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
	var applied int
	err := admin.QueryRow(t.Context(),
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
