package api_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/auth/oidctest"
	"github.com/scenario-server/scenario-server/store"
)

// signInServer is the API with API tokens, bearer JWTs and the designer's sign-in through p,
// on a clock the test moves (clock holds Unix seconds added to the real time).
func signInServer(t *testing.T, p *oidctest.Provider, clock *atomic.Int64, configure ...func(*api.Config)) *client {
	t.Helper()
	o, err := auth.NewOIDC(t.Context(), auth.OIDCConfig{IssuerURL: p.Issuer, ClientID: p.ClientID, RolesClaim: "groups"})
	if err != nil {
		t.Fatal(err)
	}
	return signInServerWith(t, p, clock, o, configure...)
}

// signInServerWith is signInServer with o as the provider's verifier.
func signInServerWith(t *testing.T, p *oidctest.Provider, clock *atomic.Int64, o *auth.OIDC, configure ...func(*api.Config)) *client {
	t.Helper()
	st := sqliteStore(t)
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	key := make([]byte, auth.SessionKeyBytes)
	rand.Read(key)
	s, err := auth.NewSignIn(o, auth.SignInConfig{ClientSecret: p.ClientSecret, RedirectURL: srv.URL + "/auth/callback", Key: key,
		Now: func() time.Time { return time.Now().Add(time.Duration(clock.Load()) * time.Second) }, Sessions: st})
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{Store: st, Logger: testLogger(t), SignIn: s,
		Authenticator: &auth.Authenticator{Tokens: st, OIDC: o, SignIn: s}}
	for _, f := range configure {
		f(&cfg)
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, base: srv.URL, http: &http.Client{Jar: jar, Timeout: 10 * time.Second}, store: st}
}

