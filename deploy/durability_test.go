package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/postgres"
	"github.com/scenario-server/scenario-server/store/postgres/pgtest"
)

// Resume, ownership and checkpoint trust: crash-loop counting, safe mode, positions checked
// against the log, and one owner per deployment on a shared PostgreSQL.

func TestDurabilityOnSQLite(t *testing.T) {
	t.Parallel()
	runDurabilitySuite(t, sqliteStore)
}

func TestDurabilityOnPostgres(t *testing.T) {
	t.Parallel()
	runDurabilitySuite(t, postgresStore)
}

func runDurabilitySuite(t *testing.T, newStore newStoreFunc) {
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, st store.Store)
	}{
		{"CrashLoopMarksFailed", testCrashLoopMarksFailed},
		{"NoResumePauses", testNoResumePauses},
		{"PositionPastTheLog", testPositionPastTheLog},
		{"FencedOwnerStops", testFencedOwnerStops},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newStore(t))
		})
	}
}

// A deployment during whose runs the runtime died (abort: no clean stop) 3 times in a row is
// not resumed a 4th time but FAILED with the reason; a clean stop starts the count over.
func testCrashLoopMarksFailed(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "loop", graph)
	limit := func(c *Config) { c.CrashLoopLimit = 3 }
	r := newRuntime(t, st, limit)
	d := deploy(t, r, "loop", 0)
	// A clean stop (Shutdown) does not count.
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetDeployment(t.Context(), d.ID); got.UncleanRuns != 0 {
		t.Fatalf("after a clean stop: %d unclean runs, want 0", got.UncleanRuns)
	}
	recs := records(300)
	for run := 1; run <= 3; run++ {
		// A resume after a death says so at once (after the clean stop, nothing).
		var logged lockedBuffer
		r = newRuntime(t, st, limit, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logged, nil)) })
		waitFor(t, "resumed", func() bool { l, ok := r.Live("loop"); return ok && l.Phase == PhaseRunning })
		said := strings.Contains(logged.String(), fmt.Sprintf("without a clean stop (killed, out of memory, a crash)\" scenario=loop deployment=%d uncleanRuns=%d", d.ID, run-1))
		if said != (run > 1) {
			t.Errorf("run %d's log: %q; want the unclean stops before (%d) said when there were any", run, logged.String(), run-1)
		}
		ingestAll(t, r, "loop", recs[:run*100], (run-1)*100, 100)
		r.abort() // the process dies while running it
		if got, _ := st.GetDeployment(t.Context(), d.ID); got.UncleanRuns != run || got.Status != store.StatusRunning {
			t.Fatalf("after %d deaths: %d unclean runs, %s", run, got.UncleanRuns, got.Status)
		}
	}
	r = newRuntime(t, st, limit)
	if _, ok := r.Live("loop"); ok {
		t.Errorf("a deployment that killed the server 3 times in a row was resumed")
	}
	got, err := st.GetDeployment(t.Context(), d.ID)
	if err != nil || got.Status != store.StatusFailed || !strings.Contains(got.Reason, "the server stopped 3 times in a row while running it") {
		t.Fatalf("after 3 deaths: %+v, %v; want FAILED with the reason", got, err)
	}
	// Deploying again is the way back: it continues from the last checkpoint.
	deploy(t, r, "loop", 0)
}

// In safe mode nothing is resumed: the deployment stays RUNNING with the paused reason and
// takes no event; a start without safe mode resumes it from its checkpoint, reason cleared,
// and the results equal a replay.
func testNoResumePauses(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "paused", graph)
	r := newRuntime(t, st)
	d := deploy(t, r, "paused", 0)
	recs := records(1000)
	ingestAll(t, r, "paused", recs[:500], 0, 100)
	waitCommitted(t, r, "paused", 500)
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	safe := newRuntime(t, st, func(c *Config) { c.NoResume = true })
	if _, ok := safe.Live("paused"); ok {
		t.Fatal("safe mode resumed the deployment")
	}
	got, err := st.GetDeployment(t.Context(), d.ID)
	if err != nil || got.Status != store.StatusRunning || got.Reason != PausedReason(d.Version) || !strings.Contains(got.Reason, `deploy version 1 again ({"version": 1})`) {
		t.Fatalf("in safe mode: %+v, %v; want RUNNING with the paused reason", got, err)
	}
	if _, err := safe.Ingest(t.Context(), "paused", "in", "", recs[500:501]); !errors.Is(err, ErrNotDeployed) {
		t.Errorf("ingest into a paused deployment: %v, want ErrNotDeployed", err)
	}
	if err := safe.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	r = newRuntime(t, st)
	waitFor(t, "resumed", func() bool { l, ok := r.Live("paused"); return ok && l.Phase == PhaseRunning })
	if got, _ := st.GetDeployment(t.Context(), d.ID); got.Reason != "" || got.Status != store.StatusRunning {
		t.Errorf("resumed: %+v, want RUNNING without reason", got)
	}
	ingestAll(t, r, "paused", recs, 500, 100)
	waitCommitted(t, r, "paused", 1000)
	equalResults(t, collected(t, st, "paused"), replay(t, graph, recs))
}

