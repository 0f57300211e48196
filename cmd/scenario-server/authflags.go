package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
)

// The environment variables of serve's authentication and TLS flags.
const (
	envAuthTokens     = "SCENARIO_SERVER_AUTH_TOKENS"
	envInsecureNoAuth = "SCENARIO_SERVER_INSECURE_NO_AUTH"
	envDeployApproval = "SCENARIO_SERVER_DEPLOY_APPROVAL"
	envTLSCert        = "SCENARIO_SERVER_TLS_CERT"
	envTLSKey         = "SCENARIO_SERVER_TLS_KEY"

	envOIDCIssuer       = "SCENARIO_SERVER_OIDC_ISSUER"
	envOIDCClientID     = "SCENARIO_SERVER_OIDC_CLIENT_ID"
	envOIDCClientSecret = "SCENARIO_SERVER_OIDC_CLIENT_SECRET" // environment only: never a flag, never logged
	envOIDCRedirectURL  = "SCENARIO_SERVER_OIDC_REDIRECT_URL"
	envOIDCRolesClaim   = "SCENARIO_SERVER_OIDC_ROLES_CLAIM"
)

// sessionKeyFile holds the key that signs the designer's session cookies, in the data
// directory: sessions survive a restart. Deleting it signs everyone out.
const sessionKeyFile = "session-key"

// authConfig is how serve authenticates and what it listens with.
//
// Authentication is configured when API tokens are on (--auth-tokens) or an OIDC provider is
// (--oidc-issuer): every route but the public ones (see api.RouteRole) then needs an API
// token, a bearer JWT of the provider or the designer's session, and API tokens are accepted
// in both cases. Without it every request is the local user with every role, and the server
// listens only on a loopback address unless --insecure-no-auth says otherwise.
type authConfig struct {
	// Tokens accepts API tokens ("Authorization: Bearer sst_...").
	Tokens bool
	// InsecureNoAuth lets a server without authentication listen on a non-loopback address.
	InsecureNoAuth bool
	// DeployApproval makes deploys four-eyes (api.Config.DeployApproval); it needs
	// authentication.
	DeployApproval bool
	// TLSCert and TLSKey are PEM files: both set, the server speaks HTTPS only.
	TLSCert, TLSKey string
	// OIDC: the provider's issuer URL and this server's client there. The client secret comes
	// from the environment only. RedirectURL (the public URL and /auth/callback) turns on the
	// designer's sign-in; without it only bearer JWTs are accepted.
	OIDCIssuer, OIDCClientID, OIDCClientSecret, OIDCRedirectURL, OIDCRolesClaim string
}

func (a *authConfig) register(fs *flag.FlagSet, getenv func(string) string) error {
	tokens, err := envBool(getenv, envAuthTokens)
	if err != nil {
		return err
	}
	insecure, err := envBool(getenv, envInsecureNoAuth)
	if err != nil {
		return err
	}
	approval, err := envBool(getenv, envDeployApproval)
	if err != nil {
		return err
	}
	fs.BoolVar(&a.DeployApproval, "deploy-approval", approval, "four-eyes deploys: a deploy is a request that another deployer approves, in the designer or with POST .../deploy-requests/{id}/approve (env "+envDeployApproval+"; needs authentication)")
	fs.BoolVar(&a.Tokens, "auth-tokens", tokens, "require authentication: API tokens (scenario-server token create) on every route but the public ones (env "+envAuthTokens+")")
	fs.BoolVar(&a.InsecureNoAuth, "insecure-no-auth", insecure, "without authentication, listen on a non-loopback address anyway: anyone who reaches the port may do anything (env "+envInsecureNoAuth+")")
	fs.StringVar(&a.TLSCert, "tls-cert", getenv(envTLSCert), "serve HTTPS with the certificate chain in this PEM `file` (env "+envTLSCert+"; needs -tls-key)")
	fs.StringVar(&a.TLSKey, "tls-key", getenv(envTLSKey), "the private key of -tls-cert, a PEM `file` (env "+envTLSKey+")")
	fs.StringVar(&a.OIDCIssuer, "oidc-issuer", getenv(envOIDCIssuer), "accept bearer JWTs and sign-in from the OpenID Connect provider at this issuer `URL` (env "+envOIDCIssuer+")")
	fs.StringVar(&a.OIDCClientID, "oidc-client-id", getenv(envOIDCClientID), "this server's client `id` at the provider; tokens must name it in their audience (env "+envOIDCClientID+"; the secret: env "+envOIDCClientSecret+" only)")
	fs.StringVar(&a.OIDCRedirectURL, "oidc-redirect-url", getenv(envOIDCRedirectURL), "turn on the designer's sign-in: the `URL` of /auth/callback as browsers reach it, registered at the provider (env "+envOIDCRedirectURL+")")
	fs.StringVar(&a.OIDCRolesClaim, "oidc-roles-claim", getenv(envOIDCRolesClaim), "the `claim` holding the roles (viewer, editor, deployer, admin; the highest counts), a dotted path for nested claims such as realm_access.roles (env "+envOIDCRolesClaim+"; default "+auth.DefaultRolesClaim+")")
	a.OIDCClientSecret = getenv(envOIDCClientSecret)
	return nil
}

