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
		plan := queryPlan(t, st, q.query, q.args...)
		reads := 0
		for _, detail := range plan {
			if strings.Contains(detail, " v ") || strings.Contains(detail, " f ") || strings.Contains(detail, " l ") {
				reads++
				if !strings.Contains(detail, "USING COVERING INDEX scenario_versions_meta") {
					t.Errorf("%s: %q reads scenario_versions past its index", q.name, detail)
				}
			}
		}
		if reads != q.reads {
			t.Errorf("%s: %d reads of scenario_versions in the plan, want %d: %q", q.name, reads, q.reads, plan)
		}
	}
}

// FoldAudit finds the entry it folds into by its key and time (audit_log_fold): never by the
// scenario (audit_log_scenario: the scenario's whole history walked when none matches) nor by
// time alone (audit_log_at: every entry of the fold window read when none matches, 4.9 ms a
// request with 16,000 entries in the last minute, round 25).
func TestFoldAuditReadsByItsKey(t *testing.T) {
	st, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plan := queryPlan(t, st, sqlite.FoldAuditQuery, 0, "s", "n", "a", "results.read", "x", 0, "ok", 0)
	byKey := false
	for _, detail := range plan {
		if strings.Contains(detail, "audit_log_scenario") || strings.Contains(detail, "audit_log_at") {
			t.Errorf("the fold reads by another index: %q", detail)
		}
		byKey = byKey || strings.Contains(detail, "INDEX audit_log_fold (subject=? AND name=? AND address=? AND action=? AND scenario=? AND version=? AND outcome=? AND at>?)")
	}
	if !byKey {
		t.Errorf("the fold does not read by its key and time: %q", plan)
	}
}

// queryPlan is the detail of each step of SQLite's plan for query.
func queryPlan(t *testing.T, st *sqlite.Store, query string, args ...any) []string {
	t.Helper()
	rows, err := sqlite.ReadDB(st).QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
