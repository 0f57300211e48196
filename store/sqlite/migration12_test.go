package sqlite_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/scenario-server/scenario-server/migrations"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// Migration 00012 down and up again, twice, with results in it: down moves every result of
// the chunks back into sink_results (chunks of one result, of consecutive IDs, of IDs with
// gaps; lengths and ID offsets of one, two and three uvarint bytes), up moves them into chunks
// again, and a result stored in sink_results by the previous version moves too. IDs, sinks,
// values and creation times stay.
func TestMigration12DownAndUp(t *testing.T) {
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type result struct {
		scenario, sink, value string
		id                    int64
	}
	var want []result
	add := func(scenario string, batch []store.NewSinkResult) {
		t.Helper()
		ids, err := s.AppendSinkResults(ctx, scenario, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			want = append(want, result{scenario, batch[i].Sink, string(batch[i].Value), id})
		}
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, err := s.CreateScenario(ctx, name, store.Draft{Graph: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	value := func(i, size int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`"%d %s"`, i, strings.Repeat("v", size)))
	}
	add("alpha", []store.NewSinkResult{{Sink: "one", Value: value(1, 0)}}) // a chunk of one result
	// 300 results, one segment: "rare" at 0, 200 and 299 (ID offsets 0, 200, 299: one and two
	// bytes), "big" at 1 and 2 (consecutive: values alone; 130 and 20000 bytes: lengths of two
	// and three bytes), "out" the rest (gaps).
	batch := make([]store.NewSinkResult, 300)
	for i := range batch {
		switch i {
		case 0, 200, 299:
			batch[i] = store.NewSinkResult{Sink: "rare", Value: value(i, 10)}
		case 1:
			batch[i] = store.NewSinkResult{Sink: "big", Value: value(i, 130)}
		case 2:
			batch[i] = store.NewSinkResult{Sink: "big", Value: value(i, 20000)}
		default:
			batch[i] = store.NewSinkResult{Sink: "out", Value: value(i, i%7)}
		}
	}
	add("alpha", batch)
	add("beta", []store.NewSinkResult{{Sink: "x", Value: value(1, 3)}, {Sink: "x", Value: value(2, 200)}})

	created := map[string]map[int64]int64{} // scenario → ID → created_at, as first read
	readAll := func(what string) []result {
		t.Helper()
		var got []result
		for _, name := range []string{"alpha", "beta"} {
			for after := int64(0); ; {
				page, err := s.ReadSinkResults(ctx, name, "", after, store.MaxReadLimit)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if len(page) == 0 {
					break
				}
				if created[name] == nil {
					created[name] = map[int64]int64{}
				}
				for _, r := range page {
					got = append(got, result{name, r.Sink, string(r.Value), r.ID})
					if c, ok := created[name][r.ID]; ok && c != r.CreatedAt.UnixMicro() {
						t.Errorf("%s: result %s/%d created at %d, before at %d", what, name, r.ID, r.CreatedAt.UnixMicro(), c)
					}
					created[name][r.ID] = r.CreatedAt.UnixMicro()
				}
				after = page[len(page)-1].ID
			}
		}
		return got
	}
	compare := func(what string, got []result) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: result %d is %+v, want %+v", what, i, got[i], want[i])
			}
		}
	}
	compare("before", readAll("before"))

	db := sqlite.WriteDB(s)
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.SQLite(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if _, err := p.DownTo(ctx, 11); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, `SELECT s.name, r.sink, r.value, r.id, r.created_at
			FROM sink_results r JOIN scenarios s ON s.id = r.scenario_id ORDER BY s.name, r.id`)
		if err != nil {
			t.Fatal(err)
		}
		var got []result
		for rows.Next() {
			var r result
			var at int64
			if err := rows.Scan(&r.scenario, &r.sink, &r.value, &r.id, &at); err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
			if at != created[r.scenario][r.id] {
				t.Errorf("after down: result %s/%d created at %d, want %d", r.scenario, r.id, at, created[r.scenario][r.id])
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		compare(fmt.Sprintf("after down %d", round), got)

		// A result the previous version stores.
		id := int64(302 + round)
		if _, err := db.ExecContext(ctx, `UPDATE scenarios SET last_sink_result_id = ? WHERE name = 'alpha'`, id); err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf(`{"old":%d}`, round)
		if _, err := db.ExecContext(ctx, `INSERT INTO sink_results (scenario_id, id, sink, value, created_at)
			SELECT id, ?, 'old', ?, 7 FROM scenarios WHERE name = 'alpha'`, id, v); err != nil {
			t.Fatal(err)
		}
		want = append(want[:id-1:id-1], append([]result{{"alpha", "old", v, id}}, want[id-1:]...)...)
		created["alpha"][id] = 7

		if _, err := p.Up(ctx); err != nil {
			t.Fatal(err)
		}
		compare(fmt.Sprintf("after up %d", round), readAll("after up"))
	}
	// New results keep counting after the moved ones.
	ids, err := s.AppendSinkResults(ctx, "alpha", []store.NewSinkResult{{Sink: "one", Value: value(0, 0)}})
	if err != nil || len(ids) != 1 || ids[0] != 304 {
		t.Errorf("the next result: IDs %v, %v; want [304]", ids, err)
	}
}
