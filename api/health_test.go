package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// stalledStore is a store whose probe waits, whatever its context, until release closes: SQLite's
// waits behind a write stuck in fsync (a frozen or failing disk). calls counts the probes.
type stalledStore struct {
	store.Store
	release chan struct{}
	calls   atomic.Int64
}

func (s *stalledStore) Ping(context.Context) error {
	s.calls.Add(1)
	<-s.release
	return nil
}

// /readyz answers within its 2 s even when the store's probe does not return (hostile round:
// 45.9 s behind a frozen disk): 503 not-ready saying so. The probes waiting meanwhile share one
// store call; once it returns, /readyz answers 200 again.
func TestReadyzBoundedWhenTheStoreStalls(t *testing.T) {
	st := &stalledStore{Store: sqliteStore(t), release: make(chan struct{})}
	c := newClient(t, st)
	for range 3 {
		start := time.Now()
		p := c.get("/readyz").problem(t, http.StatusServiceUnavailable, "not-ready")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("/readyz answered after %v, want about 2 s", took)
		}
		if !strings.Contains(p.Detail, "did not answer within 2s") {
			t.Errorf("detail %q", p.Detail)
		}
	}
	if n := st.calls.Load(); n != 1 {
		t.Errorf("%d store probes for 3 readyz, want 1 (the others wait for it)", n)
	}
	close(st.release)
	c.get("/readyz").ok(t, http.StatusOK, nil)
}

// downStore is a store whose database is not listening (a PostgreSQL server stopped): its
// calls fail with the refused connection pgx wraps.
type downStore struct {
	store.Store
}

func (downStore) CreateScenario(context.Context, string, store.Draft) (store.Version, error) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	return store.Version{}, fmt.Errorf("creating scenario: failed to connect to `user=postgres database=x`: %w", refused)
}

// A store whose database cannot be reached answers 503 not-ready with Retry-After, not a 500
// (hostile round: 357 answers 500 during a PostgreSQL outage of 20 s).
func TestUnreachableStoreIs503(t *testing.T) {
	c := newClient(t, downStore{sqliteStore(t)})
	r := c.post("/api/scenarios", map[string]any{"name": "down", "graph": map[string]any{"nodes": []any{}, "edges": []any{}}})
	p := r.problem(t, http.StatusServiceUnavailable, "not-ready")
	if r.Header.Get("Retry-After") != "5" || !strings.Contains(p.Detail, "cannot be reached") {
		t.Errorf("Retry-After %q, detail %q", r.Header.Get("Retry-After"), p.Detail)
	}
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

// HEAD is answered as GET without a body on every GET route (curl -I, load balancers'
// probes), with GET's status and content type; a stream ends at once; a route without GET
// stays 405.
func TestHeadAnswersAsGet(t *testing.T) {
	c := newClient(t, sqliteStore(t))
	c.post("/api/scenarios", map[string]any{"name": "h", "graph": map[string]any{"nodes": []any{}, "edges": []any{}}}).ok(t, http.StatusCreated, nil)
	for path, want := range map[string]string{
		"/healthz":                              "application/json",
		"/api/scenarios":                        "application/json",
		"/api/scenarios/h":                      "application/json",
		"/":                                     "text/html; charset=utf-8",
		"/api/scenarios/nothing-here/deploy":    "",
		"/api/scenarios/h/versions/1/deploy-no": "",
	} {
		get := c.send(request{Method: http.MethodGet, Path: path})
		head := c.send(request{Method: http.MethodHead, Path: path})
		if head.Status != get.Status || len(head.Body) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q %q; GET: %d %q", path, head.Status, head.Header.Get("Content-Type"), head.Body, get.Status, get.Header.Get("Content-Type"))
		}
		if want != "" && (get.Status != http.StatusOK || get.Header.Get("Content-Type") != want) {
			t.Errorf("GET %s: %d %q, want 200 %s", path, get.Status, get.Header.Get("Content-Type"), want)
		}
	}
	// A stream answers its headers and ends (a GET would go on).
	if r := c.send(request{Method: http.MethodHead, Path: "/api/scenarios/h/counts/stream"}); r.Status != http.StatusOK ||
		r.Header.Get("Content-Type") != "text/event-stream" || len(r.Body) != 0 {
		t.Errorf("HEAD of the counts stream: %d %q %q", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	// A route with POST only: 405 for HEAD as for GET, with the methods it has in Allow.
	if r := c.send(request{Method: http.MethodHead, Path: "/api/validation"}); r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD /api/validation: %d, Allow %q; want 405, POST", r.Status, r.Header.Get("Allow"))
	}
	r := c.send(request{Method: http.MethodPut, Path: "/api/scenarios"})
	if p := r.problem(t, http.StatusMethodNotAllowed, "method-not-allowed"); r.Header.Get("Allow") != "GET, HEAD, POST" ||
		p.Detail != "method PUT is not allowed on /api/scenarios; allowed: GET, HEAD, POST" {
		t.Errorf("PUT /api/scenarios: Allow %q, %q", r.Header.Get("Allow"), p.Detail)
	}
}
