package deploy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// takeOverLease is the lease of the takeover tests' runtimes: a server gone is seen so
// within about a second.
const takeOverLease = 300 * time.Millisecond

// A server sharing the store with TakeOver runs the deployment of a server that is gone,
// crashed (its lease expires) or stopped cleanly (its lease released), from its last
// checkpoint, and goes on taking its events: the results of both are those of one
// uninterrupted replay, none lost or twice, and the lease is its own.
func TestTakeOverAServerGone(t *testing.T) {
	for _, c := range []struct {
		gone, on string
		open     newStoreFunc
	}{{"crashed", "SQLite", sqliteStore}, {"stopped", "SQLite", sqliteStore}, {"crashed", "PostgreSQL", postgresStore}} {
		t.Run(c.gone+" on "+c.on, func(t *testing.T) {
			st := c.open(t)
			graph := tumblingGraph("")
			createScenario(t, st, "s", graph)
			a := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
			b := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL, cfg.TakeOver = "b", takeOverLease, true })
			d := deploy(t, a, "s", 0)
			recs := records(1200)
			ingestAll(t, a, "s", recs[:500], 0, 100)
			waitCommitted(t, a, "s", 500)
			if l, ok := b.Live("s"); ok {
				t.Fatalf("b runs the deployment while a does: %+v", l)
			}
			if c.gone == "crashed" {
				a.abort() // no final checkpoint, no release: the lease expires
			} else if err := a.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "b running the deployment", func() bool { l, ok := b.Live("s"); return ok && l.Deployment == d.ID })
			ingestAll(t, b, "s", recs, 500, 100)
			waitCommitted(t, b, "s", 1200)
			equalResults(t, collected(t, st, "s"), replay(t, graph, recs))
			l, err := st.GetLease(t.Context(), d.ID)
			if err != nil || l.Owner != "b" {
				t.Errorf("lease %+v (%v); want b's", l, err)
			}
		})
	}
}

// A deployment whose server is gone and that writes a file (or reads one) is left to that
// server, which has the file, and said so once; one of another scenario that does not is
// taken over at the same look. Without TakeOver nothing is.
func TestTakeOverLeavesFilesToTheirServer(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "files", fileSinkGraph("out.jsonl"))
	createScenario(t, st, "plain", tumblingGraph(""))
	a := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
	var logs lockedBuffer
	b := newRuntime(t, st, func(cfg *Config) {
		cfg.Owner, cfg.LeaseTTL, cfg.TakeOver = "b", takeOverLease, true
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	off := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "off", takeOverLease })
	files := deploy(t, a, "files", 0)
	plain := deploy(t, a, "plain", 0)
	a.abort()
	waitFor(t, "b running plain", func() bool { l, ok := b.Live("plain"); return ok && l.Deployment == plain.ID })
	waitFor(t, "b saying it leaves files, or taking it", func() bool {
		_, taken := b.Live("files")
		return taken || strings.Contains(logs.String(), "is left to it: it writes a file (sink \\\"out\\\")")
	})
	if l, ok := b.Live("files"); ok {
		t.Errorf("b runs the file sink's deployment: %+v", l)
	}
	if n := strings.Count(logs.String(), "is left to it"); n != 1 {
		t.Errorf("said %d times; want once:\n%s", n, logs.String())
	}
	for _, name := range []string{"files", "plain"} {
		if l, ok := off.Live(name); ok {
			t.Errorf("the runtime without TakeOver runs %s: %+v", name, l)
		}
	}
	if got, err := st.GetDeployment(t.Context(), files.ID); err != nil || got.Status != store.StatusRunning {
		t.Errorf("files' deployment %+v (%v); want it RUNNING, for its server", got, err)
	}
}

// A deployment canceled here whose cancel the store could not record (a full disk) stays
// RUNNING in the store, its lease released: takeOver does not run it again, while it takes
// over, at the same looks, the deployment of a server that is gone.
func TestTakeOverLeavesWhatItCanceled(t *testing.T) {
	st := &cancelRefusingStore{Store: sqliteStore(t)}
	createScenario(t, st, "c", tumblingGraph(""))
	createScenario(t, st, "gone", tumblingGraph(""))
	a := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
	gone := deploy(t, a, "gone", 0)
	r := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL, cfg.TakeOver = "r", takeOverLease, true })
	d := deploy(t, r, "c", 0)
	st.full.Store(true)
	var nr *CancelNotRecordedError
	if _, err := r.Cancel(t.Context(), "c", "ann", ""); !errors.As(err, &nr) {
		t.Fatalf("cancel on a full store: %v", err)
	}
	st.full.Store(false)
	a.abort()
	waitFor(t, "r taking the gone server's deployment over", func() bool { l, ok := r.Live("gone"); return ok && l.Deployment == gone.ID })
	if l, ok := r.Live("c"); ok {
		t.Errorf("r runs again the deployment it canceled: %+v", l)
	}
	if got, err := st.GetDeployment(t.Context(), d.ID); err != nil || got.Status != store.StatusRunning {
		t.Errorf("canceled deployment %+v (%v); want RUNNING in the store, as before", got, err)
	}
}

