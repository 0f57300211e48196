package sqlite_test

import (
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store/sqlite"
)

// Listing scenarios and version histories reads the versions' metadata from the index
// scenario_versions_meta alone, never from the table, whose rows hold each graph before the
// metadata (reading past it walked the graph's pages: a list page of scenarios of 9 MiB
// graphs took 562 ms; 1 ms from the index). SQLite's plan says so for every read of
// scenario_versions.
func TestVersionMetadataFromTheIndex(t *testing.T) {
	st, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, q := range []struct {
		name, query string
		args        []any
		reads       int // of scenario_versions
	}{
		{"a scenario of the list", sqlite.ScenarioQuery, []any{"x"}, 2},
		{"a version history", sqlite.HistoryQuery, []any{"x", 10, 10}, 1},
	} {
		rows, err := sqlite.ReadDB(st).QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q.query, q.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		reads := 0
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
			if strings.Contains(detail, " v ") || strings.Contains(detail, " f ") || strings.Contains(detail, " l ") {
				reads++
				if !strings.Contains(detail, "USING COVERING INDEX scenario_versions_meta") {
					t.Errorf("%s: %q reads scenario_versions past its index", q.name, detail)
				}
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if reads != q.reads {
			t.Errorf("%s: %d reads of scenario_versions in the plan, want %d: %q", q.name, reads, q.reads, plan)
		}
	}
}
