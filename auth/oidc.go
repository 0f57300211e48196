package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// OIDC verifies the provider's tokens: ID tokens after sign-in and bearer JWTs. It reads the
// provider's discovery document when it is made and, while that fails (the provider is down
// or unreachable when the server starts), again when a token or a sign-in needs it, at most
// every discoveryRetry: meanwhile those answer ErrProviderNotReady, and API tokens work.
type OIDC struct {
	cfg        OIDCConfig
	clientID   string
	rolesClaim string
	httpClient *http.Client
	now        func() time.Time

	d      atomic.Pointer[discovered]
	mu     sync.Mutex
	tried  time.Time // the last attempt that failed
	err    error     // its error
	trying bool
}

// discovered is what the provider's discovery document gave.
type discovered struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
}

// discoveryRetry is the least time between two reads of a discovery document that failed;
// discoveryTimeout bounds one read.
const (
	discoveryRetry   = 10 * time.Second
	discoveryTimeout = 30 * time.Second
)

// ErrProviderNotReady means the provider's discovery document has not been read: the provider
// could not be reached, or answered a document that does not fit (another issuer, no
// jwks_uri). The wrapped error says which. The server answers 503: the credentials could not
// be checked, not refused.
var ErrProviderNotReady = errors.New("the OIDC provider's discovery document has not been read")

// NewOIDC returns the verifier of cfg's provider and reads its discovery document, waiting
// for it until ctx ends. Errors: a configuration without an issuer or a client id (nil OIDC);
// ErrProviderNotReady when the document could not be read (by then) or does not fit, with a
// usable OIDC that reads it again when it is needed (the caller may go on, or stop).
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
	o := &OIDC{cfg: cfg, clientID: cfg.ClientID, rolesClaim: cfg.RolesClaim, httpClient: boundedClient(cfg.HTTPClient, providerMaxBytes), now: time.Now}
	// The read goes on past ctx (up to discoveryTimeout) when ctx ends first: the caller does
	// not wait for a provider that does not answer, and tokens work once it has.
	done := make(chan error, 1)
	go func() {
		_, err := o.ready(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		return o, err
	case <-ctx.Done():
		return o, fmt.Errorf("%w (%s): no answer yet (%w); still reading it", ErrProviderNotReady, cfg.IssuerURL, ctx.Err())
	}
}

// providerMaxBytes bounds each answer of the provider that is read (the discovery document,
// the code exchange's; the key set has its own bound, jwksMaxBytes): go-oidc reads the
// discovery document whole and keeps it, and a document of 800 MiB held 1.95 GB for the life
// of the server.
const providerMaxBytes = 1 << 20

// boundedClient is c whose answers' bodies fail past max bytes.
func boundedClient(c *http.Client, max int64) *http.Client {
	b := *c
	rt := b.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	b.Transport = boundedTransport{rt: rt, max: max}
	return &b
}

type boundedTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err == nil {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max, max: t.max, url: r.URL.Redacted()}
	}
	return resp, err
}

// boundedBody fails a read past left bytes.
type boundedBody struct {
	io.ReadCloser
	left, max int64
	url       string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%s: an answer larger than %d bytes", b.url, b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one more, to tell an answer of exactly left bytes from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("%s: an answer larger than %d bytes", b.url, b.max)
	}
	return n, err
}