// A checkpoint whose HTTP source position is past the end of its log (a damaged or foreign
// store) fails the deployment with the reason instead of skipping the events up to there.
func testPositionPastTheLog(t *testing.T, st store.Store) {
	createScenario(t, st, "past", tumblingGraph(""))
	r := newRuntime(t, st)
	d := deploy(t, r, "past", 0)
	ingestAll(t, r, "past", records(10), 0, 10)
	waitCommitted(t, r, "past", 10)
	if err := r.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	cp, err := st.GetLatestCheckpoint(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	// 10 events were ever accepted (offsets 0-9, end 10): 50 is 40 past the end.
	cp.Positions = []store.SourcePosition{{Source: "in", Offset: 50}}
	if _, err := st.PutCheckpoint(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
	r = newRuntime(t, st)
	var got store.Deployment
	waitFor(t, "the deployment failed", func() bool {
		got, _ = st.GetDeployment(t.Context(), d.ID)
		return got.Status == store.StatusFailed
	})
	if !strings.Contains(got.Reason, `source "in" resumes at offset 50, which is not in its event log (offsets 0 to 10`) {
		t.Errorf("reason %q", got.Reason)
	}
	if _, ok := r.Live("past"); ok {
		waitFor(t, "the failed deployment removed", func() bool { _, ok := r.Live("past"); return !ok })
	}
}

// Two runtimes with the same identity (a server restarted while its old process still runs,
// frozen): the new one takes the lease, and the old one's checkpoints are refused, so it
// stops without writing; the results equal a replay, none twice.
func testFencedOwnerStops(t *testing.T, st store.Store) {
	graph := tumblingGraph("")
	createScenario(t, st, "fenced", graph)
	recs := records(2000)
	old := newRuntime(t, st, func(c *Config) { c.Owner = "server-a"; c.LeaseTTL = 300 * time.Millisecond })
	d := deploy(t, old, "fenced", 0)
	ingestAll(t, old, "fenced", recs[:800], 0, 100)
	waitCommitted(t, old, "fenced", 800)

	taken := newRuntime(t, st, func(c *Config) { c.Owner = "server-a" })
	waitFor(t, "resumed by the new runtime", func() bool { l, ok := taken.Live("fenced"); return ok && l.Phase == PhaseRunning })
	// The old runtime's renewal finds the lease gone, or its next checkpoint is refused.
	waitFor(t, "the old runtime stopped it", func() bool { _, ok := old.Live("fenced"); return !ok })
	if l, err := st.GetLease(t.Context(), d.ID); err != nil || l.Epoch != 2 || l.Owner != "server-a" {
		t.Errorf("lease after the take-over: %+v, %v; want epoch 2", l, err)
	}
	ingestAll(t, taken, "fenced", recs, 800, 100)
	waitCommitted(t, taken, "fenced", 2000)
	equalResults(t, collected(t, st, "fenced"), replay(t, graph, recs))
	if got, _ := st.GetDeployment(t.Context(), d.ID); got.Status != store.StatusRunning {
		t.Errorf("the fenced runtime changed the status: %+v", got)
	}
}

// Two live servers on one PostgreSQL, each with its own connections: the deployment runs in
// the one that holds its lease, the other leaves it alone (it takes batches into its log),
// and every checkpoint is the owner's; the results equal a replay. When the owner stops cleanly, its lease is released
// and the other server's next start takes the deployment at once.
func TestTwoServersOnePostgres(t *testing.T) {
	t.Parallel()
	_, url := pgtest.Schema(t)
	open := func() store.Store {
		s, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	stA, stB := open(), open()
	graph := tumblingGraph("")
	createScenario(t, stA, "shared", graph)
	a := newRuntime(t, stA, func(c *Config) { c.Owner = "server-a" })
	d := deploy(t, a, "shared", 0)

	b := newRuntime(t, stB, func(c *Config) { c.Owner = "server-b" })
	if _, ok := b.Live("shared"); ok {
		t.Fatal("server-b resumed the deployment server-a runs")
	}
	recs := records(3000)
	// server-b takes a batch for server-a, into the source's log (under the key server-a's
	// client then sends it with: stored once).
	if got, err := b.Ingest(t.Context(), "shared", "in", "b0", recs[:250]); err != nil || got.FirstOffset != 0 || got.Count != 250 || got.Duplicate {
		t.Errorf("server-b's batch for server-a: %+v, %v; want 250 events accepted at offset 0", got, err)
	}
	ingestAll(t, a, "shared", recs[:1500], 0, 250)
	waitCommitted(t, a, "shared", 1500)
	l, err := stB.GetLease(t.Context(), d.ID)
	if err != nil || l.Owner != "server-a" || l.Epoch != 1 {
		t.Fatalf("lease: %+v, %v; want server-a, epoch 1", l, err)
	}
	// server-b's checkpoint under a stale epoch (0 is unfenced; 1 is server-a's but it is
	// server-b writing with what it read) is only possible through the lease: it has none.
	if _, err := stB.AcquireLease(t.Context(), d.ID, "server-b", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Errorf("server-b took the lease server-a holds: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// server-a stopped cleanly and released its lease: server-b's next start takes over.
	b = newRuntime(t, stB, func(c *Config) { c.Owner = "server-b" })
	waitFor(t, "server-b resumed it", func() bool { l, ok := b.Live("shared"); return ok && l.Phase == PhaseRunning })
	ingestAll(t, b, "shared", recs, 1500, 250)
	waitCommitted(t, b, "shared", 3000)
	equalResults(t, collected(t, stB, "shared"), replay(t, graph, recs))
	if l, _ := stB.GetLease(t.Context(), d.ID); l.Owner != "server-b" || l.Epoch != 2 {
		t.Errorf("lease after the take-over: %+v; want server-b, epoch 2", l)
	}
}
