// Package oidctest is an OpenID Connect provider for tests: discovery, signing keys, the
// authorization code flow with PKCE (S256) and tokens signed on demand. It stands in for the
// external identity provider only; everything it answers follows OpenID Connect Core 1.0, so
// that the server's real client code (go-oidc, x/oauth2) is what the tests exercise.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Provider is a running test provider. Create it with New.
type Provider struct {
	// Issuer is the provider's issuer URL (its base URL).
	Issuer       string
	ClientID     string
	ClientSecret string

	server *httptest.Server
	key    *rsa.PrivateKey
	// other signs "wrongly signed" tokens: a key the provider does not publish.
	other *rsa.PrivateKey

	// BeforeToken, when set, is called as a code exchange reaches the token endpoint, before
	// the code is checked: a test holds the exchanges there to see how many are in progress.
	BeforeToken func()

	mu sync.Mutex
	// next are the claims of the user who signs in next (Login).
	next map[string]any
	// codes are the authorization codes given and not yet exchanged.
	codes map[string]grant
}

type grant struct {
	challenge, redirectURI, nonce string
	claims                        map[string]any
}

// New starts a provider, closed when t ends.
func New(t testing.TB) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: "scenario-server", ClientSecret: "test-secret", key: key, other: other, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	// The issuer is set before the server starts: its handlers read it.
	p.server = httptest.NewUnstartedServer(mux)
	p.Issuer = "http://" + p.server.Listener.Addr().String()
	p.server.Start()
	t.Cleanup(p.server.Close)
	return p
}

// Login sets the claims (beyond iss, aud, exp, iat, nonce) of the user whom the next
// authorization request signs in, as if they had typed their password.
func (p *Provider) Login(claims map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = claims
}

// Token returns a JWT for the client, signed by the provider, valid for ttl (negative: already
// expired), with claims added to the standard ones.
func (p *Provider) Token(t testing.TB, claims map[string]any, ttl time.Duration) string {
	t.Helper()
	return p.sign(t, p.key, p.standard(claims, ttl))
}

// WronglySignedToken is Token signed by a key the provider does not publish.
func (p *Provider) WronglySignedToken(t testing.TB, claims map[string]any) string {
	t.Helper()
	return p.sign(t, p.other, p.standard(claims, time.Hour))
}

func (p *Provider) standard(claims map[string]any, ttl time.Duration) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": p.Issuer, "aud": p.ClientID, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	return c
}

func (p *Provider) sign(t testing.TB, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	s, err := p.signE(key, claims)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *Provider) signE(key *rsa.PrivateKey, claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "/authorize",
		"token_endpoint":                        p.Issuer + "/token",
		"jwks_uri":                              p.Issuer + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *Provider) keys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: string(jose.RS256), Use: "sig"},
	}})
}

// authorize signs in the user set by Login at once and redirects back with a code. It
// requires PKCE with S256.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	claims := p.next
	code := rand.Text()
	p.codes[code] = grant{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri"), nonce: q.Get("nonce"), claims: claims}
	p.mu.Unlock()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token exchanges a code: the client authenticates with its secret and proves PKCE.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if p.BeforeToken != nil {
		p.BeforeToken()
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || secret != p.ClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	g, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != g.redirectURI ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	claims := p.standard(g.claims, time.Hour)
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	idToken, err := p.signE(p.key, claims)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 3600, "id_token": idToken,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
