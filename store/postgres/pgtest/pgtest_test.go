package pgtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestWithSearchPath(t *testing.T) {
	const schema = "test_abc234"
	for _, tc := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/scenario_server_test?sslmode=disable",
			"postgres://postgres@127.0.0.1:5432/scenario_server_test?search_path=test_abc234&sslmode=disable"},
		{"postgresql://u:pw@db.example/x", "postgresql://u:pw@db.example/x?search_path=test_abc234"},
		{"postgres://u@h/x?search_path=public&sslmode=disable", "postgres://u@h/x?search_path=test_abc234&sslmode=disable"},
		{"host=127.0.0.1 port=5432 dbname=x sslmode=disable", "host=127.0.0.1 port=5432 dbname=x sslmode=disable search_path=test_abc234"},
		{"host=h dbname=x search_path=public", "host=h dbname=x search_path=public search_path=test_abc234"},
	} {
		got, err := withSearchPath(tc.in, schema)
		if err != nil || got != tc.want {
			t.Errorf("withSearchPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		// What pgx makes of it, without connecting: the schema, and the rest kept.
		cfg, err := pgx.ParseConfig(got)
		if err != nil {
			t.Errorf("parsing %q: %v", got, err)
			continue
		}
		if sp := cfg.RuntimeParams["search_path"]; sp != schema {
			t.Errorf("%q: pgx's search_path is %q, want %q", got, sp, schema)
		}
		if cfg.Database != "x" && cfg.Database != "scenario_server_test" {
			t.Errorf("%q: pgx's database is %q", got, cfg.Database)
		}
	}
	if _, err := withSearchPath("postgres://u@h:port/x", schema); err == nil {
		t.Error("withSearchPath accepted a URL with a bad port")
	}
}

// endedTB records how URL ended a test, without ending the real one.
type endedTB struct {
	testing.TB
	skipped, failed string
}

func (e *endedTB) Helper() {}

func (e *endedTB) Skipf(format string, args ...any) {
	e.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (e *endedTB) Fatalf(format string, args ...any) {
	e.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// callURL calls URL on an endedTB in a goroutine of its own, which Skipf and Fatalf end.
func callURL(t *testing.T) (e *endedTB, got string) {
	e = &endedTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = URL(e)
	}()
	<-done
	return e, got
}

func TestURL(t *testing.T) {
	t.Setenv(URLEnv, "")
	t.Setenv("CI", "")
	if e, _ := callURL(t); e.failed != "" || !strings.Contains(e.skipped, URLEnv+" is empty") || !strings.Contains(e.skipped, "scripts/pg.sh start") {
		t.Errorf("without a database: skipped %q, failed %q; want a skip naming %s and scripts/pg.sh", e.skipped, e.failed, URLEnv)
	}
	t.Setenv("CI", "true")
	if e, _ := callURL(t); e.skipped != "" || !strings.Contains(e.failed, URLEnv+" is empty but CI=true") {
		t.Errorf("without a database under CI=true: skipped %q, failed %q; want a failure", e.skipped, e.failed)
	}
	t.Setenv(URLEnv, "postgres://u@h/x")
	if e, got := callURL(t); e.skipped != "" || e.failed != "" || got != "postgres://u@h/x" {
		t.Errorf("with a database: %q, skipped %q, failed %q", got, e.skipped, e.failed)
	}
}
