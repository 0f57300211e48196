package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
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
// wait their turn and are answered: 5 lists sent together by 5 clients (scenarios and
// deployment statuses) have 2 reading and 3 waiting, and all get their page (30 clients
// listing with a search that matched little held SQLite's read connections, and a read of
// one scenario waited 1 s: hostile round 15). A client with api.ScenarioListsPerClient lists
// reading or waiting has its next answered 503 requests-busy at once (one client's 120
// connections made other clients' lists wait 3.25 s: round 16).
func TestScenarioListsTakeTurns(t *testing.T) {
	g := &gatedStore{Store: sqliteStore(t), gate: make(chan struct{})}
	c := newClient(t, g, func(cfg *api.Config) { cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	c.post("/api/scenarios", rawBody("name", quote("s"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/api/scenarios?search=s"
			if i%2 == 1 {
				path = "/api/deployments"
			}
			c.send(request{Method: http.MethodGet, Path: path, Header: from(fmt.Sprintf("10.0.0.%d", i%3+1))}).ok(t, http.StatusOK, nil)
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); g.inside.Load() != 2 || api.ListsWaiting(c.handler) != 3; {
		if time.Now().After(deadline) {
			t.Fatalf("10 s on: %d lists reading, %d waiting; want 2 and 3", g.inside.Load(), api.ListsWaiting(c.handler))
		}
		time.Sleep(time.Millisecond)
	}
	// 10.0.0.1 has 2 (lists 0 and 3) reading or waiting: its third is refused.
	r := c.send(request{Method: http.MethodGet, Path: "/api/scenarios", Header: from("10.0.0.1")})
	r.problem(t, http.StatusServiceUnavailable, api.CodeRequestsBusy)
	if r.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	close(g.gate)
	wg.Wait()
	if m := g.most.Load(); m != api.ScenarioListsAtOnce {
		t.Errorf("%d lists read at once, want %d", m, api.ScenarioListsAtOnce)
	}
	c.send(request{Method: http.MethodGet, Path: "/api/scenarios", Header: from("10.0.0.1")}).ok(t, http.StatusOK, nil)
}
