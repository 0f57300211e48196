package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The routes that validate a graph take a place of the compile gate: with every place held
// (by two other identities), each waits and is answered 503 requests-busy with Retry-After 1,
// nothing done (no scenario created); with the places given back, each is served.
func TestCompileGateRoutes(t *testing.T) {
	st := sqliteStoreOf(t)
	h, err := New(Config{Store: st, RateLimits: RateLimits{MaxConcurrentValidations: 4}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	gate := h.h.compiles
	gate.wait = 100 * time.Millisecond
	var releases []func()
	for _, who := range []string{"x", "x", "y", "y"} {
		release, err := gate.enter(as(who))
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	graph := `{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}},
		{"id": "out", "type": "Sink", "ref": {"typ": "collect", "parameters": [{"name": "value", "expression": {"language": "expr", "expression": "#input"}}]}}],
		"edges": [{"from": "in", "to": "out"}]}`
	routes := []struct{ path, body string }{
		{"/api/validation", `{"graph": ` + graph + `}`},
		{"/api/validation/node", `{"graph": ` + graph + `, "nodeId": "out"}`},
		{"/api/suggestions", `{"graph": ` + graph + `, "nodeId": "out", "expression": "#", "caret": 1}`},
		{"/api/scenarios", `{"name": "gated", "graph": ` + graph + `}`},
	}
	post := func(path, body string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return resp, p.Code
	}
	for _, r := range routes {
		resp, code := post(r.path, r.body)
		if resp.StatusCode != http.StatusServiceUnavailable || code != CodeRequestsBusy || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s with every place held: %d %q Retry-After %q; want 503 requests-busy, 1", r.path, resp.StatusCode, code, resp.Header.Get("Retry-After"))
		}
	}
	if _, err := st.GetScenario(context.Background(), "gated"); err == nil {
		t.Error("the refused create stored the scenario")
	}
	for _, release := range releases {
		release()
	}
	for _, r := range routes {
		if resp, code := post(r.path, r.body); resp.StatusCode >= 300 {
			t.Errorf("%s with the places free: %d %q", r.path, resp.StatusCode, code)
		}
	}
}
