package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// createHeld is a store whose CreateDeployment waits for release once it has said so on
// entered: a deploy held after it stopped the running deployment, before it records the new.
type createHeld struct {
	store.Store
	entered, release chan struct{}
}

func (s *createHeld) CreateDeployment(ctx context.Context, nd store.NewDeployment) (store.Deployment, error) {
	if nd.Version == 2 {
		close(s.entered)
		<-s.release
	}
	return s.Store.CreateDeployment(ctx, nd)
}

// deployHeld deploys version 1 of a scenario "s" on st with a runtime configured so, saves
// version 2, and deploys it: it returns once that deploy has stopped version 1 and is held
// before it records version 2, with the runtime, version 1's deployment and where the
// deploy's error comes once st releases it.
func deployHeld(t *testing.T, st *createHeld, configure ...func(*Config)) (*Runtime, store.Deployment, <-chan error) {
	t.Helper()
	createScenario(t, st, "s", tumblingGraph(""))
	r := newRuntime(t, st, configure...)
	d1 := deploy(t, r, "s", 0)
	if _, err := st.SaveVersion(t.Context(), "s", 1, store.Draft{Graph: json.RawMessage(tumblingGraph(stdoutSink))}); err != nil {
		t.Fatal(err)
	}
	deployed := make(chan error, 1)
	go func() {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "s", Version: 2})
		deployed <- err
	}()
	<-st.entered
	return r, d1, deployed
}

