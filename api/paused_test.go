package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/store"
)

// TestPausedSaysPaused: events for a scenario whose deployment a --no-resume start paused are
// refused with 409 not-deployed saying it is paused and how to resume, not "is not deployed".
func TestPausedSaysPaused(t *testing.T) {
	t.Parallel()
	st, _ := deploymentInStore(t, store.StatusRunning, "")
	c := newDeployClient(t, st, func(cfg *deploy.Config) { cfg.NoResume = true })
	p := postEvents(c, "fraud", "in", "", events(0, 1)).problem(t, http.StatusConflict, api.CodeNotDeployed)
	if !strings.Contains(p.Detail, `"fraud" is paused, not running`) || !strings.Contains(p.Detail, `deploy version 1 again ({"version": 1})`) ||
		strings.Count(p.Detail, `{"version": 1}`) != 1 {
		t.Errorf("detail %q; want it to say paused and how to resume", p.Detail)
	}
	// The counts say paused (not running, and no counts yet: they come back when it runs).
	var counts api.LiveCounts
	if c.get("/api/scenarios/fraud/counts").ok(t, http.StatusOK, &counts); counts.Running || !counts.Paused {
		t.Errorf("counts of the paused deployment: running %v paused %v, want false, true", counts.Running, counts.Paused)
	}
	// So does the counts stream.
	stream := openStream(t, c, "/api/scenarios/fraud/counts/stream", "")
	if first := stream.next(t); first.name != "counts" || !strings.Contains(first.data, `"running":false`) || !strings.Contains(first.data, `"paused":true`) {
		t.Errorf("the counts stream's first event: %+v; want running false, paused true", first)
	}
	stream.close()
	// The deployment lists say paused, beside the status RUNNING the store keeps for a start
	// without --no-resume.
	var list api.DeploymentStatusList
	c.get("/api/deployments").ok(t, http.StatusOK, &list)
	if len(list.Scenarios) != 1 || !list.Scenarios[0].Paused || list.Scenarios[0].Status != "RUNNING" ||
		list.Scenarios[0].Deployment == nil || !list.Scenarios[0].Deployment.Paused {
		t.Errorf("deployments %+v; want fraud RUNNING and paused", list.Scenarios)
	}
	// Deployed again, it runs and takes events, and is no longer paused.
	c.post("/api/scenarios/fraud/deploy", nil).ok(t, http.StatusOK, nil)
	postEvents(c, "fraud", "in", "", events(0, 1)).ok(t, http.StatusAccepted, nil)
	counts = api.LiveCounts{}
	if c.get("/api/scenarios/fraud/counts").ok(t, http.StatusOK, &counts); !counts.Running || counts.Paused {
		t.Errorf("counts after the deploy: running %v paused %v, want true, false", counts.Running, counts.Paused)
	}
	c.get("/api/deployments").ok(t, http.StatusOK, &list)
	if len(list.Scenarios) != 1 || list.Scenarios[0].Paused || list.Scenarios[0].Status != "RUNNING" {
		t.Errorf("deployments after the deploy %+v; want fraud RUNNING, not paused", list.Scenarios)
	}
}

// Events sent to a scenario whose latest deployment FAILED are answered 409 with the failure
// and its reason (a crash loop here), not "deploy it first": a client retrying on 409 never
// learned why, and the scenario had been deployed.
func TestIngestIntoAFailedDeploymentSaysWhy(t *testing.T) {
	t.Parallel()
	st, _ := deploymentInStore(t, store.StatusFailed, "the server stopped 3 times in a row while running it")
	c := newDeployClient(t, st)
	p := postEvents(c, "fraud", "in", "", events(0, 1)).problem(t, http.StatusConflict, api.CodeNotDeployed)
	if want := `scenario "fraud" is not running: its deployment 1 (version 1) FAILED: the server stopped 3 times in a row while running it; deploy it again once the cause is fixed`; p.Detail != want {
		t.Errorf("detail %q; want %q", p.Detail, want)
	}
}