// A deployment whose server is gone and that this server cannot run (a Kafka source, and
// this server has no brokers) is left to it and said so once, RUNNING in the store (a hostile
// round: it was taken over and marked FAILED, for good; the gone server's restart did not
// resume it); a server with the brokers takes it over.
func TestTakeOverLeavesWhatItCannotRun(t *testing.T) {
	st := sqliteStore(t)
	brokers, _ := newKafka(t, map[string]int32{"events": 1})
	createScenario(t, st, "k", kafkaGraph(t, "events", "2s"))
	withBrokers := func(cfg *Config) { cfg.KafkaBrokers = brokers }
	a := newRuntime(t, st, withBrokers, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
	d := deploy(t, a, "k", 0)
	var logs lockedBuffer
	b := newRuntime(t, st, func(cfg *Config) {
		cfg.Owner, cfg.LeaseTTL, cfg.TakeOver = "b", takeOverLease, true
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	a.abort()
	waitFor(t, "b saying it cannot run k, or taking it", func() bool {
		_, taken := b.Live("k")
		got, _ := st.GetDeployment(t.Context(), d.ID)
		return taken || got.Status == store.StatusFailed || strings.Contains(logs.String(), "is left to it: it cannot run on this server")
	})
	if l, ok := b.Live("k"); ok {
		t.Fatalf("b runs k without the brokers: %+v", l)
	}
	if got, err := st.GetDeployment(t.Context(), d.ID); err != nil || got.Status != store.StatusRunning {
		t.Fatalf("k's deployment %+v (%v); want it RUNNING, for a server that can run it", got, err)
	}
	c := newRuntime(t, st, withBrokers, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL, cfg.TakeOver = "c", takeOverLease, true })
	waitFor(t, "c, with the brokers, running k", func() bool { l, ok := c.Live("k"); return ok && l.Deployment == d.ID })
	if n := strings.Count(logs.String(), "is left to it"); n != 1 {
		t.Errorf("b said it %d times; want once:\n%s", n, logs.String())
	}
}

// A server started in safe mode leaves paused only the deployments that were its own (or
// nobody's): one whose lease another server holds, expired or not (that server may be
// stalled, not gone), stays as it is (a hostile round: a server stopped for 17 s had its 157
// deployments marked paused by a safe-mode start; once it was killed, nobody took them over).
func TestSafeModeLeavesAnotherServersDeployments(t *testing.T) {
	st := sqliteStore(t)
	createScenario(t, st, "theirs", tumblingGraph(""))
	createScenario(t, st, "mine", tumblingGraph(""))
	theirs, err := st.CreateDeployment(t.Context(), store.NewDeployment{Scenario: "theirs", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := st.CreateDeployment(t.Context(), store.NewDeployment{Scenario: "mine", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(t.Context(), theirs.ID, "stalled", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcquireLease(t.Context(), mine.ID, "safe", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stalled server's lease to expire", func() bool {
		l, err := st.GetLease(t.Context(), theirs.ID)
		return err == nil && time.Now().After(l.ExpiresAt)
	})
	newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.NoResume = "safe", true })
	if got, _ := st.GetDeployment(t.Context(), mine.ID); !IsPaused(got.Reason) {
		t.Errorf("its own deployment: reason %q; want it paused", got.Reason)
	}
	if got, _ := st.GetDeployment(t.Context(), theirs.ID); got.Reason != "" || got.Status != store.StatusDeploying {
		t.Errorf("the stalled server's deployment: %+v; want it as it was, DEPLOYING, no reason", got)
	}
}

// leaseCountingStore counts the lease reads of a runtime's takeover looks.
type leaseCountingStore struct {
	store.Store
	gets, looks atomic.Int64
}

func (s *leaseCountingStore) GetLease(ctx context.Context, id int64) (store.Lease, error) {
	s.gets.Add(1)
	return s.Store.GetLease(ctx, id)
}

// ListActiveDeployments begins each look (and the runtime's Start).
func (s *leaseCountingStore) ListActiveDeployments(ctx context.Context) ([]store.Deployment, error) {
	s.looks.Add(1)
	return s.Store.ListActiveDeployments(ctx)
}

// A takeover look reads the leases of all the other servers' deployments in one query, not
// one each (note 38: hundreds of deployments on other servers were hundreds of queries each
// look), and still finds those whose server is gone.
func TestTakeOverLooksReadLeasesAtOnce(t *testing.T) {
	sqlite := sqliteStore(t)
	names := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	for _, name := range names {
		createScenario(t, sqlite, name, tumblingGraph(""))
	}
	a := newRuntime(t, sqlite, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL = "a", takeOverLease })
	for _, name := range names {
		deploy(t, a, name, 0)
	}
	st := &leaseCountingStore{Store: sqlite}
	b := newRuntime(t, st, func(cfg *Config) { cfg.Owner, cfg.LeaseTTL, cfg.TakeOver = "b", takeOverLease, true })
	waitFor(t, "three looks of b", func() bool { return st.looks.Load() >= 4 })
	if n := st.gets.Load(); n != 0 {
		t.Errorf("b's looks read leases one by one: %d reads in %d looks, want none", n, st.looks.Load()-1)
	}
	a.abort()
	waitFor(t, "b running a's deployments", func() bool {
		for _, name := range names {
			if _, ok := b.Live(name); !ok {
				return false
			}
		}
		return true
	})
}
