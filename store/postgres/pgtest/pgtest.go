// Package pgtest gives a test a PostgreSQL schema of its own in the test database.
//
// It is meant only for tests: import it from _test.go files, never from the server's code.
// It is a normal package, not a _test.go file, so that the tests of every package can share
// it. The test database is named by the environment variable URLEnv; scripts/pg.sh starts a
// throw-away PostgreSQL and prints it, scripts/test.sh does both.
package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the environment variable with the test database's URL (scripts/pg.sh prints
// it; scripts/test.sh sets it).
const URLEnv = "SCENARIO_SERVER_TEST_DATABASE_URL"

// URL returns the test database's URL. It skips t when URLEnv is empty, except under CI=true,
// where it fails t: CI must test PostgreSQL, and a silently skipped test would hide its bugs.
func URL(t testing.TB) string {
	t.Helper()
	dbURL := os.Getenv(URLEnv)
	if dbURL == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is empty but CI=true: CI must test against PostgreSQL. "+
				`Start one with: eval "$(scripts/pg.sh start)" (scripts/test.sh does it).`, URLEnv)
		}
		t.Skipf(`%s is empty; to test against PostgreSQL run: eval "$(scripts/pg.sh start)"`, URLEnv)
	}
	return dbURL
}

// Schema creates an empty schema for t in the test database, dropped with everything in it
// when t ends, and returns its name and a connection string for it: the test database's URL
// with search_path set to the schema (in URL or keyword/value form, as the URL is). Cleanups
// registered after Schema, such as closing a store opened on connString, run before the
// schema is dropped. Without a test database it skips or fails t as URL does.
func Schema(t testing.TB) (name, connString string) {
	t.Helper()
	dbURL := URL(t)
	name = "test_" + strings.ToLower(rand.Text())
	connString, err := withSearchPath(dbURL, name)
	if err != nil {
		t.Fatalf("parsing %s: %v", URLEnv, err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := execOnce(t.Context(), dbURL, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("creating schema %s in %s: %v", name, URLEnv, err)
	}
	t.Cleanup(func() {
		if err := execOnce(context.Background(), dbURL, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name, connString
}

// execOnce runs sql on a connection of its own, closed before it returns: a test holds no
// idle connection for its schema while it runs.
func execOnce(ctx context.Context, connString, sql string) error {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// withSearchPath sets search_path to schema, a lowercase identifier that needs no quoting, in
// a URL (postgres:// or postgresql://) or keyword/value connection string, replacing any
// search_path already there.
func withSearchPath(connString, schema string) (string, error) {
	if !strings.HasPrefix(connString, "postgres://") && !strings.HasPrefix(connString, "postgresql://") {
		return connString + " search_path=" + schema, nil // the last setting of a keyword wins
	}
	u, err := url.Parse(connString)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
