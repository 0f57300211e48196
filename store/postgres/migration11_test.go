package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/scenario-server/scenario-server/migrations"
	"github.com/scenario-server/scenario-server/store"
)

// Migration 00011 down and up again, twice, on a schema holding a result: down gives back
// pglz and the sink_results foreign key, up gives lz4 (where the server has it) and drops the
// key; the result stays.
func TestMigration11DownAndUp(t *testing.T) {
	s := openSchema(t, "")
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "alpha", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendSinkResults(ctx, "alpha", []store.NewSinkResult{{Sink: "out", Value: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	_, noLZ4 := s.pool.Exec(ctx, `SET default_toast_compression = lz4`)
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.Postgres(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	state := func() (compression string, keys, results int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute
			WHERE attrelid = 'event_chunks'::regclass AND attname = 'payloads'`).Scan(&compression); err != nil {
			t.Fatal(err)
		}
		// This schema's table only (search_path): the package's tests run in schemas of one
		// database side by side, and counting by name alone saw another test's constraint
		// (a fresh-clone CI: "foreign keys 1" after up).
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = 'sink_results_scenario_id_fkey' AND conrelid = 'sink_results'::regclass`).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sink_results`).Scan(&results); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantUp := "l" // lz4
	if noLZ4 != nil {
		wantUp = "" // the default, pglz
	}
	for range 2 {
		if _, err := p.DownTo(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if c, k, r := state(); c != "p" && !(noLZ4 != nil && c == "") || k != 1 || r != 1 {
			t.Fatalf("after down: compression %q, foreign keys %d, results %d; want p, 1, 1", c, k, r)
		}
		if _, err := p.Up(ctx); err != nil {
			t.Fatal(err)
		}
		if c, k, r := state(); c != wantUp || k != 0 || r != 1 {
			t.Fatalf("after up: compression %q, foreign keys %d, results %d; want %q, 0, 1", c, k, r, wantUp)
		}
	}
}