// An archive asked while a deploy of version 2 has stopped version 1 and not yet recorded
// version 2 waits for the deploy, and is then refused: a deployment runs (a hostile round: it
// landed in between, version 1 ended CANCELED "replaced by version 2" with no version 2, the
// scenario archived with nothing running, and the deploy answered 409).
func TestArchiveWaitsForADeploy(t *testing.T) {
	st := &createHeld{Store: sqliteStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	r, _, deployed := deployHeld(t, st)
	archived := make(chan error, 1)
	go func() {
		_, err := r.SetArchived(t.Context(), "s", true)
		archived <- err
	}()
	// Time for the archive to reach the store, as it did in the gap without the lock (then
	// the deploy fails with store.ErrArchived, below); with it, it waits for the deploy.
	time.Sleep(100 * time.Millisecond)
	close(st.release)
	if err := <-deployed; err != nil {
		t.Fatalf("deploy: %v", err)
	}
	if err := <-archived; !errors.Is(err, store.ErrDeploymentActive) {
		t.Fatalf("archive: %v; want it refused, a deployment running", err)
	}
	list, err := st.ListDeployments(t.Context(), "s", 0, 1)
	if err != nil || len(list) != 1 || list[0].Version != 2 || list[0].Status != store.StatusRunning {
		t.Fatalf("latest deployment %+v (%v); want version 2 RUNNING", list, err)
	}
}

// Another server sharing the store (its runtime's lock is not this one's) archives the
// scenario, or deploys it, while a deploy here has stopped version 1 and not yet recorded
// version 2: the archive is refused, as version 1 is still RUNNING in the store until version
// 2 is recorded in the same transaction; the other deploy replaces version 1, and this one is
// then refused without ending anything. A hostile round with two servers on one PostgreSQL:
// version 1 CANCELED "replaced by version 2" with no version 2, and nothing running.
func TestAnotherServerInADeploysGap(t *testing.T) {
	for _, c := range []struct {
		other, on string
		open      newStoreFunc
	}{{"archive", "SQLite", sqliteStore}, {"deploy", "SQLite", sqliteStore}, {"archive", "PostgreSQL", postgresStore}, {"deploy", "PostgreSQL", postgresStore}} {
		other := c.other
		t.Run(other+" on "+c.on, func(t *testing.T) {
			inner := c.open(t)
			st := &createHeld{Store: inner, entered: make(chan struct{}), release: make(chan struct{})}
			r, d1, deployed := deployHeld(t, st, func(c *Config) { c.Owner = "here" })
			var running store.Deployment
			switch other {
			case "archive":
				if _, err := inner.SetArchived(t.Context(), "s", true); !errors.Is(err, store.ErrDeploymentActive) {
					t.Fatalf("the other server's archive: %v; want store.ErrDeploymentActive (version 1 is RUNNING in the store)", err)
				}
				close(st.release)
				if err := <-deployed; err != nil {
					t.Fatalf("deploy: %v", err)
				}
				list, err := inner.ListDeployments(t.Context(), "s", 0, 1)
				if err != nil || len(list) != 1 {
					t.Fatal(list, err)
				}
				running = list[0]
				if running.Version != 2 {
					t.Fatalf("running %+v; want version 2", running)
				}
			case "deploy":
				there := newRuntime(t, inner, func(c *Config) { c.Owner = "there" })
				running = deploy(t, there, "s", 1)
				close(st.release)
				if err := <-deployed; !errors.Is(err, store.ErrDeploymentActive) {
					t.Fatalf("deploy here: %v; want store.ErrDeploymentActive, the other server's deploy recorded first", err)
				}
			}
			if running.Status != store.StatusRunning {
				t.Errorf("latest deployment %+v; want RUNNING", running)
			}
			old, err := inner.GetDeployment(t.Context(), d1.ID)
			if err != nil || old.Status != store.StatusCanceled || !strings.HasPrefix(old.Reason, fmt.Sprintf("replaced by version %d", running.Version)) {
				t.Errorf("version 1's deployment %+v (%v); want CANCELED \"replaced by version %d\"", old, err, running.Version)
			}
			if r.lookup("s") != nil && other == "deploy" {
				t.Error("version 1 runs here again after the other server replaced it")
			}
		})
	}
}

// createFails is a store whose CreateDeployment of version 2 fails as a full disk would.
type createFails struct{ store.Store }

var errSimulatedFull = errors.New("database or disk is full (simulated)")

func (s *createFails) CreateDeployment(ctx context.Context, nd store.NewDeployment) (store.Deployment, error) {
	if nd.Version == 2 {
		return store.Deployment{}, errSimulatedFull
	}
	return s.Store.CreateDeployment(ctx, nd)
}

// A deploy that stopped the running deployment and could not record the new one runs the
// old one again, from its final checkpoint: it stays RUNNING, and the events sent after
// give, with those before, the results of one uninterrupted run (before, it was CANCELED
// "replaced by version 2" with nothing running).
func TestDeployNotRecordedResumesTheStopped(t *testing.T) {
	st := &createFails{Store: sqliteStore(t)}
	graph := tumblingGraph("")
	createScenario(t, st, "s", graph)
	r := newRuntime(t, st)
	d1 := deploy(t, r, "s", 0)
	recs := records(600)
	ingestAll(t, r, "s", recs[:300], 0, 100)
	waitCommitted(t, r, "s", 300)
	if _, err := st.SaveVersion(t.Context(), "s", 1, store.Draft{Graph: json.RawMessage(tumblingGraph(stdoutSink))}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Deploy(t.Context(), DeployRequest{Scenario: "s", Version: 2}); !errors.Is(err, errSimulatedFull) {
		t.Fatalf("deploy: %v; want the store's failure", err)
	}
	got, err := st.GetDeployment(t.Context(), d1.ID)
	if err != nil || got.Status != store.StatusRunning {
		t.Fatalf("deployment 1 after the failed deploy: %+v (%v); want RUNNING", got, err)
	}
	waitFor(t, "deployment 1 running here again", func() bool { l, ok := r.Live("s"); return ok && l.Deployment == d1.ID })
	ingestAll(t, r, "s", recs, 300, 100)
	waitCommitted(t, r, "s", 600)
	equalResults(t, collected(t, st, "s"), replay(t, graph, recs))
}
