package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// The reads of many scenarios' results by one identity name at most auditReadBurst scenarios
// at once, then auditReadRate a second: worked by hand on a clock that stands still, ann
// reads 125 scenarios' results twice. The first 120 are entries naming their scenario, the
// other 5 one entry without a scenario (the first of them and 4 folded); the second round
// folds into those entries (taking no token: a poller of one scenario keeps its name), so
// 121 entries in all. Ben's reads have their own tokens.
func TestAuditReadsOfManyScenarios(t *testing.T) {
	st := sqliteStoreOf(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	a := &auditor{store: st, now: func() time.Time { return now }, reads: newBuckets(auditReadRate, auditReadBurst)}
	for range 2 {
		for i := range 125 {
			a.audit(as("ann"), "results.read", fmt.Sprintf("s%03d", i), 0, "", "ok")
		}
	}
	a.audit(as("ben"), "results.read", "s124", 0, "", "ok")
	entries, err := st.ListAudit(context.Background(), store.AuditFilter{Identity: "ann", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	named, unnamed := 0, 0
	for _, e := range entries {
		switch {
		case e.Scenario != "" && e.Repeats == 1:
			named++
		case e.Scenario == "" && e.Repeats == 9:
			unnamed++
		default:
			t.Errorf("entry %+v", e)
		}
	}
	if named != 120 || unnamed != 1 || len(entries) != 121 {
		t.Errorf("ann: %d entries, %d naming a scenario, %d without; want 121, 120 (each read twice) and 1 (10 reads)", len(entries), named, unnamed)
	}
	if entries, err := st.ListAudit(context.Background(), store.AuditFilter{Identity: "ben", Limit: 10}); err != nil || len(entries) != 1 || entries[0].Scenario != "s124" {
		t.Errorf("ben: %+v %v; want one entry naming s124", entries, err)
	}
}
