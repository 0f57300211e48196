package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
)

// TestTokenSignIn: on a server with API tokens only, the designer signs in with a token.
// Without credentials /api/me says tokenSignIn; POST /auth/token with an editor's token
// answers 204 and the token cookie (HttpOnly, SameSite=Strict, 8 hours), with which requests
// without an Authorization header are the token's identity (method token-cookie): they may
// save a scenario and may not deploy (editor). A wrong token, a malformed body, or a
// token revoked since are refused (401; with the revoked one's cookie, /api/me says
// refused), and so are two token cookies at once; POST /auth/logout clears the cookie (and
// the origin's, Clear-Site-Data); wrong tokens are rate-limited, the right one never. Without API tokens, POST /auth/token is 404
// sign-in-not-configured and /api/me says no tokenSignIn.
func TestTokenSignIn(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st))
	secret := tokenFor(t, st, "anna", auth.Editor, time.Time{})

	var me api.Me
	c.send(request{Method: http.MethodGet, Path: "/api/me"}).ok(t, http.StatusOK, &me)
	if me.SignedIn || !me.TokenSignIn || me.SignIn {
		t.Fatalf("without credentials: %+v; want not signed in, tokenSignIn, no OIDC sign-in", me)
	}
	signIn := func(body string) *http.Response {
		t.Helper()
		resp, err := c.http.Post(c.base+"/auth/token", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, bad := range []struct {
		body string
		want int
	}{
		{`{"token": "sst_wrong"}`, http.StatusUnauthorized},
		{`{"token": "` + secret + `x"}`, http.StatusUnauthorized},
		{`{"token": 1}`, http.StatusBadRequest},
		{`{}`, http.StatusBadRequest},
		{`{"token": "` + strings.Repeat("s", 2000) + `"}`, http.StatusBadRequest},
	} {
		if resp := signIn(bad.body); resp.StatusCode != bad.want || len(resp.Cookies()) != 0 {
			t.Errorf("POST /auth/token %.40s: %d, cookies %v; want %d and none", bad.body, resp.StatusCode, resp.Cookies(), bad.want)
		}
	}
	resp := signIn(`{"token": "` + secret + `"}`)
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 {
		t.Fatalf("POST /auth/token: %d, cookies %v; want 204 and one cookie", resp.StatusCode, resp.Cookies())
	}
	cookie := resp.Cookies()[0]
	if cookie.Name != auth.TokenCookie || cookie.Value != secret || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode ||
		cookie.MaxAge != 8*3600 || cookie.Path != "/" || cookie.Secure {
		t.Errorf("cookie %+v; want %s, the secret, HttpOnly, SameSite=Strict, Max-Age 28800, Path /, not Secure over plain HTTP", cookie, auth.TokenCookie)
	}
	withCookie := func(r request, ck *http.Cookie) *response {
		if r.Header == nil {
			r.Header = map[string]string{}
		}
		r.Header["Cookie"] = ck.Name + "=" + ck.Value
		return c.send(r)
	}
	withCookie(request{Method: http.MethodGet, Path: "/api/me"}, cookie).ok(t, http.StatusOK, &me)
	if !me.SignedIn || me.Name != "anna" || me.Role != auth.Editor || me.Method != auth.MethodTokenCookie {
		t.Errorf("/api/me with the cookie: %+v; want anna, editor, token-cookie", me)
	}
	withCookie(request{Method: http.MethodPost, Path: "/api/scenarios", Body: rawBody("name", `"signed in"`, "graph", tinyGraph)}, cookie).
		ok(t, http.StatusCreated, nil)
	withCookie(request{Method: http.MethodPost, Path: "/api/scenarios/signed%20in/deploy", Body: `{}`}, cookie).
		problem(t, http.StatusForbidden, api.CodeForbidden)

	// Two cookies of the name (another page of the host set one with its own path): neither
	// counts.
	other := tokenFor(t, st, "mallory", auth.Viewer, time.Time{})
	withCookie(request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{}}, &http.Cookie{Name: auth.TokenCookie, Value: other + "; " + auth.TokenCookie + "=" + secret}).
		ok(t, http.StatusOK, &me)
	if me.SignedIn || !me.Refused {
		t.Errorf("/api/me with two token cookies: %+v; want not signed in, refused", me)
	}
	// Ours after theirs, too (one of a parent domain set later comes after), and of the
	// __Host- name; an empty one does not count.
	for _, cookies := range []string{
		auth.TokenCookie + "=" + secret + "; " + auth.TokenCookie + "=" + other,
		auth.SecureTokenCookie + "=" + secret + "; " + auth.TokenCookie + "=" + other,
	} {
		c.send(request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"Cookie": cookies}}).ok(t, http.StatusOK, &me)
		if me.SignedIn || !me.Refused {
			t.Errorf("/api/me with cookies %.60s...: %+v; want refused", cookies, me)
		}
	}
	c.send(request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"Cookie": auth.TokenCookie + "=; " + auth.TokenCookie + "=" + secret}}).ok(t, http.StatusOK, &me)
	if !me.SignedIn || me.Name != "anna" {
		t.Errorf("/api/me with an empty token cookie and anna's: %+v; want anna", me)
	}

	// Signing out clears the cookie.
	out, err := http.NewRequest(http.MethodPost, c.base+"/auth/logout", nil)
	if err != nil {
		t.Fatal(err)
	}
	out.AddCookie(cookie)
	resp, err = c.http.Do(out)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cleared := resp.Cookies(); resp.StatusCode != http.StatusNoContent || len(cleared) != 2 || cleared[0].Name != auth.TokenCookie || cleared[0].MaxAge >= 0 ||
		cleared[1].Name != auth.SecureTokenCookie || cleared[1].MaxAge >= 0 {
		t.Errorf("POST /auth/logout: %d, cookies %v; want 204 and the token cookies of both names cleared", resp.StatusCode, cleared)
	}

	// Revoked, the token's cookie signs nobody in.
	tokens, err := st.ListTokens(t.Context())
	if err != nil || len(tokens) != 2 || tokens[0].Name != "anna" {
		t.Fatalf("tokens %v, %v; want anna's and mallory's", tokens, err)
	}
	if _, err := st.RevokeToken(t.Context(), tokens[0].ID); err != nil {
		t.Fatal(err)
	}
	withCookie(request{Method: http.MethodGet, Path: "/api/me"}, cookie).ok(t, http.StatusOK, &me)
	if me.SignedIn || !me.Refused {
		t.Errorf("/api/me with a revoked token's cookie: %+v; want not signed in, refused", me)
	}
	withCookie(request{Method: http.MethodGet, Path: "/api/scenarios"}, cookie).problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	if resp := signIn(`{"token": "` + secret + `"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("signing in with the revoked token: %d; want 401", resp.StatusCode)
	}

	// Refused tokens are rate-limited (30, then one a second); a right one never is.
	limited := 0
	for range 40 {
		if signIn(`{"token": "sst_guess"}`).StatusCode == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited < 5 {
		t.Errorf("%d of 40 wrong tokens answered 429; want those past the first 30 or so", limited)
	}
	if resp := signIn(`{"token": "` + other + `"}`); resp.StatusCode != http.StatusNoContent {
		t.Errorf("the right token after 40 wrong ones: %d; want 204", resp.StatusCode)
	}

	// Without API tokens there is no token sign-in.
	plain := newClient(t, sqliteStore(t))
	plain.send(request{Method: http.MethodPost, Path: "/auth/token", Body: `{"token": "` + secret + `"}`}).
		problem(t, http.StatusNotFound, api.CodeSignInNotConfigured)
	plain.send(request{Method: http.MethodGet, Path: "/api/me"}).ok(t, http.StatusOK, &me)
	if me.TokenSignIn {
		t.Errorf("/api/me without API tokens: %+v; want no tokenSignIn", me)
	}
}

// Behind an https public URL the token cookie is the Secure __Host- one (no Domain, Path /:
// no sibling subdomain or other path sets one beside it), and it signs in as the plain one.
func TestTokenSignInSecureCookie(t *testing.T) {
	t.Parallel()
	st := sqliteStore(t)
	c := newClient(t, st, withTokens(st), func(cfg *api.Config) { cfg.Browser.PublicURL = "https://scenarios.example.com" })
	secret := tokenFor(t, st, "ben", auth.Viewer, time.Time{})
	resp, err := c.http.Post(c.base+"/auth/token", "application/json", strings.NewReader(`{"token": "`+secret+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 {
		t.Fatalf("POST /auth/token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if ck := resp.Cookies()[0]; ck.Name != auth.SecureTokenCookie || !ck.Secure || ck.Path != "/" || ck.Domain != "" || !ck.HttpOnly {
		t.Errorf("cookie %+v; want %s, Secure, Path /, no Domain, HttpOnly", ck, auth.SecureTokenCookie)
	}
	var me api.Me
	c.send(request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"Cookie": auth.SecureTokenCookie + "=" + secret}}).ok(t, http.StatusOK, &me)
	if !me.SignedIn || me.Name != "ben" || me.Method != auth.MethodTokenCookie {
		t.Errorf("/api/me with the __Host- cookie: %+v; want ben by token-cookie", me)
	}
}
