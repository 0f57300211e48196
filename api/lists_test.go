package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
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

// A page of versions is cut at 4 MiB of text, counting 256 bytes an entry besides its comment
// and author, and its cursor goes on from the last kept: 120 versions with comments of 10,000
// "𝔸" (40,000 bytes) and the first without are counted 40,261 bytes each (author "local") and
// 261; 4,194,304 / 40,261 = 104.2, so the first page of at most 1,000 holds v121 to v18 (104)
// and the next v17 to v1 (17): each version once (found by a hostile client: a page of 1,000
// such versions was 40 MB).
func TestVersionPagesCutByBytes(t *testing.T) {
	c := newClient(t, sqliteStore(t))
	c.post("/api/scenarios", rawBody("name", quote("long"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	comment := strings.Repeat("𝔸", 10_000)
	for v := 1; v <= 120; v++ {
		c.post("/api/scenarios/long/versions", rawBody("graph", tinyGraph, "baseVersion", fmt.Sprint(v), "comment", quote(comment))).ok(t, http.StatusCreated, nil)
	}
	var first, second api.VersionList
	c.get("/api/scenarios/long/versions?limit=1000").ok(t, http.StatusOK, &first)
	if n := len(first.Versions); n != 104 || first.Versions[0].Version != 121 || first.Versions[n-1].Version != 18 || first.Next != 18 {
		t.Fatalf("first page: %d versions, v%d to v%d, next %d; want 104, v121 to v18, next 18", n, first.Versions[0].Version, first.Versions[n-1].Version, first.Next)
	}
	c.get(fmt.Sprintf("/api/scenarios/long/versions?limit=1000&before=%d", first.Next)).ok(t, http.StatusOK, &second)
	if n := len(second.Versions); n != 17 || second.Versions[0].Version != 17 || second.Versions[n-1].Version != 1 || second.Next != 0 {
		t.Fatalf("second page: %d versions, v%d to v%d, next %d; want 17, v17 to v1, no next", n, second.Versions[0].Version, second.Versions[n-1].Version, second.Next)
	}

	// A comment of 10,000 control characters is 60,000 bytes in the answer (\u0001 each), and
	// counted so (found by review: counted 10,000): 60,261 an entry, 69 to a page
	// (4,194,304 / 60,261 = 69.6): v81 to v13, then v12 to v1.
	c.post("/api/scenarios", rawBody("name", quote("ctrl"), "graph", tinyGraph)).ok(t, http.StatusCreated, nil)
	ctrl := strings.Repeat(`\u0001`, 10_000) // JSON escapes: the comment is 10,000 U+0001
	for v := 1; v <= 80; v++ {
		c.post("/api/scenarios/ctrl/versions", rawBody("graph", tinyGraph, "baseVersion", fmt.Sprint(v), "comment", `"`+ctrl+`"`)).ok(t, http.StatusCreated, nil)
	}
	first, second = api.VersionList{}, api.VersionList{}
	answer := c.get("/api/scenarios/ctrl/versions?limit=1000")
	answer.ok(t, http.StatusOK, &first)
	if n := len(first.Versions); n != 69 || first.Versions[n-1].Version != 13 || first.Next != 13 || len(answer.Body) > 4<<20 {
		t.Fatalf("first page of ctrl: %d versions, the last v%d, next %d, %d bytes; want 69, v13, next 13, at most 4 MiB", n, first.Versions[n-1].Version, first.Next, len(answer.Body))
	}
	c.get("/api/scenarios/ctrl/versions?limit=1000&before=13").ok(t, http.StatusOK, &second)
	if n := len(second.Versions); n != 12 || second.Versions[0].Version != 12 || second.Next != 0 {
		t.Fatalf("second page of ctrl: %d versions from v%d, next %d; want 12 from v12, no next", n, second.Versions[0].Version, second.Next)
	}
}

// jsonTextBytes, worked by hand against what encoding/json writes for "a\x01\"<é\u2028\xff":
// a (1), \u0001 (6), \" (2), \u003c (6), é (2), \u2028 (6), \ufffd (6): 29.
func TestJSONTextBytes(t *testing.T) {
	if got := api.JSONTextBytes("a\x01\"<é\u2028\xff"); got != 29 {
		t.Errorf("jsonTextBytes = %d, want 29", got)
	}
	if got := api.JSONTextBytes("ab", "cd"); got != 4 {
		t.Errorf("jsonTextBytes of two = %d, want 4", got)
	}
}

// Pages of scenarios and of every scenario's status are cut at 4 MiB of text too (found by a
// hostile re-test: 1,000 scenarios whose deployments had 40 KB comments and reasons made a
// 120 MB page, and 40 slow readers of it ended the server). 60 scenarios s00 to s59, each
// deployed and canceled with comments of 10,000 "𝔸" (40,000 bytes): an entry is counted 256
// bytes, its name and authors (3 + 5 + 5), its deployment's name, reason ("canceled by
// local: " and the comment, 40,019), comment and user (3 + 40,019 + 40,000 + 5), and its name
// and reason again (3 + 40,019): 120,318 bytes, 34 to a page (4,194,304 / 120,318 = 34.9).
func TestScenarioPagesCutByBytes(t *testing.T) {
	c := newDeployClient(t, sqliteStore(t))
	comment := quote(strings.Repeat("𝔸", 10_000))
	for i := range 60 {
		name := fmt.Sprintf("s%02d", i)
		c.post("/api/scenarios", rawBody("name", quote(name), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
		c.post("/api/scenarios/"+name+"/deploy", rawBody("comment", comment)).ok(t, http.StatusOK, nil)
		c.post("/api/scenarios/"+name+"/cancel", rawBody("comment", comment)).ok(t, http.StatusOK, nil)
	}
	var list struct {
		Scenarios []struct{ Name string }
		Next      string
	}
	c.get("/api/scenarios?limit=1000").ok(t, http.StatusOK, &list)
	if n := len(list.Scenarios); n != 34 || list.Scenarios[n-1].Name != "s33" || list.Next != "s33" {
		t.Errorf("scenarios: %d listed, next %q; want 34, s00 to s33, next s33", n, list.Next)
	}
	var statuses api.DeploymentStatusList
	c.get("/api/deployments?limit=1000").ok(t, http.StatusOK, &statuses)
	if n := len(statuses.Scenarios); n != 34 || statuses.Next != "s33" {
		t.Errorf("statuses: %d listed, next %q; want 34, next s33", n, statuses.Next)
	}
	statuses = api.DeploymentStatusList{}
	c.get("/api/deployments?limit=1000&after=s33").ok(t, http.StatusOK, &statuses)
	if n := len(statuses.Scenarios); n != 26 || statuses.Scenarios[0].Scenario != "s34" || statuses.Next != "" {
		t.Errorf("statuses after s33: %d listed, next %q; want 26 from s34, no next", n, statuses.Next)
	}
}