// The designer's sign-in, against an OIDC provider started in the test: login redirects to the
// provider with PKCE, the callback sets an HttpOnly, SameSite=Lax session cookie, the role
// comes from the claim, and logout ends it.
func TestSignIn(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	var st store.Store
	c := signInServer(t, p, &clock, func(cfg *api.Config) { st = cfg.Store })

	var me api.Me
	c.get("/api/me").ok(t, http.StatusOK, &me)
	if me.SignedIn || !me.SignIn || me.Name != "" || me.Refused {
		t.Errorf("me before sign-in %+v", me)
	}
	c.get("/api/scenarios").problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)

	// Step through the redirects to see each.
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p.Login(map[string]any{"sub": "u-7", "name": "Vera Viewer", "groups": []any{"staff", "viewer"}})
	resp, err := c.http.Get(c.base + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to, _ := url.Parse(resp.Header.Get("Location"))
	q := to.Query()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(to.String(), p.Issuer+"/authorize?") ||
		q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || q.Get("state") == "" ||
		q.Get("nonce") == "" || q.Get("redirect_uri") != c.base+"/auth/callback" || q.Get("scope") != "openid profile email" {
		t.Fatalf("login: %d to %s", resp.StatusCode, to)
	}
	resp, err = c.http.Get(to.String()) // the provider signs Vera in and sends her back
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	resp, err = c.http.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == auth.SessionCookie {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Secure ||
		session.Path != "/" || session.MaxAge != 8*3600 {
		t.Fatalf("session cookie %+v", session)
	}

	c.get("/api/me").ok(t, http.StatusOK, &me)
	if me.Identity != (auth.Identity{Subject: "u-7", Name: "Vera Viewer", Role: auth.Viewer, Method: auth.MethodSession}) || !me.SignIn || !me.SignedIn {
		t.Errorf("me %+v", me)
	}
	c.get("/api/scenarios").ok(t, http.StatusOK, nil)
	pr := c.post("/api/scenarios/x/deploy", "{}").problem(t, http.StatusForbidden, api.CodeForbidden)
	if pr.Detail != "POST /api/scenarios/{name}/deploy needs the deployer role; Vera Viewer has viewer" {
		t.Errorf("detail %q", pr.Detail)
	}

	// The code is spent: replaying the callback fails (the login cookie is gone too).
	resp, err = c.http.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("replayed callback: %d", resp.StatusCode)
	}

	// Eight hours later the session has expired.
	clock.Store(8 * 3600)
	c.get("/api/scenarios").problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	// /api/me tells the expired session from no credentials.
	me = api.Me{}
	c.get("/api/me").ok(t, http.StatusOK, &me)
	if me.SignedIn || !me.Refused || me.Name != "" {
		t.Errorf("me with an expired session %+v, want signedIn false and refused true", me)
	}
	clock.Store(0)
	c.get("/api/scenarios").ok(t, http.StatusOK, nil)

	// A session cookie changed by the client is refused.
	u, _ := url.Parse(c.base)
	jar := c.http.Jar
	forged := *session
	forged.Value = strings.Replace(session.Value, ".", "x.", 1)
	c.http.Jar, _ = cookiejar.New(nil)
	c.http.Jar.SetCookies(u, []*http.Cookie{&forged})
	c.get("/api/scenarios").problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	me = api.Me{}
	if c.get("/api/me").ok(t, http.StatusOK, &me); me.SignedIn || !me.Refused {
		t.Errorf("me with a forged session cookie %+v, want signedIn false and refused true", me)
	}
	c.http.Jar = jar

	// Logout clears the cookie, and ends the session: a copy of the cookie is refused.
	if r := c.send(request{Method: http.MethodPost, Path: "/auth/logout"}); r.Status != http.StatusNoContent {
		t.Errorf("logout: %d %s", r.Status, r.Body)
	}
	me = api.Me{}
	c.get("/api/me").ok(t, http.StatusOK, &me)
	if me.SignedIn || me.Refused {
		t.Errorf("me after logout %+v", me)
	}
	c.http.Jar, _ = cookiejar.New(nil)
	c.http.Jar.SetCookies(u, []*http.Cookie{session})
	c.get("/api/scenarios").problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
	c.http.Jar = jar

	// The audit log has the sign-in, with the role it gave, and the sign-out; the refused
	// callback (no identity) and the logout without a session are not in it.
	if r := c.send(request{Method: http.MethodPost, Path: "/auth/logout"}); r.Status != http.StatusNoContent {
		t.Errorf("second logout: %d %s", r.Status, r.Body)
	}
	var got []string
	for _, action := range []string{"session.start", "session.end"} {
		list, err := st.ListAudit(t.Context(), store.AuditFilter{Action: action})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			got = append(got, fmt.Sprintf("%s %s %s %s %s", e.Action, e.Subject, e.Name, e.Target, e.Outcome))
		}
	}
	if want := []string{"session.start u-7 Vera Viewer role viewer ok", "session.end u-7 Vera Viewer  ok"}; !slices.Equal(got, want) {
		t.Errorf("audit entries %q, want %q", got, want)
	}
}

// signInAs signs claims in through the provider and returns the session cookie set.
func signInAs(t *testing.T, c *client, p *oidctest.Provider, claims map[string]any) *http.Cookie {
	t.Helper()
	c.http.Jar, _ = cookiejar.New(nil)
	p.Login(claims)
	resp, err := c.http.Get(c.base + "/auth/login") // follows the provider back to the callback
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == auth.SessionCookie {
			return ck
		}
	}
	t.Fatalf("signing %v in: no session cookie (%d)", claims, resp.StatusCode)
	return nil
}

// A sign-in with a lower role than the subject had ends the subject's sessions with higher
// roles (the provider took the role away): a copy of Ada's admin cookie was accepted for its
// eight hours after she was signed in again as a viewer, and could make admin API tokens.
// Her other viewer session, and Bob's admin one, stay.
func TestSignInWithALowerRoleEndsHigherSessions(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock)
	u, _ := url.Parse(c.base)
	adaAdmin := signInAs(t, c, p, map[string]any{"sub": "ada", "groups": []any{"admin"}})
	adaViewer := signInAs(t, c, p, map[string]any{"sub": "ada", "groups": []any{"viewer"}})
	bob := signInAs(t, c, p, map[string]any{"sub": "bob", "groups": []any{"admin"}})
	adaAgain := signInAs(t, c, p, map[string]any{"sub": "ada", "groups": []any{"viewer"}})
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
		want   int
	}{{"ada's admin session", adaAdmin, http.StatusUnauthorized}, {"ada's first viewer session", adaViewer, http.StatusOK},
		{"bob's admin session", bob, http.StatusOK}, {"ada's second viewer session", adaAgain, http.StatusOK}} {
		c.http.Jar, _ = cookiejar.New(nil)
		c.http.Jar.SetCookies(u, []*http.Cookie{tc.cookie})
		if r := c.get("/api/scenarios"); r.Status != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, r.Status, tc.want)
		}
	}
}

