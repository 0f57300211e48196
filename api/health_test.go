package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// fullStore is a store whose disk is full: every write and the probe fail with
// store.ErrStoreFull, as the real stores report SQLITE_FULL and disk_full (their own tests
// make the database full for real).
type fullStore struct {
	store.Store
}

func (fullStore) Ping(context.Context) error {
	return fmt.Errorf("writing to the store: %w: database or disk is full (13)", store.ErrStoreFull)
}

func (fullStore) CreateScenario(context.Context, string, store.Draft) (store.Version, error) {
	return store.Version{}, fmt.Errorf("creating scenario: %w: database or disk is full (13)", store.ErrStoreFull)
}

// /readyz answers 200 while the store reads and writes, and 503 not-ready once it cannot (here
// closed under the server).
func TestReadyzFailsWhenTheStoreFails(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st)
	c.get("/readyz").ok(t, http.StatusOK, nil)
	st.Close()
	c.get("/readyz").problem(t, http.StatusServiceUnavailable, "not-ready")
	c.get("/healthz").ok(t, http.StatusOK, nil) // the process still serves
}

// A full disk answers 503 store-full with Retry-After, on /readyz and on a write, never a
// generic 500.
func TestStoreFullIs503(t *testing.T) {
	c := newClient(t, fullStore{sqliteStore(t)})
	r := c.get("/readyz")
	r.problem(t, http.StatusServiceUnavailable, "store-full")
	if r.Header.Get("Retry-After") != "30" {
		t.Errorf("readyz Retry-After %q, want 30", r.Header.Get("Retry-After"))
	}
	r = c.post("/api/scenarios", map[string]any{"name": "full", "graph": map[string]any{"nodes": []any{}, "edges": []any{}}})
	p := r.problem(t, http.StatusServiceUnavailable, "store-full")
	if r.Header.Get("Retry-After") != "30" || p.Detail == "" {
		t.Errorf("write on a full store: Retry-After %q, detail %q", r.Header.Get("Retry-After"), p.Detail)
	}
}
