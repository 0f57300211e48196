package deploy

import (
	"context"
	"encoding/json"
	"errors"
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

// An archive asked while a deploy of version 2 has stopped version 1 and not yet recorded
// version 2 waits for the deploy, and is then refused: a deployment runs (a hostile round: it
// landed in between, version 1 ended CANCELED "replaced by version 2" with no version 2, the
// scenario archived with nothing running, and the deploy answered 409).
func TestArchiveWaitsForADeploy(t *testing.T) {
	st := &createHeld{Store: sqliteStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	createScenario(t, st, "s", tumblingGraph(""))
	r := newRuntime(t, st)
	deploy(t, r, "s", 0)
	if _, err := st.SaveVersion(t.Context(), "s", 1, store.Draft{Graph: json.RawMessage(tumblingGraph(stdoutSink))}); err != nil {
		t.Fatal(err)
	}
	deployed := make(chan error, 1)
	go func() {
		_, err := r.Deploy(t.Context(), DeployRequest{Scenario: "s", Version: 2})
		deployed <- err
	}()
	<-st.entered
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