// An ID token issued to another client is not a sign-in here (OpenID Connect Core §3.1.3.7):
// one naming another authorized party (azp), or listing several audiences without naming
// one, gives no session; one naming this server's client, or one audience without azp, does.
func TestSignInChecksAuthorizedParty(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock)
	c.http.CheckRedirect = nil
	u, _ := url.Parse(c.base)
	for _, tc := range []struct {
		name    string
		claims  map[string]any
		session bool
	}{
		{"azp of another client", map[string]any{"azp": "other-client"}, false},
		{"two audiences, no azp", map[string]any{"aud": []any{p.ClientID, "other-client"}}, false},
		{"two audiences, azp of another client", map[string]any{"aud": []any{p.ClientID, "other-client"}, "azp": "other-client"}, false},
		{"two audiences, azp of this client", map[string]any{"aud": []any{p.ClientID, "other-client"}, "azp": p.ClientID}, true},
		{"one audience, azp of this client", map[string]any{"azp": p.ClientID}, true},
		{"one audience, no azp", map[string]any{}, true},
	} {
		claims := map[string]any{"sub": "ada", "groups": []any{"admin"}}
		for k, v := range tc.claims {
			claims[k] = v
		}
		c.http.Jar, _ = cookiejar.New(nil)
		p.Login(claims)
		resp, err := c.http.Get(c.base + "/auth/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := false
		for _, ck := range c.http.Jar.Cookies(u) {
			got = got || ck.Name == auth.SessionCookie && ck.Value != ""
		}
		// Refused, the callback answers 400 sign-in-failed (followed redirects end there).
		if got != tc.session || (resp.StatusCode == http.StatusBadRequest) == tc.session {
			t.Errorf("%s: a session %v (the callback answered %d), want %v", tc.name, got, resp.StatusCode, tc.session)
		}
		if want := map[bool]int{true: http.StatusOK, false: http.StatusUnauthorized}[tc.session]; c.get("/api/scenarios").Status != want {
			t.Errorf("%s: /api/scenarios answered %d, want %d", tc.name, c.get("/api/scenarios").Status, want)
		}
	}
}

