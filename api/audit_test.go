package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/store"
)

func TestAuditOnSQLite(t *testing.T) {
	t.Parallel()
	testAuditLog(t, sqliteStore(t))
}

func TestAuditOnPostgres(t *testing.T) {
	t.Parallel()
	testAuditLog(t, postgresStore(t))
}

// testAuditLog deploys with API tokens of three roles and reads the log as admin.
func testAuditLog(t *testing.T, st store.Store) {
	_, token, as := authedDeployClient(t, st)
	deployer, viewer, admin := token("ci", "deployer"), token("dashboards", "viewer"), token("root", "admin")

	as(deployer, http.MethodPost, "/api/scenarios", rawBody("name", quote("fraud"), "graph", countGraph("10s"))).ok(t, http.StatusCreated, nil)
	as(deployer, http.MethodPost, "/api/scenarios/fraud/deploy", rawBody("comment", quote("go"))).ok(t, http.StatusOK, nil)
	as(viewer, http.MethodPost, "/api/scenarios/fraud/cancel", nil).problem(t, http.StatusForbidden, api.CodeForbidden)
	as(deployer, http.MethodPost, "/api/scenarios/nope/deploy", nil).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	as(viewer, http.MethodGet, "/api/scenarios/fraud/sinks/out/results", nil).ok(t, http.StatusOK, nil)
	// A HEAD runs the GET handler: audited as the GET.
	if r := as(viewer, http.MethodHead, "/api/scenarios/fraud/sinks/out/results", nil); r.Status != http.StatusOK {
		t.Errorf("HEAD of the results: %d", r.Status)
	}
	// Reads in a loop are folded into the entry of the first, within a minute of it.
	for range 48 {
		as(viewer, http.MethodGet, "/api/scenarios/fraud/sinks/out/results", nil).ok(t, http.StatusOK, nil)
	}
	// Reads of scenarios that do not exist are recorded without the name: one entry for them all.
	for i := range 30 {
		as(viewer, http.MethodGet, fmt.Sprintf("/api/scenarios/probe-%d/sinks/out/results", i), nil).problem(t, http.StatusNotFound, api.CodeScenarioNotFound)
	}
	as(deployer, http.MethodPost, "/api/scenarios/fraud/cancel", nil).ok(t, http.StatusOK, nil)
	// Reads that are not audited leave no entry.
	as(viewer, http.MethodGet, "/api/scenarios/fraud", nil).ok(t, http.StatusOK, nil)

	as(deployer, http.MethodGet, "/api/audit", nil).problem(t, http.StatusForbidden, api.CodeForbidden)
	if r := as(deployer, http.MethodHead, "/api/audit", nil); r.Status != http.StatusForbidden {
		t.Errorf("HEAD of the audit log by a deployer: %d", r.Status)
	}
	as(admin, http.MethodPost, "/api/tokens", rawBody("name", quote("new"), "role", quote("viewer"))).ok(t, http.StatusCreated, nil)
	as(admin, http.MethodPost, "/api/tokens", rawBody("name", quote("later"), "role", quote("editor"), "expiresIn", quote("1h"))).ok(t, http.StatusCreated, nil)
	as(admin, http.MethodDelete, "/api/tokens/4", nil).ok(t, http.StatusOK, nil)
	as(admin, http.MethodDelete, "/api/tokens/99", nil).problem(t, http.StatusNotFound, api.CodeTokenNotFound)
	var page api.AuditPage
	as(admin, http.MethodGet, "/api/audit?limit=100", nil).ok(t, http.StatusOK, &page)
	var got []string
	for _, e := range page.Entries {
		line := fmt.Sprintf("%s %s %s %s v%d %s %s +%d", e.Subject, e.Name, e.Address, e.Action, e.Version, e.Scenario, e.Outcome, e.Repeats)
		if e.Target != "" {
			line += " | " + e.Target
		}
		if e.Action == "token.create" && e.Target != "" && strings.Contains(e.Target, "later") {
			// Its expiry is an hour after its creation (to the second).
			at := line[strings.Index(line, "expires ")+len("expires ") : len(line)-1]
			if exp, err := time.Parse(time.RFC3339, at); err != nil || exp.Sub(e.Time).Round(time.Minute) != time.Hour {
				t.Errorf("the token made with expiresIn 1h at %v expires %q", e.Time, at)
			}
			line = line[:strings.Index(line, "expires ")] + "expires ...)"
		}
		got = append(got, line)
		if e.RequestID == "" || e.Time.IsZero() {
			t.Errorf("entry without request id or time: %+v", e)
		}
		if (e.Repeats > 0) != (e.LastTime != nil) || e.LastTime != nil && e.LastTime.Before(e.Time) {
			t.Errorf("entry with %d repeats, the last at %v: %+v", e.Repeats, e.LastTime, e)
		}
	}
	want := []string{
		"token:1 ci 127.0.0.1 scenario.create v1 fraud ok +0",
		"token:1 ci 127.0.0.1 deploy v1 fraud ok +0",
		"token:2 dashboards 127.0.0.1 cancel v0 fraud forbidden +0",
		"token:1 ci 127.0.0.1 deploy v0 nope scenario-not-found +0",
		"token:2 dashboards 127.0.0.1 results.read v0 fraud ok +49", // GET, HEAD and 48 GETs
		"token:2 dashboards 127.0.0.1 results.read v0  scenario-not-found +29",
		"token:1 ci 127.0.0.1 cancel v1 fraud ok +0",
		"token:1 ci 127.0.0.1 audit.read v0  forbidden +1", // GET and HEAD
		// The tokens acted on, with their ids (1 to 3 were made for the test).
		`token:3 root 127.0.0.1 token.create v0  ok +0 | token 4 "new" (viewer, no expiry)`,
		`token:3 root 127.0.0.1 token.create v0  ok +0 | token 5 "later" (editor, expires ...)`,
		`token:3 root 127.0.0.1 token.revoke v0  ok +0 | token 4 "new" (viewer, no expiry)`,
		`token:3 root 127.0.0.1 token.revoke v0  token-not-found +0 | token 99`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if page.Next != 0 {
		t.Errorf("next %d on the only page", page.Next)
	}

	// Filters and paging, through the API.
	as(admin, http.MethodGet, "/api/audit?action=deploy&identity=ci&outcome=ok", nil).ok(t, http.StatusOK, &page)
	if len(page.Entries) != 1 || page.Entries[0].Scenario != "fraud" || page.Entries[0].Version != 1 {
		t.Errorf("deploys by ci: %s", mustJSON(page))
	}
	as(admin, http.MethodGet, "/api/audit?limit=2", nil).ok(t, http.StatusOK, &page)
	if len(page.Entries) != 2 || page.Next != page.Entries[1].ID {
		t.Fatalf("first page of 2: %s", mustJSON(page))
	}
	as(admin, http.MethodGet, fmt.Sprintf("/api/audit?limit=2&after=%d", page.Next), nil).ok(t, http.StatusOK, &page)
	if len(page.Entries) != 2 || page.Entries[0].Action != "cancel" || page.Entries[1].Scenario != "nope" {
		t.Errorf("second page of 2: %s", mustJSON(page))
	}
	as(admin, http.MethodGet, "/api/audit?limit=1001", nil).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	as(admin, http.MethodGet, "/api/audit?from=yesterday", nil).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
}

// TestAuditFoldsAnIPv6Block: reads that fold are recorded with an IPv6 client's /64 (a client
// has 2^64 addresses to send each read from, each an entry of its own before), an IPv4 client
// and every other action with the address itself.
func TestAuditFoldsAnIPv6Block(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	c := newClient(t, st, func(cfg *api.Config) { cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	for _, addr := range []string{"2001:db8::1", "2001:db8::2:3", "2001:db8:0:1::1", "203.0.113.7", "203.0.113.8"} {
		c.send(request{Method: http.MethodGet, Path: "/api/audit", Header: from(addr)}).ok(t, http.StatusOK, nil)
	}
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("x"), "graph", tinyGraph),
		Header: from("2001:db8::9")}).ok(t, http.StatusCreated, nil)
	list, err := st.ListAudit(t.Context(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, fmt.Sprintf("%s %s +%d", e.Action, e.Address, e.Repeats))
	}
	want := []string{"audit.read 2001:db8::/64 +1", "audit.read 2001:db8:0:1::/64 +0", "audit.read 203.0.113.7 +0",
		"audit.read 203.0.113.8 +0", "scenario.create 2001:db8::9 +0"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAuditClientAddress: X-Forwarded-For counts only from a trusted proxy, and then the
// rightmost address that is not a trusted proxy is the client.
func TestAuditClientAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		trusted   []netip.Prefix
		forwarded string
		want      string
	}{
		{"no trusted proxies: ignored", nil, "203.0.113.7", "127.0.0.1"},
		{"trusted loopback proxy", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "203.0.113.7", "203.0.113.7"},
		{"spoofed left entry", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")},
			"1.2.3.4, 203.0.113.7, 10.1.1.1", "203.0.113.7"},
		{"garbage hop", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "203.0.113.7, not-an-ip", "127.0.0.1"},
		{"proxy not trusted", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "203.0.113.7", "127.0.0.1"},
		// Hops with a port or in brackets, as some proxies write them (they ended the chain:
		// every client had the proxy's address).
		{"hop with a port", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "203.0.113.7:5555", "203.0.113.7"},
		{"IPv6 hop with a port", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "[2001:db8::5]:443", "2001:db8::5"},
		{"IPv6 hop in brackets", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "[2001:db8::5]", "2001:db8::5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := sqliteStore(t)
			c := newClient(t, st, func(cfg *api.Config) { cfg.TrustedProxies = tc.trusted })
			c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("x"), "graph", tinyGraph),
				Header: map[string]string{"X-Forwarded-For": tc.forwarded}}).ok(t, http.StatusCreated, nil)
			list, err := st.ListAudit(t.Context(), store.AuditFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Address != tc.want || list[0].Name != "local" || list[0].Action != "scenario.create" {
				t.Errorf("entries %+v; want one scenario.create by local from %s", list, tc.want)
			}
		})
	}
}

