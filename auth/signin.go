package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/scenario-server/scenario-server/internal/names"
	"github.com/scenario-server/scenario-server/store"
)

// The cookies of the designer's sign-in.
const (
	// SessionCookie holds a signed-in user's session: their identity and its expiry, signed
	// with the server's session key (HMAC-SHA256). It is HttpOnly and SameSite=Lax, and Secure
	// when the server is reached over HTTPS.
	SessionCookie = "scenario_server_session"
	// loginCookie holds a sign-in in progress (state, PKCE verifier, nonce), for ten minutes,
	// on the callback's path only.
	loginCookie = "scenario_server_login"
)

// Defaults of SignInConfig.
const (
	DefaultSessionTTL = 8 * time.Hour
	loginTTL          = 10 * time.Minute
	// SessionKeyBytes is the length of a session key: 32 bytes, a full HMAC-SHA256 key.
	SessionKeyBytes = 32
)

// SignInConfig is the designer's sign-in with the OIDC provider.
type SignInConfig struct {
	// ClientSecret authenticates this server to the provider when it exchanges a code.
	ClientSecret string
	// RedirectURL is where the provider sends the browser back: the server's public URL and
	// "/auth/callback", registered at the provider.
	RedirectURL string
	// Key signs the session and sign-in cookies: SessionKeyBytes random bytes kept by the
	// server. Cookies signed with another key are refused (a new key signs everyone out).
	Key []byte
	// Secure marks the cookies Secure. Set it when the browser reaches the server over HTTPS
	// (TLS on the server, or an https RedirectURL behind a proxy).
	Secure bool
	// SessionTTL is how long a session lasts, from sign-in; 0 means DefaultSessionTTL. The
	// role is the one the provider gave at sign-in, until the next sign-in.
	SessionTTL time.Duration
	// Sessions keeps the sessions: a session cookie is accepted while its session is there.
	// Signing out ends the session, and a sign-in with a lower role than the subject had
	// ends the subject's sessions with higher ones. Required.
	Sessions store.SessionStore
	// Now is the clock of the cookies' expiry. Nil means time.Now.
	Now func() time.Time
}

// SignIn runs the authorization code flow with PKCE for the designer and keeps the sessions
// it creates in signed cookies.
type SignIn struct {
	oidc     *OIDC
	oauth    oauth2.Config
	key      []byte
	secure   bool
	ttl      time.Duration
	now      func() time.Time
	sessions store.SessionStore
}

// NewSignIn returns the sign-in through o's provider.
func NewSignIn(o *OIDC, cfg SignInConfig) (*SignIn, error) {
	if len(cfg.Key) < SessionKeyBytes {
		return nil, fmt.Errorf("the session key must be at least %d bytes", SessionKeyBytes)
	}
	if cfg.RedirectURL == "" {
		return nil, errors.New("the sign-in needs a redirect URL (the public URL and /auth/callback)")
	}
	if cfg.Sessions == nil {
		return nil, errors.New("the sign-in needs a session store")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &SignIn{
		oidc: o,
		// The endpoints come from the discovery document, when it is read (oauthConfig).
		oauth: oauth2.Config{
			ClientID: o.clientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
			Scopes: []string{oidc.ScopeOpenID, "profile", "email"},
		},
		key: cfg.Key, secure: cfg.Secure, ttl: cfg.SessionTTL, now: cfg.Now, sessions: cfg.Sessions,
	}, nil
}

// oauthConfig is the authorization code flow's configuration, with the provider's endpoints.
// Errors: ErrProviderNotReady.
func (s *SignIn) oauthConfig(ctx context.Context) (*oauth2.Config, *discovered, error) {
	d, err := s.oidc.ready(ctx)
	if err != nil {
		return nil, nil, err
	}
	c := s.oauth
	c.Endpoint = d.provider.Endpoint()
	return &c, d, nil
}

// loginState is what the login cookie carries between Login and Callback.
type loginState struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
	Expires  int64  `json:"e"`
}