// An admin ends a person's designer sessions (DELETE /api/sessions?subject=): bob's two
// sessions, of two roles, are refused from their next request; ada's stays; a subject with
// none ends 0; a deployer may not; the admin's request is in the audit log with its target.
func TestEndSessions(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock)
	u, _ := url.Parse(c.base)
	ada := signInAs(t, c, p, map[string]any{"sub": "ada", "name": "Ada", "groups": []any{"admin"}})
	bobViewer := signInAs(t, c, p, map[string]any{"sub": "bob/1", "name": "Bob", "groups": []any{"viewer"}})
	bobDeployer := signInAs(t, c, p, map[string]any{"sub": "bob/1", "name": "Bob", "groups": []any{"deployer"}})
	as := func(ck *http.Cookie, method, path string) *response {
		c.http.Jar, _ = cookiejar.New(nil)
		c.http.Jar.SetCookies(u, []*http.Cookie{ck})
		return c.send(request{Method: method, Path: path})
	}
	as(bobDeployer, http.MethodDelete, "/api/sessions?subject=ada").problem(t, http.StatusForbidden, api.CodeForbidden)
	as(ada, http.MethodDelete, "/api/sessions").problem(t, http.StatusUnprocessableEntity, api.CodeValidationFailed)
	var ended api.EndedSessions
	as(ada, http.MethodDelete, "/api/sessions?subject=bob%2F1").ok(t, http.StatusOK, &ended)
	if ended.Subject != "bob/1" || ended.Ended != 2 {
		t.Errorf("ended %+v, want bob/1's 2 sessions", ended)
	}
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
		want   int
	}{{"bob's viewer session", bobViewer, http.StatusUnauthorized}, {"bob's deployer session", bobDeployer, http.StatusUnauthorized},
		{"ada's session", ada, http.StatusOK}} {
		if r := as(tc.cookie, http.MethodGet, "/api/scenarios"); r.Status != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, r.Status, tc.want)
		}
	}
	as(ada, http.MethodDelete, "/api/sessions?subject=nobody").ok(t, http.StatusOK, &ended)
	if ended.Ended != 0 {
		t.Errorf("a subject without sessions: %+v", ended)
	}
	var page api.AuditPage
	as(ada, http.MethodGet, "/api/audit?action=sessions.end").ok(t, http.StatusOK, &page)
	var got []string
	for _, e := range page.Entries {
		got = append(got, e.Name+" "+e.Target+" "+e.Outcome)
	}
	// Oldest first; a refusal by role comes before the handler names its target.
	want := []string{`Bob  forbidden`, `Ada  validation-failed`, `Ada sessions of "bob/1" (2 ended) ok`, `Ada sessions of "nobody" (0 ended) ok`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A callback whose state does not match the sign-in in progress, or without one, fails.
func TestSignInStateMismatch(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock)
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.get("/auth/callback?code=x&state=y").problem(t, http.StatusBadRequest, api.CodeSignInFailed)
	p.Login(map[string]any{"sub": "u-1", "groups": "admin"})
	resp, err := c.http.Get(c.base + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.http.Get(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	q := back.Query()
	q.Set("state", "forged")
	back.RawQuery = q.Encode()
	c.get(back.RequestURI()).problem(t, http.StatusBadRequest, api.CodeSignInFailed)
	c.get("/api/scenarios").problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
}

// Bearer JWTs of the provider through HTTP: the role from the claim, and expired or wrongly
// signed tokens refused.
func TestBearerJWTOverHTTP(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock)
	as := func(tok string, r request) *response {
		r.Header = map[string]string{"Authorization": "Bearer " + tok}
		return c.send(r)
	}
	admin := p.Token(t, map[string]any{"sub": "a-1", "email": "ada@example.com", "groups": []any{"admin"}}, time.Hour)
	viewer := p.Token(t, map[string]any{"sub": "v-1", "name": "Vic", "groups": []any{"viewer"}}, time.Hour)
	var me api.Me
	as(admin, request{Method: "GET", Path: "/api/me"}).ok(t, http.StatusOK, &me)
	if me.Identity != (auth.Identity{Subject: "a-1", Name: "ada@example.com", Role: auth.Admin, Method: auth.MethodBearer}) {
		t.Errorf("me %+v", me)
	}
	as(admin, request{Method: "GET", Path: "/api/tokens"}).ok(t, http.StatusOK, nil)
	as(viewer, request{Method: "GET", Path: "/api/tokens"}).problem(t, http.StatusForbidden, api.CodeForbidden)
	var v api.Version
	as(admin, request{Method: "POST", Path: "/api/scenarios", Body: rawBody("name", quote("s"), "graph", tinyGraph)}).ok(t, http.StatusCreated, &v)
	if v.Author != "ada@example.com" {
		t.Errorf("author %q", v.Author)
	}
	for name, tok := range map[string]string{
		"expired":        p.Token(t, map[string]any{"sub": "a-1", "groups": []any{"admin"}}, -time.Second),
		"wrongly signed": p.WronglySignedToken(t, map[string]any{"sub": "a-1", "groups": []any{"admin"}}),
	} {
		r := as(tok, request{Method: "GET", Path: "/api/scenarios"})
		r.problem(t, http.StatusUnauthorized, api.CodeUnauthenticated)
		if got := r.Header.Get("WWW-Authenticate"); got != `Bearer realm="scenario-server", error="invalid_token"` {
			t.Errorf("%s: WWW-Authenticate %q", name, got)
		}
	}
	// A token without a known role: signed in, allowed only what is public.
	none := p.Token(t, map[string]any{"sub": "n-1", "groups": []any{"staff"}}, time.Hour)
	pr := as(none, request{Method: "GET", Path: "/api/scenarios"}).problem(t, http.StatusForbidden, api.CodeForbidden)
	if !strings.HasSuffix(pr.Detail, "n-1 has no role") {
		t.Errorf("detail %q", pr.Detail)
	}
}

// downLink is the way to the provider, refusing every request while down.
type downLink struct{ down atomic.Bool }

func (l *downLink) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.down.Load() {
		return nil, errors.New("connection refused (test)")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A provider down when the server starts: the server serves; its JWTs and sign-ins are
// answered 503 unavailable (not checked, rather than 401 refused), API tokens work; once
// the provider answers (its document is read again at most every 10 s, when a token comes)
// its JWTs are accepted and sign-in redirects to it.
func TestProviderDownAtStart(t *testing.T) {
	t.Parallel()
	p := oidctest.New(t)
	link := &downLink{}
	link.down.Store(true)
	o, err := auth.NewOIDC(t.Context(), auth.OIDCConfig{IssuerURL: p.Issuer, ClientID: p.ClientID, RolesClaim: "groups",
		HTTPClient: &http.Client{Transport: link}})
	if !errors.Is(err, auth.ErrProviderNotReady) || o == nil {
		t.Fatalf("NewOIDC with the provider down: %v, %v", o, err)
	}
	var clock atomic.Int64
	c := signInServerWith(t, p, &clock, o)
	secret, hash := auth.NewTokenSecret()
	if _, err := c.store.CreateToken(t.Context(), store.NewToken{Name: "ci", Role: "viewer", SecretHash: hash}); err != nil {
		t.Fatal(err)
	}
	bearer := func(tok string) *response {
		return c.send(request{Method: http.MethodGet, Path: "/api/scenarios", Header: map[string]string{"Authorization": "Bearer " + tok}})
	}
	bearer(secret).ok(t, http.StatusOK, nil)
	jwt := p.Token(t, map[string]any{"sub": "e-1", "groups": []any{"editor"}}, time.Hour)
	bearer(jwt).problem(t, http.StatusServiceUnavailable, api.CodeUnavailable)
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login := func() int {
		resp, err := noRedirect.Get(c.base + "/auth/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := login(); got != http.StatusServiceUnavailable {
		t.Errorf("sign-in with the provider down: %d; want 503", got)
	}
	link.down.Store(false)
	waitFor(t, "the provider's JWT to be accepted", func() bool { return bearer(jwt).Status == http.StatusOK })
	if got := login(); got != http.StatusFound {
		t.Errorf("sign-in with the provider up: %d; want 302 to it", got)
	}
}

// TestSignInsBounded (round 27): a sign-in's login cookie and state can be replayed, and each
// callback exchanges its code with the provider (up to 30 s): one client completes at most 4
// sign-ins at once, and the server 32; the others are answered 429 (the client's bound) or
// 503 (the server's) at once, without reaching the provider.
func TestSignInsBounded(t *testing.T) {
	t.Run("one client", func(t *testing.T) {
		// Ten callbacks at once from one address: six refused while four wait.
		checkSignInBound(t, 10, func(int) string { return "" }, http.StatusTooManyRequests, 4)
	})
	t.Run("the server", func(t *testing.T) {
		// Forty from ten addresses (through a trusted proxy), four each: eight refused while
		// thirty-two wait.
		checkSignInBound(t, 40, func(i int) string { return fmt.Sprintf("10.0.0.%d", i%10) }, http.StatusServiceUnavailable, 32,
			func(cfg *api.Config) { cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} })
	})
}

// checkSignInBound sends n callbacks at once with one login cookie and state, the i-th from
// the client address from(i) ("": the connection's), while the provider holds the code
// exchanges: want of them reach the provider, at most want at once, and the others are
// answered refused; released, the exchanged ones fail (400: the code was never given).
func checkSignInBound(t *testing.T, n int, from func(i int) string, refused, want int, configure ...func(*api.Config)) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock, configure...)
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before the servers close: a failure leaves none waiting
	p.BeforeToken = func() {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
	}
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p.Login(map[string]any{"sub": "u-1", "groups": "viewer"})
	resp, err := c.http.Get(c.base + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var login *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "scenario_server_login" {
			login = ck
		}
	}
	if login == nil {
		t.Fatal("no login cookie")
	}
	state := func() string { u, _ := url.Parse(resp.Header.Get("Location")); return u.Query().Get("state") }()
	callback := func(i int) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, c.base+"/auth/callback?code=c&state="+url.QueryEscape(state), nil)
		req.AddCookie(login)
		if a := from(i); a != "" {
			req.Header.Set("X-Forwarded-For", a)
		}
		r, err := (&http.Client{Timeout: 20 * time.Second, CheckRedirect: c.http.CheckRedirect}).Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		r.Body.Close()
		return r.StatusCode
	}
	codes := make(chan int, n)
	for i := range n {
		go func() { codes <- callback(i) }()
	}
	answered := 0
	for range n - want {
		select {
		case code := <-codes:
			if code != refused {
				t.Errorf("a callback beyond the %d: %d, want %d", want, code, refused)
			}
			answered++
		case <-time.After(15 * time.Second):
			t.Fatalf("%d callbacks answered, %d at the provider; want %d refused while %d wait", answered, inFlight.Load(), n-want, want)
		}
	}
	// The others reach the provider (waited for: they may still be on their way).
	for deadline := time.Now().Add(15 * time.Second); inFlight.Load() < int64(want) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := inFlight.Load(); got != int64(want) {
		t.Errorf("%d exchanges at the provider, want %d", got, want)
	}
	free()
	for range want {
		if code := <-codes; code != http.StatusBadRequest { // the code "c" was never given
			t.Errorf("an exchanged callback: %d, want 400 sign-in-failed", code)
		}
	}
	if m := most.Load(); m != int64(want) {
		t.Errorf("at most %d exchanges at once, want %d", m, want)
	}
}