func (a authConfig) validate() error {
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	if a.OIDCIssuer != "" && a.OIDCClientID == "" {
		return fmt.Errorf("%w: --oidc-issuer needs --oidc-client-id", errUsage)
	}
	if a.OIDCIssuer == "" && (a.OIDCClientID != "" || a.OIDCRedirectURL != "") {
		return fmt.Errorf("%w: --oidc-client-id and --oidc-redirect-url need --oidc-issuer", errUsage)
	}
	if a.OIDCIssuer != "" {
		// Else the server started and answered every JWT and sign-in 503 for good, the
		// provider's discovery URL failing to parse (new-user round 136).
		if u, err := url.Parse(a.OIDCIssuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: --oidc-issuer %q is not an http(s) URL (the provider's issuer, as its tokens' iss claim says it, such as https://id.example/realms/main)", errUsage, a.OIDCIssuer)
		}
	}
	if a.DeployApproval && !a.configured() {
		return fmt.Errorf("%w: --deploy-approval needs authentication (--auth-tokens or --oidc-issuer): without it every request is the same local user, who cannot approve their own deploy", errUsage)
	}
	if a.OIDCRedirectURL != "" {
		u, err := url.Parse(a.OIDCRedirectURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: --oidc-redirect-url %q is not an http(s) URL", errUsage, a.OIDCRedirectURL)
		}
		if a.OIDCClientSecret == "" {
			return fmt.Errorf("%w: the sign-in (--oidc-redirect-url) needs the client secret in %s", errUsage, envOIDCClientSecret)
		}
	}
	return nil
}

// configured reports whether requests are authenticated.
func (a authConfig) configured() bool { return a.Tokens || a.OIDCIssuer != "" }

// errUnsafeAddress is the refusal of a server without authentication on a non-loopback address;
// errReachedBeyond of one on loopback that is told people reach it from elsewhere (checkReached).
var (
	errUnsafeAddress = errors.New("refusing to listen without authentication on a non-loopback address")
	errReachedBeyond = errors.New("refusing to serve without authentication")
)

// checkPosture refuses, unless --insecure-no-auth, a server without authentication whose
// listener ln is on another address than loopback (0.0.0.0, ::, a LAN address): anyone
// reaching it could deploy, cancel and read everything. With --insecure-no-auth it logs a
// warning instead. The messages name addr, the address as given (--addr), with the port
// listened on: the listener's own address writes 0.0.0.0 as [::].
func (a authConfig) checkPosture(ln net.Listener, addr string, log *slog.Logger) error {
	// (checkAddress has refused an IP address already; a host name is known once listened on.)
	if a.configured() {
		return nil
	}
	ip := net.IP(nil)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		ip = tcp.IP
	}
	if ip != nil && ip.IsLoopback() {
		return nil
	}
	// The host as given with the port listened on: 0.0.0.0:8080 rather than the listener's [::]:8080.
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
			addr = net.JoinHostPort(host, strconv.Itoa(tcp.Port))
		}
	}
	if a.InsecureNoAuth {
		log.Warn("authentication is off and the server listens beyond loopback: anyone who reaches "+
			addr+" may deploy, cancel and read everything (--insecure-no-auth)",
			"addr", addr)
		return nil
	}
	return fmt.Errorf("%w: %s. Turn authentication on (--auth-tokens or --oidc-issuer), listen on 127.0.0.1, or accept the risk with --insecure-no-auth",
		errUnsafeAddress, addr)
}

// checkReached is checkPosture for a server that listens on loopback behind a reverse proxy:
// without authentication, unless --insecure-no-auth (then a warning), it refuses a public URL
// or accepted Host names other than loopback ones, and trusted proxies (even on loopback: a
// proxy forwards other people's requests), which say that people reach the server from beyond
// this machine (every request would be the local admin).
func (a authConfig) checkReached(g guardConfig, log *slog.Logger) error {
	if a.configured() {
		return nil
	}
	var beyond []string
	if g.publicURL != "" {
		if u, err := url.Parse(g.publicURL); err == nil && !loopbackName(u.Hostname()) {
			beyond = append(beyond, "--public-url "+g.publicURL)
		}
	}
	for _, h := range splitList(g.allowedHosts) {
		name := h
		if host, _, err := net.SplitHostPort(h); err == nil {
			name = host
		}
		if !loopbackName(name) {
			beyond = append(beyond, "--allowed-hosts "+h)
		}
	}
	if g.proxies != "" {
		beyond = append(beyond, "--trusted-proxies "+g.proxies) // a proxy forwards others' requests
	}
	if len(beyond) == 0 {
		return nil
	}
	what := strings.Join(beyond, ", ")
	if a.InsecureNoAuth {
		log.Warn("authentication is off and the server is reached through a proxy or a public name: anyone who reaches it may deploy, cancel and read everything (--insecure-no-auth)", "settings", what)
		return nil
	}
	verb := "says"
	if len(beyond) > 1 {
		verb = "say"
	}
	return fmt.Errorf("%w: %s "+verb+" that people reach the server from beyond this machine. Turn authentication on (--auth-tokens or --oidc-issuer), or accept the risk with --insecure-no-auth",
		errReachedBeyond, what)
}