// session is what the session cookie carries: ID names its stored session.
type session struct {
	ID      string `json:"id"`
	Subject string `json:"sub"`
	Name    string `json:"name"`
	Role    Role   `json:"role"`
	Expires int64  `json:"exp"`
}

// Login starts a sign-in: it keeps a new state, PKCE verifier and nonce in the login cookie
// and redirects the browser to the provider. Errors (nothing written then):
// ErrProviderNotReady.
func (s *SignIn) Login(w http.ResponseWriter, r *http.Request) error {
	oauth, _, err := s.oauthConfig(r.Context())
	if err != nil {
		return err
	}
	st := loginState{State: rand.Text(), Verifier: oauth2.GenerateVerifier(), Nonce: rand.Text(),
		Expires: s.now().Add(loginTTL).Unix()}
	s.setCookie(w, loginCookie, "/auth/", s.seal(st), loginTTL)
	http.Redirect(w, r, oauth.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce)), http.StatusFound)
	return nil
}

// ErrSignIn means a callback that does not complete a sign-in: no or expired login cookie, a
// state that does not match, an error from the provider, a code the provider refuses, or an ID
// token that fails verification. The wrapped error says which.
var ErrSignIn = errors.New("sign-in failed")

// InProgress says whether r carries a sign-in in progress that a callback would complete: a
// login cookie of this server's, not expired, whose state the query's matches. One that does
// not fails at once in Callback, without asking the provider.
func (s *SignIn) InProgress(r *http.Request) bool {
	c, err := r.Cookie(loginCookie)
	if err != nil {
		return false
	}
	var st loginState
	state := r.URL.Query().Get("state")
	return s.open(c.Value, &st) && s.now().Unix() < st.Expires && state != "" && hmac.Equal([]byte(state), []byte(st.State))
}

// Callback completes a sign-in: it checks the state against the login cookie, exchanges the
// code with the PKCE verifier, verifies the ID token and its nonce, and sets the session
// cookie. It returns the signed-in identity. Errors wrap ErrSignIn, or are failures to reach
// the provider.
func (s *SignIn) Callback(w http.ResponseWriter, r *http.Request) (Identity, error) {
	c, err := r.Cookie(loginCookie)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: no sign-in in progress (the login cookie is missing)", ErrSignIn)
	}
	var st loginState
	if !s.open(c.Value, &st) || s.now().Unix() >= st.Expires {
		return Identity{}, fmt.Errorf("%w: the sign-in in progress is invalid or expired", ErrSignIn)
	}
	s.setCookie(w, loginCookie, "/auth/", "", -1)
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return Identity{}, fmt.Errorf("%w: the provider answered %s: %s", ErrSignIn, e, q.Get("error_description"))
	}
	if q.Get("state") == "" || !hmac.Equal([]byte(q.Get("state")), []byte(st.State)) {
		return Identity{}, fmt.Errorf("%w: the state does not match the sign-in in progress", ErrSignIn)
	}
	oauth, d, err := s.oauthConfig(r.Context())
	if err != nil {
		return Identity{}, err
	}
	ctx := oidc.ClientContext(r.Context(), s.oidc.httpClient)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tok, err := oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: exchanging the code: %w", ErrSignIn, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("%w: the provider answered no ID token", ErrSignIn)
	}
	idTok, err := d.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrSignIn, err)
	}
	if !hmac.Equal([]byte(idTok.Nonce), []byte(st.Nonce)) {
		return Identity{}, fmt.Errorf("%w: the ID token's nonce does not match", ErrSignIn)
	}
	if err := authorizedParty(idTok, s.oidc.clientID); err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrSignIn, err)
	}
	id, err := s.oidc.Verify(ctx, raw, MethodSession)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrSignIn, err)
	}
	// The subject's sessions with a role above this one end: the provider took it away.
	var above []string
	for _, r := range Roles {
		if r.rank() > id.Role.rank() {
			above = append(above, string(r))
		}
	}
	if _, err := s.sessions.EndSessions(ctx, id.Subject, above); err != nil {
		return Identity{}, err
	}
	ss := session{ID: rand.Text(), Subject: id.Subject, Name: id.Name, Role: id.Role, Expires: s.now().Add(s.ttl).Unix()}
	if err := s.sessions.CreateSession(ctx, store.Session{ID: ss.ID, Subject: ss.Subject, Role: string(ss.Role),
		ExpiresAt: time.Unix(ss.Expires, 0)}); err != nil {
		return Identity{}, err
	}
	s.setCookie(w, SessionCookie, "/", s.seal(ss), s.ttl)
	return id, nil
}