// From the hostile review: an escaped slash does not make a request look like another route to
// the audit log. POST /api/scenarios/x%2Fdeploy is one path segment for the router (405), and
// was recorded as a failed deploy of "x"; it is now recorded as nothing, like any request to no
// audited route.
func TestAuditReadsThePathAsTheRouterDoes(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st))
	viewer := tokenFor(t, st, "v", auth.Viewer, time.Time{})
	admin := tokenFor(t, st, "a", auth.Admin, time.Time{})
	req, err := http.NewRequest(http.MethodPost, c.base+"/api/scenarios/x%2Fdeploy", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+viewer)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("POST /api/scenarios/x%%2Fdeploy: %d", resp.StatusCode)
	}
	var page api.AuditPage
	c.send(request{Method: "GET", Path: "/api/audit", Header: map[string]string{"Authorization": "Bearer " + admin}}).ok(t, http.StatusOK, &page)
	for _, e := range page.Entries {
		if e.Action == "deploy" {
			t.Errorf("the escaped path was recorded as a deploy: %+v", e)
		}
	}
}

// TestAuditOwnRequestIDNoAnonymous: the audit log's request id is the server's own, not the
// client's X-Request-Id, and requests without credentials (401) leave no entry.
func TestAuditOwnRequestIDNoAnonymous(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	admin := "Bearer " + tokenFor(t, st, "root", auth.Admin, time.Time{})
	c := newClient(t, st, withTokens(st))
	for range 3 {
		c.send(request{Method: http.MethodPost, Path: "/api/scenarios/fraud/deploy"}).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	}
	r := c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("fraud"), "graph", countGraph("10s")),
		Header: map[string]string{"Authorization": admin, "X-Request-Id": "forged-1"}})
	r.ok(t, http.StatusCreated, nil)
	var page api.AuditPage
	c.send(request{Method: http.MethodGet, Path: "/api/audit", Header: map[string]string{"Authorization": admin}}).ok(t, http.StatusOK, &page)
	if len(page.Entries) != 1 || page.Entries[0].Action != "scenario.create" || page.Entries[0].Name != "root" {
		t.Fatalf("audit log %s; want only root's scenario.create", mustJSON(page))
	}
	if id := page.Entries[0].RequestID; id == "" || id == "forged-1" {
		t.Errorf("request id %q; want the server's own", id)
	}
}

