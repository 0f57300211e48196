package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
)

func TestRouteRolesOnSQLite(t *testing.T)   { testRouteRoles(t, sqliteStore) }
func TestRouteRolesOnPostgres(t *testing.T) { testRouteRoles(t, postgresStore) }

// tokenFor stores an API token of the role, named after it, and returns its secret.
func tokenFor(t *testing.T, st store.Store, name string, role auth.Role, expires time.Time) string {
	t.Helper()
	secret, hash := auth.NewTokenSecret()
	if _, err := st.CreateToken(context.Background(), store.NewToken{Name: name, Role: string(role), SecretHash: hash, ExpiresAt: expires}); err != nil {
		t.Fatal(err)
	}
	return secret
}

// withTokens configures the API with API tokens on its store.
func withTokens(st store.Store) func(*api.Config) {
	return func(cfg *api.Config) { cfg.Authenticator = &auth.Authenticator{Tokens: st} }
}

// testRouteRoles walks every route of the router and calls it without credentials and with a
// token of each role: a route open to the role must not answer 401 or 403; below its role it
// must answer 403 forbidden, and without credentials 401 unauthenticated with
// WWW-Authenticate. A route missing from the table fails the test.
func testRouteRoles(t *testing.T, newStore newStoreFunc) {
	st := newStore(t)
	c := newClient(t, st, withTokens(st))
	secrets := map[auth.Role]string{}
	for _, r := range auth.Roles {
		secrets[r] = tokenFor(t, st, "the-"+string(r), r, time.Time{})
	}
	h, err := api.New(api.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	type route struct{ method, pattern string }
	var routes []route
	err = chi.Walk(h.Routes(), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, route{method, pattern})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 40 {
		t.Fatalf("walked %d routes; the router has at least 40", len(routes))
	}
	// Parameters name things that do not exist: allowed calls answer 4xx or 503 without
	// changing anything, and the streams end at once (404).
	params := strings.NewReplacer("{name}", "nothing-here", "{sinkId}", "s", "{sourceId}", "s", "{version}", "1", "{id}", "999")
	for _, rt := range routes {
		want, ok := api.RouteRole(rt.method, rt.pattern)
		if !ok {
			t.Errorf("%s %s has no entry in the route-by-role table (api/routes_roles.go)", rt.method, rt.pattern)
			continue
		}
		path := params.Replace(rt.pattern)
		var body any
		if rt.method != http.MethodGet && rt.method != http.MethodDelete {
			body = "{}"
		}
		callers := append([]auth.Role{""}, auth.Roles...)
		for _, caller := range callers {
			req := request{Method: rt.method, Path: path, Body: body}
			if caller != "" {
				req.Header = map[string]string{"Authorization": "Bearer " + secrets[caller]}
			}
			resp := c.send(req)
			name := rt.method + " " + rt.pattern + " as " + string(caller)
			switch {
			case want == api.Public || (caller != "" && caller.Includes(want)):
				if resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden {
					t.Errorf("%s: %d %s; want allowed", name, resp.Status, resp.Body)
				}
			case caller == "":
				p := resp.problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
				if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="scenario-server"` {
					t.Errorf("%s: WWW-Authenticate %q", name, got)
				}
				_ = p
			default:
				p := resp.problem(t, http.StatusForbidden, api.CodeForbidden)
				if !strings.Contains(p.Detail, "needs the "+string(want)+" role") {
					t.Errorf("%s: detail %q does not name the role %s", name, p.Detail, want)
				}
			}
		}
	}
}

// Paths that chi routes by their escaped form are checked as chi routes them: a name with a
// slash is one segment, and the deploy route still needs its role.
func TestRouteRolesEscapedPaths(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st))
	viewer := tokenFor(t, st, "v", auth.Viewer, time.Time{})
	for _, path := range []string{"/api/scenarios/a%2Fb/deploy", "/api/scenarios/a%2F..%2Fb/deploy", "/api/scenarios/%61/deploy"} {
		c.send(request{Method: "POST", Path: path, Body: "{}"}).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
		c.send(request{Method: "POST", Path: path, Body: "{}", Header: map[string]string{"Authorization": "Bearer " + viewer}}).
			problem(t, http.StatusForbidden, api.CodeForbidden)
	}
}

// TestRouteRolesHandWorked pins a few entries of the table by hand, so that a change of the
// table itself shows here.
func TestRouteRolesHandWorked(t *testing.T) {
	for _, tc := range []struct {
		method, pattern string
		want            auth.Role
	}{
		{"GET", "/healthz", api.Public},
		{"GET", "/", api.Public},
		{"GET", "/api/openapi.json", api.Public},
		{"GET", "/metrics", auth.Viewer},
		{"GET", "/api/scenarios/{name}/sinks/{sinkId}/results", auth.Viewer},
		{"POST", "/api/scenarios/{name}/versions", auth.Editor},
		{"POST", "/api/scenarios/{name}/archive", auth.Editor},
		{"POST", "/api/scenarios/{name}/deploy", auth.Deployer},
		{"POST", "/api/scenarios/{name}/cancel", auth.Deployer},
		{"POST", "/api/scenarios/{name}/sources/{sourceId}/events", auth.Deployer},
		{"POST", "/api/tokens", auth.Admin},
		{"DELETE", "/api/tokens/{id}", auth.Admin},
	} {
		if got, ok := api.RouteRole(tc.method, tc.pattern); !ok || got != tc.want {
			t.Errorf("RouteRole(%s %s) = %q, %v; want %q", tc.method, tc.pattern, got, ok, tc.want)
		}
	}
}

// Without authentication configured every request is "local" with every role, and the
// X-Scenario-User header a client sends is ignored.
func TestNoAuthenticationIsLocalAdmin(t *testing.T) {
	c := newClient(t, sqliteStore(t))
	var v api.Version
	c.send(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", quote("a"), "graph", tinyGraph),
		Header: map[string]string{"X-Scenario-User": "mallory"}}).ok(t, http.StatusCreated, &v)
	if v.Author != "local" {
		t.Errorf("author %q; want local", v.Author)
	}
	c.get("/api/tokens").ok(t, http.StatusOK, nil)
}

// Tokens through real HTTP: an admin creates them; a viewer cannot deploy and a deployer can;
// expired, revoked and unknown tokens are 401; the names are the history's authors.
func TestTokensOnSQLite(t *testing.T)   { testTokens(t, sqliteStore) }
func TestTokensOnPostgres(t *testing.T) { testTokens(t, postgresStore) }

func testTokens(t *testing.T, newStore newStoreFunc) {
	st := newStore(t)
	c := newDeployClient(t, st)
	c = newClient(t, st, append(c.configure, withTokens(st))...)
	admin := tokenFor(t, st, "root", auth.Admin, time.Time{})
	as := func(secret string, r request) *response {
		if r.Header == nil {
			r.Header = map[string]string{}
		}
		r.Header["Authorization"] = "Bearer " + secret
		return c.send(r)
	}
	create := func(name, role, expiresIn string) api.CreatedAPIToken {
		t.Helper()
		var out api.CreatedAPIToken
		as(admin, request{Method: "POST", Path: "/api/tokens", Body: map[string]string{"name": name, "role": role, "expiresIn": expiresIn}}).
			ok(t, http.StatusCreated, &out)
		if !strings.HasPrefix(out.Secret, "sst_") || len(out.Secret) != 47 || out.Token.Name != name || out.Token.Role != role {
			t.Fatalf("created %+v", out)
		}
		return out
	}
	viewer := create("watcher", "viewer", "")
	deployer := create("ci", "deployer", "720h")
	if viewer.Token.ExpiresAt != nil || deployer.Token.ExpiresAt == nil ||
		deployer.Token.ExpiresAt.Sub(deployer.Token.CreatedAt).Round(time.Minute) != 720*time.Hour {
		t.Errorf("expiry: viewer %v, deployer %v from %v", viewer.Token.ExpiresAt, deployer.Token.ExpiresAt, deployer.Token.CreatedAt)
	}

	var v api.Version
	as(deployer.Secret, request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", quote("fraud"), "graph", countGraph("10s")),
		Header: map[string]string{"X-Scenario-User": "mallory"}}).ok(t, http.StatusCreated, &v)
	if v.Author != "ci" {
		t.Errorf("author %q; want ci (the token's name, not the header)", v.Author)
	}
	p := as(viewer.Secret, request{Method: "POST", Path: "/api/scenarios/fraud/deploy", Body: "{}"}).problem(t, http.StatusForbidden, api.CodeForbidden)
	if p.Detail != "POST /api/scenarios/{name}/deploy needs the deployer role; watcher has viewer" {
		t.Errorf("detail %q", p.Detail)
	}
	var d api.Deployment
	as(deployer.Secret, request{Method: "POST", Path: "/api/scenarios/fraud/deploy", Body: "{}"}).ok(t, http.StatusOK, &d)
	if d.User != "ci" {
		t.Errorf("deployed by %q; want ci", d.User)
	}
	as(viewer.Secret, request{Method: "GET", Path: "/api/scenarios/fraud"}).ok(t, http.StatusOK, nil)
	as(deployer.Secret, request{Method: "GET", Path: "/api/tokens"}).problem(t, http.StatusForbidden, api.CodeForbidden)

	// Revoked: 401 with error="invalid_token", and listed as revoked.
	var revoked api.APIToken
	as(admin, request{Method: "DELETE", Path: "/api/tokens/" + strconv.FormatInt(viewer.Token.ID, 10)}).ok(t, http.StatusOK, &revoked)
	if revoked.RevokedAt == nil {
		t.Errorf("revoked %+v", revoked)
	}
	r := as(viewer.Secret, request{Method: "GET", Path: "/api/scenarios/fraud"})
	r.problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	if got := r.Header.Get("WWW-Authenticate"); got != `Bearer realm="scenario-server", error="invalid_token"` {
		t.Errorf("WWW-Authenticate %q", got)
	}
	// /api/me answers every caller 200, and tells the revoked token from no token.
	var me api.Me
	if as(viewer.Secret, request{Method: "GET", Path: "/api/me"}).ok(t, http.StatusOK, &me); me.SignedIn || !me.Refused {
		t.Errorf("me with a revoked token %+v, want signedIn false, refused true", me)
	}
	me = api.Me{}
	if c.get("/api/me").ok(t, http.StatusOK, &me); me.SignedIn || me.Refused {
		t.Errorf("me without credentials %+v, want signedIn false, refused false", me)
	}
	as(admin, request{Method: "DELETE", Path: "/api/tokens/999"}).problem(t, http.StatusNotFound, api.CodeTokenNotFound)

	// Expired: a token whose expiry has passed.
	expired := tokenFor(t, st, "old", auth.Admin, time.Now().Add(-time.Second))
	as(expired, request{Method: "GET", Path: "/api/scenarios"}).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	// Unknown, and not Bearer.
	as("sst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", request{Method: "GET", Path: "/api/scenarios"}).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	c.send(request{Method: "GET", Path: "/api/scenarios", Header: map[string]string{"Authorization": "Basic YTpi"}}).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	// A token without the Bearer scheme: the answer says what is missing.
	if p := c.send(request{Method: "GET", Path: "/api/scenarios", Header: map[string]string{"Authorization": admin}}).
		problem(t, http.StatusUnauthorized, api.CodeUnauthenticated); p.Detail != "the Authorization header needs the Bearer scheme: Authorization: Bearer <token>" {
		t.Errorf("token without Bearer: %q", p.Detail)
	}
	// A JWT-looking bearer without OIDC configured.
	as("eyJhbGciOiJSUzI1NiJ9.e30.c2ln", request{Method: "GET", Path: "/api/scenarios"}).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)

	var list struct{ Tokens []api.APIToken }
	as(admin, request{Method: "GET", Path: "/api/tokens"}).ok(t, http.StatusOK, &list)
	var names []string
	for _, tk := range list.Tokens {
		names = append(names, tk.Name)
	}
	if got := strings.Join(names, ","); got != "root,watcher,ci,old" {
		t.Errorf("tokens %s; want root,watcher,ci,old", got)
	}
	raw, _ := json.Marshal(list)
	if strings.Contains(string(raw), "sst_") {
		t.Errorf("the list shows a secret: %s", raw)
	}
	as(admin, request{Method: "POST", Path: "/api/tokens", Body: map[string]string{"name": "x", "role": "root"}}).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	as(admin, request{Method: "POST", Path: "/api/tokens", Body: map[string]string{"name": "x", "role": "viewer", "expiresIn": "-1h"}}).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	as(admin, request{Method: "POST", Path: "/api/tokens", Body: map[string]string{"name": "x", "role": "viewer", "expiresIn": "1ns"}}).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
}

// A token that cannot be looked up because the store is down is 503 unavailable, not 401: the
// client may retry. An Authorization header over 16 KiB is refused unread.
func TestAuthenticationFailures(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st))
	secret := tokenFor(t, st, "v", auth.Viewer, time.Time{})
	c.send(request{Method: "GET", Path: "/api/scenarios", Header: map[string]string{"Authorization": "Bearer " + strings.Repeat("a", 17<<10)}}).
		problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c.send(request{Method: "GET", Path: "/api/scenarios", Header: map[string]string{"Authorization": "Bearer " + secret}}).
		problem(t, http.StatusServiceUnavailable, api.CodeUnavailable)
}

// From the hostile review: two Authorization headers (an admin's, then a viewer's) are refused
// rather than the first one trusted, and a token name with a newline or an escape sequence
// (which could forge lines in `token list` and the audit log) is refused.
func TestAuthorizationTwiceAndTokenNames(t *testing.T) {
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st))
	admin := tokenFor(t, st, "a", auth.Admin, time.Time{})
	viewer := tokenFor(t, st, "v", auth.Viewer, time.Time{})
	req, err := http.NewRequest(http.MethodGet, c.base+"/api/tokens", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+admin)
	req.Header.Add("Authorization", "Bearer "+viewer)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("two Authorization headers: %d, want 401", resp.StatusCode)
	}
	for _, name := range []string{"evil\nlevel=ERROR msg=forged", "red \u001b[31m", "x\u202egnp.exe", "zero\u200bwidth", "bot\u3164", "\u2800", "", strings.Repeat("n", 101),
		// names that read as the server's own identities (a hostile round named tokens so)
		"local", "Local ", "cli:root", "token:1", "TOKEN:7", "root (command line)", "Scenario-Server"} {
		c.send(request{Method: "POST", Path: "/api/tokens", Body: map[string]any{"name": name, "role": "viewer"},
			Header: map[string]string{"Authorization": "Bearer " + admin}}).problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	}
	c.send(request{Method: "POST", Path: "/api/tokens", Body: map[string]any{"name": "ci runner ☕", "role": "viewer"},
		Header: map[string]string{"Authorization": "Bearer " + admin}}).ok(t, http.StatusCreated, nil)
}
