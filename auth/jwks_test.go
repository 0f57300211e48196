package auth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/auth/oidctest"
)

// countingTransport counts the requests for the provider's signing keys.
type countingTransport struct{ keys atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/keys") {
		c.keys.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Tokens the provider's keys do not verify fetch the keys again at most every 10 s: 200
// wrongly signed tokens in a row (go-oidc's key set fetched the keys for each: 380 fetches a
// second from anonymous requests) make one fetch, the first token's, and are all refused; a
// token the provider signed still verifies, from the keys cached.
func TestKeyFetchesBounded(t *testing.T) {
	p := oidctest.New(t)
	ct := &countingTransport{}
	o, err := auth.NewOIDC(t.Context(), auth.OIDCConfig{IssuerURL: p.Issuer, ClientID: p.ClientID, HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	a := &auth.Authenticator{OIDC: o}
	bearer := func(tok string) (auth.Identity, error) {
		r := httptest.NewRequest("GET", "/api/scenarios", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return a.Authenticate(r)
	}
	bad := p.WronglySignedToken(t, map[string]any{"sub": "mallory", "roles": []any{"admin"}})
	for range 200 {
		if _, err := bearer(bad); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Fatalf("a wrongly signed token: %v; want ErrInvalidCredentials", err)
		}
	}
	if n := ct.keys.Load(); n != 1 {
		t.Errorf("%d fetches of the keys for 200 wrongly signed tokens; want 1", n)
	}
	if id, err := bearer(p.Token(t, map[string]any{"sub": "u-1", "roles": []any{"viewer"}}, time.Hour)); err != nil || id.Subject != "u-1" {
		t.Errorf("a good token after them: %+v, %v", id, err)
	}
	if n := ct.keys.Load(); n != 1 {
		t.Errorf("%d fetches after a good token; want still 1 (the keys cached)", n)
	}
}