// TestAuditRefusalsBounded: an identity refused by role again and again fills the audit log
// with a burst of 30 entries, not one per request.
func TestAuditRefusalsBounded(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	viewer := "Bearer " + tokenFor(t, st, "watcher", auth.Viewer, time.Time{})
	admin := "Bearer " + tokenFor(t, st, "root", auth.Admin, time.Time{})
	c := newClient(t, st, withTokens(st))
	start := time.Now()
	for range 200 {
		c.send(request{Method: http.MethodPost, Path: "/api/scenarios/x/archive", Header: map[string]string{"Authorization": viewer}}).
			problem(t, http.StatusForbidden, api.CodeForbidden)
	}
	elapsed := time.Since(start)
	var page api.AuditPage
	c.send(request{Method: http.MethodGet, Path: "/api/audit?identity=watcher&limit=500", Header: map[string]string{"Authorization": admin}}).ok(t, http.StatusOK, &page)
	// At most the burst of 30 plus one a second of the run (and one for a partly refilled
	// token); at least the burst.
	most := min(30+int(elapsed.Seconds())+1, 200)
	if n := len(page.Entries); n < 30 || n > most {
		t.Errorf("%d refusals stored of 200 sent in %v; want 30 to %d", n, elapsed, most)
	}

	// Failed requests of an action that is allowed (an editor's invalid scenarios) share the
	// bound (round 26); a success after them is stored.
	editor := "Bearer " + tokenFor(t, st, "maker", auth.Editor, time.Time{})
	start = time.Now()
	for range 200 {
		c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote(" bad"), "graph", tinyGraph),
			Header: map[string]string{"Authorization": editor}}).problem(t, http.StatusBadRequest, api.CodeInvalidName)
	}
	elapsed = time.Since(start)
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("good"), "graph", tinyGraph),
		Header: map[string]string{"Authorization": editor}}).ok(t, http.StatusCreated, nil)
	c.send(request{Method: http.MethodGet, Path: "/api/audit?identity=maker&limit=500", Header: map[string]string{"Authorization": admin}}).ok(t, http.StatusOK, &page)
	most = min(30+int(elapsed.Seconds())+1, 200)
	if n := len(page.Entries) - 1; n < 30 || n > most {
		t.Errorf("%d failed creates stored of 200 sent in %v; want 30 to %d", n, elapsed, most)
	}
	if last := page.Entries[len(page.Entries)-1]; last.Outcome != "ok" || last.Scenario != "good" {
		t.Errorf("the last entry %+v; want the successful create of good", last)
	}
}