// authorizedParty checks an ID token's azp claim as OpenID Connect Core 1.0 §3.1.3.7 asks
// (items 4 and 5): an ID token for several audiences must name the party it was issued to,
// and a token that names one must name this server's client. A token issued to another client
// that also lists this one is not this server's sign-in. Errors: one saying which rule failed.
func authorizedParty(tok *oidc.IDToken, clientID string) error {
	var c struct {
		Azp *string `json:"azp"`
	}
	if err := tok.Claims(&c); err != nil {
		return fmt.Errorf("reading the ID token's azp: %w", err)
	}
	switch {
	case c.Azp == nil && len(tok.Audience) > 1:
		return fmt.Errorf("the ID token is for %d audiences and names no authorized party (azp)", len(tok.Audience))
	case c.Azp != nil && *c.Azp != clientID:
		return fmt.Errorf("the ID token was issued to %q (azp), not to this server's client %q", names.Cut(*c.Azp, 200), clientID)
	}
	return nil
}

// Logout ends the browser's session: its stored session (so that a copy of the cookie is
// refused too) and its cookie. Errors: failures of the store (the cookie is cleared even so).
func (s *SignIn) Logout(w http.ResponseWriter, r *http.Request) error {
	s.setCookie(w, SessionCookie, "/", "", -1)
	c, err := r.Cookie(SessionCookie)
	var ss session
	if err != nil || c.Value == "" || !s.open(c.Value, &ss) || ss.ID == "" {
		return nil // no session of this server's to end
	}
	return s.sessions.EndSession(r.Context(), ss.ID)
}

// Session returns the identity of r's session cookie. Errors: ErrNoCredentials without one;
// ErrInvalidCredentials when it is not signed by this server's key, has expired or has ended
// (its stored session is gone); failures of the store.
func (s *SignIn) Session(r *http.Request) (Identity, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return Identity{}, ErrNoCredentials
	}
	var ss session
	if !s.open(c.Value, &ss) {
		return Identity{}, fmt.Errorf("%w: the session cookie is not this server's", ErrInvalidCredentials)
	}
	if s.now().Unix() >= ss.Expires {
		return Identity{}, fmt.Errorf("%w: the session has expired; sign in again", ErrInvalidCredentials)
	}
	if ss.ID == "" {
		return Identity{}, fmt.Errorf("%w: the session is of an older server version; sign in again", ErrInvalidCredentials)
	}
	live, err := s.sessions.SessionLive(r.Context(), ss.ID, s.now())
	if err != nil {
		return Identity{}, err
	}
	if !live {
		return Identity{}, fmt.Errorf("%w: the session has ended (signed out, or signed in again with another role); sign in again", ErrInvalidCredentials)
	}
	return Identity{Subject: ss.Subject, Name: ss.Name, Role: ss.Role, Method: MethodSession}, nil
}

func (s *SignIn) setCookie(w http.ResponseWriter, name, path, value string, ttl time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode}
	if ttl < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(ttl / time.Second)
	}
	http.SetCookie(w, c)
}

// seal encodes v as base64url(JSON) "." base64url(HMAC-SHA256(key, JSON)).
func (s *SignIn) seal(v any) string {
	payload, _ := json.Marshal(v) // the cookie types always encode
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// maxCookieBytes bounds what open decodes: a session is a few hundred bytes.
const maxCookieBytes = 4096

// open checks a sealed value's signature and decodes it into v.
func (s *SignIn) open(sealed string, v any) bool {
	if len(sealed) > maxCookieBytes {
		return false
	}
	p, sig, ok := strings.Cut(sealed, ".")
	if !ok {
		return false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return false
	}
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return false
	}
	return json.Unmarshal(payload, v) == nil
}
