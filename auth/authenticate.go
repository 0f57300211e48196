package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/scenario-server/scenario-server/store"
)

// ErrNoCredentials means the request carries no credentials at all.
var ErrNoCredentials = errors.New("no credentials")

// ErrInvalidCredentials means the request carries credentials that are not accepted: an
// unknown, revoked or expired API token, a JWT that fails verification, or an Authorization
// header of another scheme than Bearer. The wrapped error says which, for the log; the client
// is told only that its credentials were refused, or (ErrNotBearer) that the scheme is wrong.
var ErrInvalidCredentials = errors.New("invalid credentials")

// ErrNotBearer is the ErrInvalidCredentials of an Authorization header without the Bearer
// scheme and a credential ("Authorization: sst_...", "Basic ..."): the answer can say what is
// missing.
var ErrNotBearer = fmt.Errorf("%w: the Authorization scheme must be Bearer", ErrInvalidCredentials)

// Authenticator establishes a request's identity from its credentials.
type Authenticator struct {
	// Tokens holds the API tokens. Nil means API tokens are not accepted.
	Tokens store.TokenStore
	// OIDC verifies bearer JWTs. Nil means JWTs are not accepted.
	OIDC *OIDC
	// SignIn reads the designer's session cookies. Nil means sessions are not accepted.
	SignIn *SignIn
	// Now is the clock that token expiry is checked against. Nil means time.Now.
	Now func() time.Time
}

// maxAuthorizationBytes bounds the Authorization header that is looked at: a JWT with many
// claims is a few KiB; anything longer is refused before it is parsed.
const maxAuthorizationBytes = 16 << 10

// TokenCookie holds the API token the designer signed in with (POST /auth/token), for
// servers with API tokens and no OIDC provider to sign in with: the token's secret itself,
// checked as a bearer token is on every request (so that revoking or expiring the token signs
// the browser out). It is HttpOnly (the designer's scripts never read it) and SameSite=Strict.
const TokenCookie = "scenario_server_token"

// SecureTokenCookie is TokenCookie's name when the server is reached over HTTPS: a __Host-
// cookie (RFC 6265bis) is Secure, has Path=/ and no Domain, so that neither a sibling
// subdomain nor a page of another path sets one the browser sends besides it.
const SecureTokenCookie = "__Host-" + TokenCookie

// Authenticate returns the identity of r's credentials: "Authorization: Bearer <token>" with
// an API token (TokenPrefix) or a JWT of the OIDC provider, or else the session cookie of the
// designer's sign-in, or else the API token the designer signed in with (TokenCookie).
// Errors: ErrNoCredentials; ErrInvalidCredentials (wrapped); any other error is a failure of
// the store (the caller answers 500 or 503, and the client may retry).
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		// Which one counts would depend on the proxies in between: none does.
		return Identity{}, fmt.Errorf("%w: more than one Authorization header", ErrInvalidCredentials)
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		if a.SignIn != nil {
			id, err := a.SignIn.Session(r)
			if !errors.Is(err, ErrNoCredentials) {
				return id, err
			}
		}
		if secret, err := tokenCookie(r); err != nil || secret != "" && a.Tokens != nil {
			if err != nil {
				return Identity{}, err
			}
			id, err := a.Token(r.Context(), secret)
			id.Method = MethodTokenCookie
			return id, err
		}
		return Identity{}, ErrNoCredentials
	}
	if len(header) > maxAuthorizationBytes {
		return Identity{}, fmt.Errorf("%w: the Authorization header is longer than %d bytes", ErrInvalidCredentials, maxAuthorizationBytes)
	}
	scheme, cred, _ := strings.Cut(header, " ")
	cred = strings.TrimSpace(cred)
	if !strings.EqualFold(scheme, "Bearer") || cred == "" {
		return Identity{}, ErrNotBearer
	}
	if IsTokenSecret(cred) {
		if a.Tokens == nil {
			return Identity{}, fmt.Errorf("%w: API tokens are not enabled", ErrInvalidCredentials)
		}
		return a.Token(r.Context(), cred)
	}
	if a.OIDC == nil {
		return Identity{}, fmt.Errorf("%w: not an API token, and OIDC is not configured", ErrInvalidCredentials)
	}
	return a.OIDC.Verify(r.Context(), cred, MethodBearer)
}

// tokenSubjectPrefix starts the subjects of API tokens ("token:<id>"); OIDC subjects may not.
const tokenSubjectPrefix = "token:"

