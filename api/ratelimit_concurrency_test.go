package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// TestConcurrentTestRuns: with a bound of 2, a third test run (of a graph, or of a scenario's
// saved test cases) while two run is answered 503
// test-runs-busy with Retry-After, and one is accepted again once a run ends. The runs are
// held inside the handler by channels, not by time.
func TestConcurrentTestRuns(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	rl := newRateLimiter(RateLimits{MaxConcurrentTests: 2})
	srv := httptest.NewServer(rl.limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(srv.Close)
	post := func(path string, hold bool) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Error(err)
			return nil
		}
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		resp.Body.Close()
		return resp
	}
	done := make(chan int, 2)
	for _, path := range []string{"/api/test", "/api/scenarios/x/test"} {
		go func() {
			if resp := post(path, true); resp != nil {
				done <- resp.StatusCode
			} else {
				done <- 0
			}
		}()
		<-entered
	}
	for _, path := range []string{"/api/test", "/api/scenarios/x/tests/run"} {
		resp := post(path, false)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("third run %s: %d, Retry-After %q; want 503, 1", path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// Other routes are not bounded.
	for _, path := range []string{"/api/validation", "/api/scenarios/x/tests/runs", "/api/scenarios//tests/run"} {
		if resp := post(path, false); resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s while two runs run: %d", path, resp.StatusCode)
		}
	}
	release <- struct{}{}
	if code := <-done; code != http.StatusNoContent {
		t.Errorf("held run: %d", code)
	}
	// One slot is free again once the finished run's handler has returned.
	if resp := post("/api/test", false); resp.StatusCode != http.StatusNoContent {
		t.Errorf("run after one ended: %d", resp.StatusCode)
	}
	release <- struct{}{}
	if code := <-done; code != http.StatusNoContent {
		t.Errorf("held run: %d", code)
	}
}

// TestDeployTestCasesTakeATestSlot: a deploy's saved test cases take a place among the test
// runs that run at once: with the only place held, a deploy of a scenario with a saved test
// case is answered 503 test-runs-busy with Retry-After 1 before anything runs, and one
// without saved test cases is not held back.
func TestDeployTestCasesTakeATestSlot(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	graph := []byte(`{"nodes": [], "edges": []}`)
	with, err := st.CreateScenario(t.Context(), "with", store.Draft{Graph: graph})
	if err != nil {
		t.Fatal(err)
	}
	without, err := st.CreateScenario(t.Context(), "without", store.Draft{Graph: graph})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutTestCase(t.Context(), store.TestCase{Scenario: "with", Name: "one", Records: `{"a": 1}`, Expected: `{}`}); err != nil {
		t.Fatal(err)
	}
	h := &handlers{store: st, testSlots: make(chan struct{}, 1)}
	h.testSlots <- struct{}{} // a test run holds the only place
	_, err = h.runTestCases(t.Context(), with, true)
	var se huma.StatusError
	var p *ProblemDetails
	if !errors.As(err, &se) || se.GetStatus() != http.StatusServiceUnavailable || !errors.As(err, &p) || p.Code != CodeTestRunsBusy {
		t.Fatalf("deploy's test cases while the place is held: %v, want 503 test-runs-busy", err)
	}
	if hs, ok := err.(huma.HeadersError); !ok || hs.GetHeaders().Get("Retry-After") != "1" {
		t.Errorf("no Retry-After: 1 on %v", err)
	}
	if run, err := h.runTestCases(t.Context(), without, true); err != nil || !run.Passed || len(run.Tests) != 0 {
		t.Errorf("deploy without saved test cases: %+v, %v; want passed, none run", run, err)
	}
	if len(h.testSlots) != 1 {
		t.Errorf("%d places held, want the test run's 1", len(h.testSlots))
	}
}