// authedDeployClient starts a runtime and the API on st with API tokens, configured further
// by configure; bearer(name, role) stores a token and returns its Authorization header value,
// and as sends a request with one.
func authedDeployClient(t *testing.T, st store.Store, configure ...func(*api.Config)) (c *client, bearer func(name, role string) string,
	as func(who, method, path string, body any) *response) {
	t.Helper()
	bearer = func(name, role string) string {
		secret, hash := auth.NewTokenSecret()
		if _, err := st.CreateToken(t.Context(), store.NewToken{Name: name, Role: role, SecretHash: hash}); err != nil {
			t.Fatal(err)
		}
		return "Bearer " + secret
	}
	reg := prometheus.NewRegistry()
	rt, err := deploy.New(deploy.Config{Store: st, Logger: testLogger(t), CheckpointInterval: 50 * time.Millisecond,
		FileSinkDir: t.TempDir(), Metrics: reg, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Shutdown(sctx); err != nil {
			t.Errorf("runtime shutdown: %v", err)
		}
	})
	c = newClient(t, st, append([]func(*api.Config){func(cfg *api.Config) {
		cfg.Runtime, cfg.Metrics = rt, reg
		cfg.Authenticator = &auth.Authenticator{Tokens: st}
	}}, configure...)...)
	as = func(who, method, path string, body any) *response {
		return c.send(request{Method: method, Path: path, Body: body, Header: map[string]string{"Authorization": who}})
	}
	return c, bearer, as
}

// TestAuditEscapesHiddenCharacters: a refused request's scenario is stored as the client sent
// it, its control and invisible characters written \uXXXX (a newline, an escape sequence and
// a direction override, which showed "prod-fraud \u202edeifitrec" as "prod-fraud certified").
func TestAuditEscapesHiddenCharacters(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st))
	admin := "Bearer " + tokenFor(t, st, "a", auth.Admin, time.Time{})
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios/%0Ax%1B%5B2K%E2%80%AEevil/cancel", Header: map[string]string{"Authorization": admin}})
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("prod-fraud \u202edeifitrec\u202c"), "graph", countGraph("10s")),
		Header: map[string]string{"Authorization": admin}})
	// Bytes that are not UTF-8 are written \xHH: PostgreSQL refused the entry, and the
	// refusal went unrecorded.
	viewer := "Bearer " + tokenFor(t, st, "v", auth.Viewer, time.Time{})
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios/card%FFtotals/cancel", Header: map[string]string{"Authorization": viewer}})
	var page api.AuditPage
	c.send(request{Method: http.MethodGet, Path: "/api/audit", Header: map[string]string{"Authorization": admin}}).ok(t, http.StatusOK, &page)
	var got []string
	for _, e := range page.Entries {
		if e.Scenario != "" {
			got = append(got, e.Scenario)
		}
	}
	want := []string{`\u000Ax\u001B[2K\u202Eevil`, `card\xFFtotals`, `prod-fraud \u202Edeifitrec\u202C`}
	if slices.Sort(got); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("scenarios %q; want %q", got, want)
	}
}