// With less than the store's disk keeps free, a batch of events is 503 store-full saying how
// much is free and what is kept, with Retry-After (deploy.DiskLowError).
func TestDiskLowIs503(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	if _, err := st.CreateScenario(context.Background(), "fraud", store.Draft{Graph: []byte(countGraph("10s"))}); err != nil {
		t.Fatal(err)
	}
	c := newDeployClient(t, st, func(cfg *deploy.Config) {
		cfg.MinFreeDisk = 1 << 30
		cfg.DiskFree = func() (int64, error) { return 5 << 20, nil }
	})
	c.post("/api/scenarios/fraud/deploy", nil).ok(t, http.StatusOK, nil)
	r := postEvents(c, "fraud", "in", "", events(0, 1))
	p := r.problem(t, http.StatusServiceUnavailable, api.CodeStoreFull)
	if !strings.Contains(p.Detail, "5242880 bytes free, less than the 1073741824 the server keeps free (--min-free-disk)") || r.Header.Get("Retry-After") == "" {
		t.Errorf("detail %q, Retry-After %q", p.Detail, r.Header.Get("Retry-After"))
	}
}

// Events sent to a scenario whose deployment another server sharing the store ran, and whose
// lease it has not renewed (it stopped), are taken into the source's log in the store, for
// the server that runs the deployment next (a takeover, or that server back): 202 with their
// offsets, as the server running it would answer. (Before, 409 saying so; before that, a
// new-user round: "is not deployed: deploy it first" while the deployments said RUNNING.)
func TestIngestWhenItsServerIsGone(t *testing.T) {
	t.Parallel()
	st, d := deploymentInStore(t, store.StatusRunning, "")
	// Held by another server while this one starts (it leaves the deployment to it), for a
	// second: then that server is gone.
	l, err := st.AcquireLease(context.Background(), d.ID, "vm/other", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := newDeployClient(t, st)
	for time.Now().Before(l.ExpiresAt.Add(10 * time.Millisecond)) {
		time.Sleep(10 * time.Millisecond)
	}
	var got struct {
		FirstOffset int64 `json:"firstOffset"`
		Count       int   `json:"count"`
	}
	postEvents(c, "fraud", "in", "", events(0, 3)).ok(t, http.StatusAccepted, &got)
	if got.FirstOffset != 0 || got.Count != 3 {
		t.Errorf("accepted %+v, want offsets 0 to 2", got)
	}
	if end, err := st.EventLogEnd(context.Background(), store.EventLog{Scenario: "fraud", Source: "in"}); err != nil || end != 3 {
		t.Errorf("the source's log ends at %d (%v), want 3", end, err)
	}
}

// deploymentInStore returns a store with the scenario "fraud" (countGraph) and its version 1's
// deployment in it with status and reason, which no runtime has run.
func deploymentInStore(t *testing.T, status store.DeploymentStatus, reason string) (store.Store, store.Deployment) {
	t.Helper()
	st := sqliteStore(t)
	ctx := context.Background()
	if _, err := st.CreateScenario(ctx, "fraud", store.Draft{Graph: []byte(countGraph("10s"))}); err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDeployment(ctx, store.NewDeployment{Scenario: "fraud", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d, err = st.SetDeploymentStatus(ctx, d.ID, status, reason); err != nil {
		t.Fatal(err)
	}
	return st, d
}

// canceledMeanwhile is a store on which another server cancels a deployment just before this
// one's change of its status.
type canceledMeanwhile struct{ store.Store }

func (s canceledMeanwhile) SetDeploymentStatus(ctx context.Context, id int64, to store.DeploymentStatus, reason string) (store.Deployment, error) {
	if _, err := s.Store.SetDeploymentStatus(ctx, id, store.StatusCanceled, "canceled by the other server"); err != nil {
		return store.Deployment{}, err
	}
	return s.Store.SetDeploymentStatus(ctx, id, to, reason)
}

// A cancel that another server sharing the store beat to it answers 409 deployment-changed,
// not 500 internal-error ("cannot move from CANCELED to CANCELED": a hostile round, two
// servers on one PostgreSQL).
func TestCancelBeatenByAnotherServer(t *testing.T) {
	t.Parallel()
	st, _ := deploymentInStore(t, store.StatusRunning, "")
	c := newDeployClient(t, canceledMeanwhile{st}, func(cfg *deploy.Config) { cfg.NoResume = true })
	p := c.post("/api/scenarios/fraud/cancel", nil).problem(t, http.StatusConflict, api.CodeDeploymentChanged)
	if !strings.Contains(p.Detail, `the deployment of "fraud" changed while this request ran`) {
		t.Errorf("detail %q", p.Detail)
	}
}
