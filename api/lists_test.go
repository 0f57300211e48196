package api_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/store"
)

// gatedStore holds each ListScenarios until the test lets it go, counting those inside.
type gatedStore struct {
	store.Store
	inside, most atomic.Int64
	gate         chan struct{}
}

func (g *gatedStore) ListScenarios(ctx context.Context, f store.ScenarioFilter) ([]store.Scenario, error) {
	n := g.inside.Add(1)
	defer g.inside.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	return g.Store.ListScenarios(ctx, f)
}

// At most api.ScenarioListsAtOnce scenario lists are read from the store at once, the others
// wait their turn and are answered: 5 lists sent together (scenarios and deployment
// statuses) have 2 reading and 3 waiting, and all get their page (30 clients listing with a
// search that matched little held SQLite's read connections, and a read of one scenario
// waited 1 s: hostile round 15, finding 2).
func TestScenarioListsTakeTurns(t *testing.T) {
	g := &gatedStore{Store: sqliteStore(t), gate: make(chan struct{})}
	c := newClient(t, g)
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/api/scenarios?search=s"
			if i%2 == 1 {
				path = "/api/deployments"
			}
			c.get(path).ok(t, http.StatusOK, nil)
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); g.inside.Load() != 2 || api.ListsWaiting(c.handler) != 3; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s on: %d lists reading, %d waiting; want 2 and 3", g.inside.Load(), api.ListsWaiting(c.handler))
		}
		time.Sleep(time.Millisecond)
	}
	close(g.gate)
	wg.Wait()
	if m := g.most.Load(); m != api.ScenarioListsAtOnce {
		t.Errorf("%d lists read at once, want %d", m, api.ScenarioListsAtOnce)
	}
}
