package auth_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/auth/oidctest"
)

func TestBearerJWT(t *testing.T) {
	p := oidctest.New(t)
	newAuth := func(claim string) *auth.Authenticator {
		o, err := auth.NewOIDC(t.Context(), auth.OIDCConfig{IssuerURL: p.Issuer, ClientID: p.ClientID, RolesClaim: claim})
		if err != nil {
			t.Fatal(err)
		}
		return &auth.Authenticator{OIDC: o}
	}
	a, nested := newAuth(""), newAuth("realm_access.roles")
	authenticate := func(a *auth.Authenticator, header string) (auth.Identity, error) {
		r := httptest.NewRequest("GET", "/api/scenarios", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		return a.Authenticate(r)
	}
	alice := map[string]any{"sub": "u-1", "name": "Alice", "roles": []any{"viewer", "Deployer", "auditor"}}
	for _, tc := range []struct {
		name string
		a    *auth.Authenticator
		tok  string
		want auth.Identity
	}{
		{"highest of the roles", a, p.Token(t, alice, time.Hour), auth.Identity{Subject: "u-1", Name: "Alice", Role: auth.Deployer, Method: auth.MethodBearer}},
		{"roles as one string", a, p.Token(t, map[string]any{"sub": "u-2", "email": "b@x", "roles": "editor viewer"}, time.Hour),
			auth.Identity{Subject: "u-2", Name: "b@x", Role: auth.Editor, Method: auth.MethodBearer}},
		{"no known role", a, p.Token(t, map[string]any{"sub": "u-3", "roles": []any{"auditor"}}, time.Hour),
			auth.Identity{Subject: "u-3", Name: "u-3", Role: "", Method: auth.MethodBearer}},
		// Invisible characters are left out of the name: "\u202enimda" would show as "admin".
		{"name without its direction override", a, p.Token(t, map[string]any{"sub": "u-5", "name": "\u202enimda", "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "u-5", Name: "nimda", Role: auth.Viewer, Method: auth.MethodBearer}},
		{"issued within the clock skew allowed", a, p.Token(t, map[string]any{"sub": "u-6", "iat": time.Now().Add(4 * time.Minute).Unix(), "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "u-6", Name: "u-6", Role: auth.Viewer, Method: auth.MethodBearer}},
		// Names of the server's own identities are not taken: the subject is the name.
		{"the command line's name", a, p.Token(t, map[string]any{"sub": "u-7", "name": "root (Command Line)", "email": "r@x", "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "u-7", Name: "r@x", Role: auth.Viewer, Method: auth.MethodBearer}},
		{"the local user's name", a, p.Token(t, map[string]any{"sub": "u-8", "name": " Local ", "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "u-8", Name: "u-8", Role: auth.Viewer, Method: auth.MethodBearer}},
		// Nor names that read as an API token's or the command line's subject (a hostile
		// round: "token:1" was shown as the author).
		{"an API token's subject as a name", a, p.Token(t, map[string]any{"sub": "u-9", "name": "token:1", "preferred_username": "cli:root", "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "u-9", Name: "u-9", Role: auth.Viewer, Method: auth.MethodBearer}},
		{"the examples' author's name", a, p.Token(t, map[string]any{"sub": "u-10", "name": "scenario-server", "email": "s@x", "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "u-10", Name: "s@x", Role: auth.Viewer, Method: auth.MethodBearer}},
		{"a subject that only looks like the local user's", a, p.Token(t, map[string]any{"sub": "locals", "roles": []any{"viewer"}}, time.Hour),
			auth.Identity{Subject: "locals", Name: "locals", Role: auth.Viewer, Method: auth.MethodBearer}},
		{"nested claim", nested, p.Token(t, map[string]any{"sub": "u-4", "preferred_username": "dora", "realm_access": map[string]any{"roles": []any{"admin"}}}, time.Hour),
			auth.Identity{Subject: "u-4", Name: "dora", Role: auth.Admin, Method: auth.MethodBearer}},
	} {
		got, err := authenticate(tc.a, "Bearer "+tc.tok)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, header string }{
		{"expired", "Bearer " + p.Token(t, alice, -time.Minute)},
		{"wrongly signed", "Bearer " + p.WronglySignedToken(t, alice)},
		{"another audience", "Bearer " + p.Token(t, map[string]any{"sub": "u-1", "aud": "someone-else"}, time.Hour)},
		{"another issuer", "Bearer " + p.Token(t, map[string]any{"sub": "u-1", "iss": "https://evil.example"}, time.Hour)},
		{"not a JWT", "Bearer hello"},
		{"Basic", "Basic YTpi"},
		{"API token without a token store", "Bearer sst_abc"},
		// The subject is the identity: none is nobody, an API token's is someone else.
		{"no subject", "Bearer " + p.Token(t, map[string]any{"name": "Alice", "roles": []any{"admin"}}, time.Hour)},
		{"an API token's subject", "Bearer " + p.Token(t, map[string]any{"sub": "token:1", "roles": []any{"admin"}}, time.Hour)},
		{"an invisible character in the subject", "Bearer " + p.Token(t, map[string]any{"sub": "\u202etoken:1", "roles": []any{"admin"}}, time.Hour)},
		{"a zero-width space in the subject", "Bearer " + p.Token(t, map[string]any{"sub": "alice\u200b", "roles": []any{"admin"}}, time.Hour)},
		// The server's own subjects: the local user's, the command line's audit entries'.
		{"the local user's subject", "Bearer " + p.Token(t, map[string]any{"sub": "local", "roles": []any{"admin"}}, time.Hour)},
		{"the command line's subject", "Bearer " + p.Token(t, map[string]any{"sub": "cli:root", "roles": []any{"admin"}}, time.Hour)},
		{"the local user's subject in capitals", "Bearer " + p.Token(t, map[string]any{"sub": "Local", "roles": []any{"admin"}}, time.Hour)},
		{"the command line's subject in capitals", "Bearer " + p.Token(t, map[string]any{"sub": "CLI:root", "roles": []any{"admin"}}, time.Hour)},
		{"an API token's subject in capitals", "Bearer " + p.Token(t, map[string]any{"sub": "Token:1", "roles": []any{"admin"}}, time.Hour)},
		// Compared after NFKC and without the spaces around (a re-test): a space, an
		// ideographic space, a Kelvin sign for K, a fullwidth colon.
		{"the local user's subject with a space", "Bearer " + p.Token(t, map[string]any{"sub": " local", "roles": []any{"admin"}}, time.Hour)},
		{"the local user's subject with an ideographic space", "Bearer " + p.Token(t, map[string]any{"sub": "local\u3000", "roles": []any{"admin"}}, time.Hour)},
		{"an API token's subject with a Kelvin sign", "Bearer " + p.Token(t, map[string]any{"sub": "To\u212Aen:1", "roles": []any{"admin"}}, time.Hour)},
		{"the command line's subject with a fullwidth colon", "Bearer " + p.Token(t, map[string]any{"sub": "cli\uFF1Aroot", "roles": []any{"admin"}}, time.Hour)},
		// Issued 10 minutes ahead of the clock, past the 5 minutes of skew allowed.
		{"issued in the future", "Bearer " + p.Token(t, map[string]any{"sub": "u-1", "iat": time.Now().Add(10 * time.Minute).Unix(), "roles": []any{"admin"}}, time.Hour)},
		// Past int64 seconds: go-oidc's issue time wraps (a hostile round: accepted).
		// The examples' author, in any case.
		{"the examples' author's subject", "Bearer " + p.Token(t, map[string]any{"sub": "Scenario-Server", "roles": []any{"admin"}}, time.Hour)},
		{"issued past int64 seconds", "Bearer " + p.Token(t, map[string]any{"sub": "u-1", "iat": 1e300, "roles": []any{"admin"}}, time.Hour)},
		{"issued at 2^63 seconds", "Bearer " + p.Token(t, map[string]any{"sub": "u-1", "iat": 9.223372036854775807e18, "roles": []any{"admin"}}, time.Hour)},
	} {
		if _, err := authenticate(a, tc.header); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Errorf("%s: %v; want ErrInvalidCredentials", tc.name, err)
		}
	}
	if _, err := authenticate(a, ""); !errors.Is(err, auth.ErrNoCredentials) {
		t.Errorf("no header: %v; want ErrNoCredentials", err)
	}
}

// The provider's answers are read up to 1 MiB: a discovery document of 2 MiB (here, padding
// in an unknown field) is ErrProviderNotReady with the bound as its cause, where go-oidc
// read and kept any size (800 MiB held 1.95 GB for the life of the server); the same
// document with 1 KB of padding is read.
func TestDiscoveryDocumentBounded(t *testing.T) {
	var pad atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issuer": %q, "jwks_uri": %q, "authorization_endpoint": %q, "token_endpoint": %q, "pad": %q}`,
			srv.URL, srv.URL+"/keys", srv.URL+"/authorize", srv.URL+"/token", strings.Repeat("x", int(pad.Load())))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		pad  int64
		fits bool
	}{{1000, true}, {2 << 20, false}} {
		pad.Store(tc.pad)
		_, err := auth.NewOIDC(t.Context(), auth.OIDCConfig{IssuerURL: srv.URL, ClientID: "c"})
		if tc.fits && err != nil {
			t.Errorf("a document with %d bytes of padding: %v", tc.pad, err)
		}
		if !tc.fits && (!errors.Is(err, auth.ErrProviderNotReady) || !strings.Contains(err.Error(), "an answer larger than 1048576 bytes")) {
			t.Errorf("a document with %d bytes of padding: %v; want ErrProviderNotReady, larger than 1048576 bytes", tc.pad, err)
		}
	}
}