// loopbackName says whether host is "localhost" or a loopback address ("[::1]" too).
func loopbackName(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAddress is checkPosture's refusal for an address whose host is an IP address (or
// none: every interface), before the server writes anything (its data directory, lock and
// identity): a refused start leaves no trace. A host name is checked once listened on.
func (a authConfig) checkAddress(addr string) error {
	if a.configured() || a.InsecureNoAuth {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // net.Listen says what is wrong with it
	}
	ip := net.ParseIP(host)
	if host == "" {
		ip = net.IPv4zero
	}
	if ip == nil || ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s. Turn authentication on (--auth-tokens or --oidc-issuer), listen on 127.0.0.1, or accept the risk with --insecure-no-auth",
		errUnsafeAddress, addr)
}

// startDiscoveryWait bounds the read of the provider's discovery document at start.
const startDiscoveryWait = 5 * time.Second

// authenticator is the API's authenticator and the designer's sign-in: nil when
// authentication is not configured, and a nil sign-in without -oidc-redirect-url. It reads the
// provider's discovery document; a provider that cannot be reached does not stop the start
// (it is logged): its tokens and sign-ins answer 503 until the document is read, API tokens
// work meanwhile.
func (a authConfig) authenticator(ctx context.Context, st store.Store, dataDir string, log *slog.Logger) (*auth.Authenticator, *auth.SignIn, error) {
	if !a.configured() {
		return nil, nil, nil
	}
	authn := &auth.Authenticator{Tokens: st}
	if a.OIDCIssuer == "" {
		return authn, nil, nil
	}
	// A provider that does not answer holds the start (the server does not listen yet) for
	// startDiscoveryWait at most: it was 30 s, long enough for an orchestrator's probes to
	// give up on the server. Its document is read again when a token or a sign-in needs it.
	ctx, cancel := context.WithTimeout(ctx, startDiscoveryWait)
	defer cancel()
	o, err := auth.NewOIDC(ctx, auth.OIDCConfig{IssuerURL: a.OIDCIssuer, ClientID: a.OIDCClientID, RolesClaim: a.OIDCRolesClaim,
		HTTPClient: &http.Client{Timeout: 30 * time.Second}})
	switch {
	case errors.Is(err, auth.ErrProviderNotReady):
		log.Warn("the OIDC provider could not be read; its tokens and sign-ins are answered 503 until it can (tried again at most every 10 s, when one comes)", "error", err.Error())
	case err != nil:
		return nil, nil, err
	}
	authn.OIDC = o
	if a.OIDCRedirectURL == "" {
		return authn, nil, nil
	}
	key, err := sessionKey(dataDir)
	if err != nil {
		return nil, nil, err
	}
	signIn, err := auth.NewSignIn(o, auth.SignInConfig{ClientSecret: a.OIDCClientSecret, RedirectURL: a.OIDCRedirectURL,
		Key: key, Secure: a.TLSCert != "" || strings.HasPrefix(a.OIDCRedirectURL, "https://"), Sessions: st})
	if err != nil {
		return nil, nil, err
	}
	authn.SignIn = signIn
	return authn, signIn, nil
}

// sessionKey reads the session key from the data directory, creating it (0600) at the first
// start with sign-in.
func sessionKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, sessionKeyFile)
	key, err := os.ReadFile(path)
	if err == nil && len(key) >= auth.SessionKeyBytes {
		return key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the session key: %w", err)
	}
	key = make([]byte, auth.SessionKeyBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	if err := os.WriteFile(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("writing the session key: %w", err)
	}
	return key, nil
}

// tlsConfig loads the certificate when one is configured (nil without), so that a missing or
// broken file stops the start with its path.
func (a authConfig) tlsConfig() (*tls.Config, error) {
	if a.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("loading -tls-cert %s and -tls-key %s: %w", a.TLSCert, a.TLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func envBool(getenv func(string) string, name string) (bool, error) {
	v := getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q is not true or false", errUsage, name, v)
	}
	return b, nil
}
