package api_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRateLimits works the token buckets by hand: ingestion 2 a second in bursts of 3, test
// runs one every 10 seconds in bursts of 1, per identity, on a clock that moves only when
// the test moves it.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	ctx := t.Context()
	token := func(name string) string {
		secret, hash := auth.NewTokenSecret()
		if _, err := st.CreateToken(ctx, store.NewToken{Name: name, Role: "deployer", SecretHash: hash}); err != nil {
			t.Fatal(err)
		}
		return "Bearer " + secret
	}
	anna, ben := token("anna"), token("ben")
	clock := &fakeClock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	c := newClient(t, st, func(cfg *api.Config) {
		cfg.Authenticator = &auth.Authenticator{Tokens: st}
		cfg.RateLimits = api.RateLimits{IngestRate: 2, IngestBurst: 3, TestRate: 0.1, TestBurst: 1, Now: clock.Now}
	})
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("x"), "graph", tinyGraph),
		Header: map[string]string{"Authorization": anna}}).ok(t, http.StatusCreated, nil)

	// Without a runtime an accepted batch is answered 503 unavailable: past the limit.
	ingest := func(who string) *response {
		return c.send(request{Method: http.MethodPost, Path: "/api/scenarios/x/sources/in/events", Body: `{"a":1}`,
			Header: map[string]string{"Authorization": who}})
	}
	passed := func(r *response) {
		t.Helper()
		r.problem(t, http.StatusServiceUnavailable, api.CodeUnavailable)
	}
	limited := func(r *response, retryAfter string) {
		t.Helper()
		r.problem(t, http.StatusTooManyRequests, api.CodeRateLimited)
		if got := r.Header.Get("Retry-After"); got != retryAfter {
			t.Errorf("Retry-After %q; want %q", got, retryAfter)
		}
	}
	// The bucket holds 3: three pass, the fourth waits 0.5 s for a token (Retry-After 1).
	for range 3 {
		passed(ingest(anna))
	}
	limited(ingest(anna), "1")
	// Another identity has its own bucket.
	passed(ingest(ben))
	// 0.5 s later: one token (2/s × 0.5 s); the next waits 0.5 s again.
	clock.advance(500 * time.Millisecond)
	passed(ingest(anna))
	limited(ingest(anna), "1")
	// 0.25 s later: half a token; the next waits 0.25 s, rounded up to 1.
	clock.advance(250 * time.Millisecond)
	limited(ingest(anna), "1")
	// 10 s later the bucket is full again, at 3, not 20.
	clock.advance(10 * time.Second)
	for range 3 {
		passed(ingest(anna))
	}
	limited(ingest(anna), "1")

	// Test runs: one per 10 s. The graph does not validate (422): it still took the token.
	testRun := func(who string) *response {
		return c.send(request{Method: http.MethodPost, Path: "/api/test",
			Body:   rawBody("graph", `{"nodes": [{"id": "x", "type": "Filtre"}], "edges": []}`, "records", `""`),
			Header: map[string]string{"Authorization": who}})
	}
	testRun(anna).problem(t, http.StatusUnprocessableEntity, api.CodeScenarioHasErrors)
	limited(testRun(anna), "10")
	clock.advance(2500 * time.Millisecond) // 0.25 of a token: 7.5 s to go, rounded up to 8
	limited(testRun(anna), "8")
	testRun(ben).problem(t, http.StatusUnprocessableEntity, api.CodeScenarioHasErrors)
	clock.advance(7500 * time.Millisecond)
	testRun(anna).problem(t, http.StatusUnprocessableEntity, api.CodeScenarioHasErrors)

	// Other routes are not limited.
	for range 5 {
		c.send(request{Method: http.MethodPost, Path: "/api/validation", Body: rawBody("graph", tinyGraph),
			Header: map[string]string{"Authorization": anna}}).ok(t, http.StatusOK, nil)
	}
}

// TestRateLimitsWithoutAuth: without authentication every request is the local user, so the
// bucket is the client address's.
func TestRateLimitsWithoutAuth(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	c := newClient(t, sqliteStore(t), func(cfg *api.Config) {
		cfg.RateLimits = api.RateLimits{IngestRate: 1, IngestBurst: 1, Now: clock.Now}
	})
	c.post("/api/scenarios/x/sources/in/events", `{"a":1}`).problem(t, http.StatusServiceUnavailable, api.CodeUnavailable)
	r := c.post("/api/scenarios/x/sources/in/events", `{"a":1}`)
	r.problem(t, http.StatusTooManyRequests, api.CodeRateLimited)
	if r.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	// Test runs are not limited here (TestRate 0).
	for range 3 {
		c.post("/api/test", rawBody("graph", `{"nodes": [], "edges": []}`, "records", `""`))
	}
}