// One client completes 30 sign-ins at once, then one a second: each callback of a sign-in in
// progress asks the provider to exchange a code (a replayed login cookie made 4,137 exchanges
// in 3 s). Callbacks without a sign-in in progress fail at once and do not count (counted, 31
// of them kept a shared address from signing in). Here 40 of those (400), then 35 replays
// of one login cookie and its state with a code the provider refuses: 30 answered 400, the
// other 5 429 with a Retry-After.
func TestSignInCallbacksRateLimited(t *testing.T) {
	p := oidctest.New(t)
	var clock atomic.Int64
	c := signInServer(t, p, &clock)
	for range 40 {
		c.get("/auth/callback?code=x&state=y").problem(t, http.StatusBadRequest, api.CodeSignInFailed)
	}
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.http.Get(c.base + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to, _ := url.Parse(resp.Header.Get("Location"))
	var login *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name != auth.SessionCookie {
			login = ck
		}
	}
	if login == nil {
		t.Fatal("no login cookie")
	}
	var failed, limited int
	start := time.Now()
	for range 35 {
		r := c.send(request{Method: http.MethodGet, Path: "/auth/callback?code=refused&state=" + url.QueryEscape(to.Query().Get("state")),
			Header: map[string]string{"Cookie": login.Name + "=" + login.Value}})
		switch {
		case r.Status == http.StatusBadRequest:
			failed++
		case r.Status == http.StatusTooManyRequests && r.Header.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("callback: %d %s", r.Status, r.Body)
		}
	}
	// A slow machine refills a place a second meanwhile.
	refilled := int(time.Since(start).Seconds())
	if failed < 30 || failed > 30+refilled || failed+limited != 35 {
		t.Errorf("%d failed and %d rate-limited in %v; want 30 (and %d refilled at most) and the rest", failed, limited, time.Since(start), refilled)
	}
}