// ready returns what the discovery document gave, reading it when it has not been read and
// the last attempt is discoveryRetry old; one read at a time, others answer the last error
// at once. Errors: ErrProviderNotReady.
func (o *OIDC) ready(ctx context.Context) (*discovered, error) {
	if d := o.d.Load(); d != nil {
		return d, nil
	}
	o.mu.Lock()
	if d := o.d.Load(); d != nil {
		o.mu.Unlock()
		return d, nil
	}
	if o.trying || (o.err != nil && o.now().Sub(o.tried) < discoveryRetry) {
		err := o.err
		o.mu.Unlock()
		if err == nil {
			err = errors.New("it is being read")
		}
		return nil, fmt.Errorf("%w (%s): %w", ErrProviderNotReady, o.cfg.IssuerURL, err)
	}
	o.trying = true
	o.mu.Unlock()
	// A request that ends does not end the read the others wait for.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discoveryTimeout)
	defer cancel()
	d, err := o.discover(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.trying = false
	if err != nil {
		o.tried, o.err = o.now(), err
		return nil, fmt.Errorf("%w (%s): %w", ErrProviderNotReady, o.cfg.IssuerURL, err)
	}
	o.err = nil
	o.d.Store(d)
	return d, nil
}

// discover reads the provider's discovery document (go-oidc checks that it names the issuer).
func (o *OIDC) discover(ctx context.Context) (*discovered, error) {
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, o.httpClient), o.cfg.IssuerURL)
	if err != nil {
		return nil, err
	}
	var meta struct {
		JWKS string   `json:"jwks_uri"`
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&meta); err != nil || meta.JWKS == "" {
		return nil, fmt.Errorf("the document names no jwks_uri (%v)", err)
	}
	keys := &keySet{url: meta.JWKS, client: o.httpClient}
	algs := supportedAlgs(meta.Algs)
	for _, a := range algs {
		keys.algs = append(keys.algs, jose.SignatureAlgorithm(a))
	}
	verifier := oidc.NewVerifier(o.cfg.IssuerURL, keys, &oidc.Config{ClientID: o.clientID, SupportedSigningAlgs: algs})
	return &discovered{provider: provider, verifier: verifier}, nil
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

// maxClockSkew is how far ahead of the server's clock a token's issue time (iat) may be, as
// go-oidc allows a not-before (nbf) ahead: clocks of the provider and the server differ.
const maxClockSkew = 5 * time.Minute

// Verify checks a JWT from the provider (its signature against the provider's keys, the
// issuer, the audience, the expiry and an issue time not past maxClockSkew ahead) and returns the identity it names, with Method m.
// A token that carries no known role gives an identity with an empty Role: authenticated, but
// allowed only what is public. Errors: ErrInvalidCredentials for a token refused;
// ErrProviderNotReady before the discovery document is read (ready).
func (o *OIDC) Verify(ctx context.Context, raw string, m Method) (Identity, error) {
	d, err := o.ready(ctx)
	if err != nil {
		return Identity{}, err
	}
	tok, err := d.verifier.Verify(oidc.ClientContext(ctx, o.httpClient), raw)
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
	if ownSubject(tok.Subject) {
		return Identity{}, fmt.Errorf("%w: the token's subject %q is in the server's own namespace (local, scenario-server, token:, cli:)", ErrInvalidCredentials, tok.Subject)
	}
	// Issued in the future: a provider's clock far ahead, or a token made to outlive a key.
	if now := o.now(); tok.IssuedAt.After(now.Add(maxClockSkew)) {
		return Identity{}, fmt.Errorf("%w: the token was issued at %s, more than %v after the server's clock (%s)",
			ErrInvalidCredentials, tok.IssuedAt.UTC().Format(time.RFC3339), maxClockSkew, now.UTC().Format(time.RFC3339))
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: reading claims: %w", ErrInvalidCredentials, err)
	}
	// The issue time as the token writes it: go-oidc's wraps past int64 seconds, and "iat":
	// 1e300 read as long ago (a hostile round: accepted).
	if iat, ok := claims["iat"].(float64); ok && !(iat <= float64(o.now().Add(maxClockSkew).Unix())) {
		return Identity{}, fmt.Errorf("%w: the token's issue time (iat) %g is more than %v after the server's clock", ErrInvalidCredentials, iat, maxClockSkew)
	}
	id := Identity{Subject: tok.Subject, Role: highestRole(claimAt(claims, o.rolesClaim)), Method: m}
	// The name shows in versions and the designer: invisible and control characters are left
	// out of it ("\u202enimda" showed as "admin").
	for _, c := range []string{"name", "preferred_username", "email"} {
		if s, ok := claims[c].(string); ok {
			// Nor a name of the server's own identities: "root (command line)" read as the
			// command line's entries in the audit log (review).
			if s = strings.Map(visible, s); s != "" && !ReadsAsOwn(s) {
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
