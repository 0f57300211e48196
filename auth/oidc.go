package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"

	"github.com/scenario-server/scenario-server/internal/names"
)

// DefaultRolesClaim is the claim that OIDC tokens carry their roles in when OIDCConfig.RolesClaim
// is empty.
const DefaultRolesClaim = "roles"

// OIDCConfig is how the server trusts an OpenID Connect provider.
type OIDCConfig struct {
	// IssuerURL is the provider's issuer ("https://login.example.com/realms/fraud"); its
	// discovery document is read from IssuerURL + "/.well-known/openid-configuration".
	IssuerURL string
	// ClientID is this server's client at the provider. ID tokens and bearer JWTs must name it
	// in their audience ("aud").
	ClientID string
	// RolesClaim names the claim that holds the roles: a string or an array of strings, found
	// by a dotted path for nested claims ("realm_access.roles"). Values that are not role names
	// (viewer, editor, deployer, admin; any case) are ignored, and the highest role found is
	// the identity's. Empty means DefaultRolesClaim.
	RolesClaim string
	// HTTPClient fetches the discovery document and the signing keys. Nil means
	// http.DefaultClient.
	HTTPClient *http.Client
}

// OIDC verifies the provider's tokens: ID tokens after sign-in and bearer JWTs.
type OIDC struct {
	provider   *oidc.Provider
	verifier   *oidc.IDTokenVerifier
	clientID   string
	rolesClaim string
	httpClient *http.Client
}

// NewOIDC reads the provider's discovery document. It fails when the provider cannot be
// reached or its document names another issuer.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	if cfg.IssuerURL == "" || cfg.ClientID == "" {
		return nil, errors.New("OIDC needs an issuer URL and a client id")
	}
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = DefaultRolesClaim
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, cfg.HTTPClient), cfg.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("reading the OIDC provider %s: %w", cfg.IssuerURL, err)
	}
	var meta struct {
		JWKS string   `json:"jwks_uri"`
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&meta); err != nil || meta.JWKS == "" {
		return nil, fmt.Errorf("the OIDC provider %s names no jwks_uri (%v)", cfg.IssuerURL, err)
	}
	keys := &keySet{url: meta.JWKS, client: cfg.HTTPClient}
	algs := supportedAlgs(meta.Algs)
	for _, a := range algs {
		keys.algs = append(keys.algs, jose.SignatureAlgorithm(a))
	}
	verifier := oidc.NewVerifier(cfg.IssuerURL, keys, &oidc.Config{ClientID: cfg.ClientID, SupportedSigningAlgs: algs})
	return &OIDC{
		provider:   provider,
		verifier:   verifier,
		clientID:   cfg.ClientID,
		rolesClaim: cfg.RolesClaim,
		httpClient: cfg.HTTPClient,
	}, nil
}

// visible is r, or -1 (left out) for a control or invisible character (names.IsHidden).
func visible(r rune) rune {
	if names.IsHidden(r) {
		return -1
	}
	return r
}

// supportedAlgs are the provider's signing algorithms that go-oidc verifies (RS256 when it
// names none, as OpenID Connect Discovery has it).
func supportedAlgs(provider []string) []string {
	known := []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}
	var out []string
	for _, a := range provider {
		if slices.Contains(known, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = []string{oidc.RS256}
	}
	return out
}

// Verify checks a JWT from the provider (its signature against the provider's keys, the
// issuer, the audience and the expiry) and returns the identity it names, with Method m.
// A token that carries no known role gives an identity with an empty Role: authenticated, but
// allowed only what is public.
func (o *OIDC) Verify(ctx context.Context, raw string, m Method) (Identity, error) {
	tok, err := o.verifier.Verify(oidc.ClientContext(ctx, o.httpClient), raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrInvalidCredentials, err)
	}
	// The subject is the identity for good (audit, authors, the four-eyes rule): a token
	// without one, or with one in the server's own namespace of API tokens ("token:<id>"),
	// would be nobody, or someone else.
	if tok.Subject == "" {
		return Identity{}, fmt.Errorf("%w: the token has no subject (sub)", ErrInvalidCredentials)
	}
	if strings.IndexFunc(tok.Subject, names.IsHidden) >= 0 {
		return Identity{}, fmt.Errorf("%w: the token's subject %q holds invisible or control characters", ErrInvalidCredentials, tok.Subject)
	}
	if strings.HasPrefix(tok.Subject, tokenSubjectPrefix) {
		return Identity{}, fmt.Errorf("%w: the token's subject %q is in the server's namespace of API tokens", ErrInvalidCredentials, tok.Subject)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: reading claims: %w", ErrInvalidCredentials, err)
	}
	id := Identity{Subject: tok.Subject, Role: highestRole(claimAt(claims, o.rolesClaim)), Method: m}
	// The name shows in versions and the designer: invisible and control characters are left
	// out of it ("\u202enimda" showed as "admin").
	for _, c := range []string{"name", "preferred_username", "email"} {
		if s, ok := claims[c].(string); ok {
			if s = strings.Map(visible, s); s != "" {
				id.Name = s
				break
			}
		}
	}
	if id.Name == "" {
		id.Name = tok.Subject
	}
	return id, nil
}

// claimAt is the claim at a dotted path, nil when there is none.
func claimAt(claims map[string]any, path string) any {
	var v any = claims
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}

// highestRole is the highest role named by v (a string or an array), "" when none.
func highestRole(v any) Role {
	var names []string
	switch v := v.(type) {
	case string:
		names = strings.Fields(strings.ReplaceAll(v, ",", " "))
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
	}
	var best Role
	for _, n := range names {
		if r, err := ParseRole(n); err == nil && r.rank() > best.rank() {
			best = r
		}
	}
	return best
}