// The server's own subjects besides API tokens', which OIDC subjects may not be either: the
// local user's without authentication (LocalSubject), the command line's audit entries'
// (CLISubjectPrefix + the OS user), and the author of the example scenarios a new store gets
// (ExamplesSubject). A provider's "cli:root" was the CLI's root in the audit log.
const (
	LocalSubject     = "local"
	CLISubjectPrefix = "cli:"
	ExamplesSubject  = "scenario-server"
)

// ownSubject says whether sub reads as one of the server's own subjects: compared after
// NFKC normalisation (a fullwidth colon, a Kelvin sign for K), without the spaces around it,
// in any case (" local", "CLI：root", "To\u212Aen:1" read as the server's in a list of
// entries). Look-alike letters of other scripts (a Cyrillic о) are not caught.
func ownSubject(sub string) bool {
	s := strings.TrimSpace(norm.NFKC.String(sub))
	hasPrefix := func(p string) bool { return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) }
	return strings.EqualFold(s, LocalSubject) || strings.EqualFold(s, ExamplesSubject) || hasPrefix(tokenSubjectPrefix) || hasPrefix(CLISubjectPrefix)
}

// ownName says whether a name claim reads as one of the server's own identities, compared
// as ownSubject compares: the local user's name, the examples' author's, or the command
// line's (CLINameSuffix).
func ownName(name string) bool {
	n := strings.TrimSpace(norm.NFKC.String(name))
	return strings.EqualFold(n, LocalSubject) || strings.EqualFold(n, ExamplesSubject) ||
		len(n) >= len(CLINameSuffix) && strings.EqualFold(n[len(n)-len(CLINameSuffix):], CLINameSuffix)
}

// ReadsAsOwn says whether s, a name or subject shown in the audit log and the history, reads as
// one of the server's own identities (the local user, a token's subject, the command line's
// subjects and names), compared as ownSubject and ownName compare: an API token named
// "cli:root" or "local" read as them (a hostile round).
func ReadsAsOwn(s string) bool { return ownSubject(s) || ownName(s) }

// CLINameSuffix ends the names of the command line's audit entries ("root (command line)").
const CLINameSuffix = " (command line)"

// maxTokenSecretBytes bounds a token secret that is looked up: the server's are 47 bytes.
const maxTokenSecretBytes = 256

// Token returns the identity of the API token secret (Method token). Errors:
// ErrInvalidCredentials (wrapped) when API tokens are not enabled, or the secret is not an
// API token's, or its token is unknown, revoked or expired; any other error is a failure of
// the store.
func (a *Authenticator) Token(ctx context.Context, secret string) (Identity, error) {
	if a.Tokens == nil {
		return Identity{}, fmt.Errorf("%w: API tokens are not enabled", ErrInvalidCredentials)
	}
	if !IsTokenSecret(secret) || len(secret) > maxTokenSecretBytes {
		return Identity{}, fmt.Errorf("%w: not an API token", ErrInvalidCredentials)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	t, err := a.Tokens.LookupToken(ctx, HashTokenSecret(secret), now())
	if errors.Is(err, store.ErrNotFound) {
		return Identity{}, fmt.Errorf("%w: unknown, revoked or expired API token", ErrInvalidCredentials)
	}
	if err != nil {
		return Identity{}, err
	}
	role, err := ParseRole(t.Role)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: token %d: %w", ErrInvalidCredentials, t.ID, err)
	}
	return Identity{Subject: tokenSubjectPrefix + strconv.FormatInt(t.ID, 10), Name: t.Name, Role: role, Method: MethodToken}, nil
}

// tokenCookie returns the token of r's token cookies (TokenCookie, SecureTokenCookie), ""
// when there is none. Cookies of the name set by another page of the host (with another path,
// or a parent domain) come with ours, the longer path first: which one counted was theirs to
// choose, and it signed the designer in as someone else (review 134). Differing ones are
// refused: ErrInvalidCredentials; empty ones are not counted.
func tokenCookie(r *http.Request) (string, error) {
	secret := ""
	for _, name := range []string{SecureTokenCookie, TokenCookie} {
		for _, c := range r.CookiesNamed(name) {
			switch {
			case c.Value == "" || c.Value == secret:
			case secret == "":
				secret = c.Value
			default:
				return "", fmt.Errorf("%w: more than one token cookie, of different tokens", ErrInvalidCredentials)
			}
		}
	}
	return secret, nil
}
