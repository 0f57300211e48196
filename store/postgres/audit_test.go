package postgres

import (
	"strings"
	"testing"
	"time"
)

// FoldAudit finds the entry it folds into by audit_log_fold, in the generic plan as in a
// custom one, with a long log of one identity's reads of other scenarios: never by walking
// the primary key, the scenario's index or the time index, however many entries the log and
// the fold window hold (round 25: the generic plan walked audit_log_pkey backwards, reading
// the whole log when nothing matched).
func TestFoldAuditReadsByItsKey(t *testing.T) {
	s := openSchema(t, "")
	ctx := t.Context()
	// 1,000 users' reads of one scenario: 200,000 two hours old, and 20,000 in the last 20 seconds.
	for _, rows := range []struct {
		from time.Time
		n    int
	}{{time.Now().Add(-2 * time.Hour), 200000}, {time.Now().Add(-20 * time.Second), 20000}} {
		if _, err := s.pool.Exec(ctx, `INSERT INTO audit_log (at, subject, name, address, action, scenario, version, outcome, request_id)
			SELECT $1::timestamptz + i * interval '1 ms', 'u' || i % 1000, 'user ' || i % 1000, '10.0.0.2', 'results.read', 'fraud', 0, 'ok', ''
			FROM generate_series(1, $2::int) AS i`, rows.from, rows.n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE audit_log`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `PREPARE fold(timestamptz, timestamptz, text, text, text, text, text, integer, text) AS `+foldAuditQuery); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, `EXPLAIN EXECUTE fold(now(), now() - interval '1 minute',
			'oidc|anna', 'anna', '10.0.0.2', 'results.read', 'fraud', 0, 'ok')`)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "using audit_log_fold") || strings.Contains(text, "Backward using audit_log_pkey") ||
			strings.Contains(text, "audit_log_at") || strings.Contains(text, "Seq Scan") {
			t.Errorf("%s: the fold does not find its entry by audit_log_fold:\n%s", mode, text)
		}
	}
}
