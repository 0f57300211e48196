package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"

	"github.com/scenario-server/scenario-server/auth"
)

// The codes of the designer's sign-in.
const (
	// CodeSignInFailed (400) means /auth/callback did not complete a sign-in: the sign-in
	// expired (10 minutes), its state did not match, or the provider refused the code or gave
	// a token that fails verification. Signing in again starts over.
	CodeSignInFailed = "sign-in-failed"
	// CodeSignInNotConfigured (404) means the server has no OIDC provider to sign in with.
	CodeSignInNotConfigured = "sign-in-not-configured"
)

// registerSignIn adds the designer's sign-in through the OIDC provider: GET /auth/login
// (redirects to the provider), GET /auth/callback (back from it: sets the session cookie and
// redirects to the designer) and POST /auth/logout (clears it, 204). Without s, login and
// callback answer 404 sign-in-not-configured. A sign-in completed and a session ended are in
// the audit log (session.start with the role, session.end), through au.
func registerSignIn(r chi.Router, s *auth.SignIn, au *auditor) {
	notConfigured := func(w http.ResponseWriter) {
		writeProblem(w, newProblem(http.StatusNotFound, CodeSignInNotConfigured, "this server has no OIDC provider to sign in with"))
	}
	r.Get("/auth/login", func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			notConfigured(w)
			return
		}
		if err := s.Login(w, r); err != nil {
			loggerFrom(r.Context()).Error("sign-in: the provider could not be reached", "error", err.Error())
			writeProblem(w, newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the identity provider could not be reached; try again"))
		}
	})
	exchanges := signInPlaces()
	callbacks := newBuckets(signInRate, signInBurst)
	r.Get("/auth/callback", func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			notConfigured(w)
			return
		}
		// Only a callback that would ask the provider counts: one without a sign-in in
		// progress fails at once, and counting it let anyone use up a shared address's
		// sign-ins (a NAT, a proxy) with requests that cost nothing.
		if !s.InProgress(r) {
			completeSignIn(w, r, s, au)
			return
		}
		if signInLimited(w, r, callbacks, "sign-ins") {
			return
		}
		exchanges.serve(w, r, "1", func() { completeSignIn(w, r, s, au) })
	})
	r.Post("/auth/logout", func(w http.ResponseWriter, r *http.Request) {
		if len(r.CookiesNamed(auth.TokenCookie))+len(r.CookiesNamed(auth.SecureTokenCookie)) > 0 {
			clearTokenCookies(w)
			if id, ok := auth.FromContext(r.Context()); ok && id.Method == auth.MethodTokenCookie {
				au.audit(r.Context(), "session.end", "", 0, "", "ok")
			}
		}
		if s != nil {
			if err := s.Logout(w, r); err != nil {
				loggerFrom(r.Context()).Error("signing out: the session could not be ended in the store", "error", err.Error())
				writeProblem(w, newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the session could not be ended; try again"))
				return
			}
			if id, ok := auth.FromContext(r.Context()); ok && id.Method == auth.MethodSession {
				au.audit(r.Context(), "session.end", "", 0, "", "ok")
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// registerTokenSignIn adds the designer's sign-in with an API token, for servers that take
// API tokens (authn.Tokens; without, 404 sign-in-not-configured): POST /auth/token with
// {"token": "sst_..."} checks the token as a bearer token is checked and answers 204 with
// the token in the TokenCookie (HttpOnly, SameSite=Strict, 8 hours; over TLS or behind an
// https public URL the Secure, __Host- SecureTokenCookie),
// which later requests without an Authorization header are authenticated by, the token
// checked again each time (revoked or expired, the browser is signed out); 400 for a body
// that is not {"token": string} (at most 1 KiB), 401 unauthenticated for a token refused,
// 429 rate-limited past signInBurst refused tokens from a client, then signInRate a second
// (a right token is never refused so; the limit keeps the log and the store's lookups of
// one client's wrong tokens down). POST /auth/logout clears the cookies of both names. A sign-in is in the audit log (session.start, "token").
func registerTokenSignIn(r chi.Router, authn *auth.Authenticator, au *auditor, httpsURL bool) {
	attempts := newBuckets(signInRate, signInBurst)
	r.Post("/auth/token", func(w http.ResponseWriter, r *http.Request) {
		if authn == nil || authn.Tokens == nil {
			writeProblem(w, newProblem(http.StatusNotFound, CodeSignInNotConfigured, "this server takes no API tokens to sign in with"))
			return
		}
		var in struct {
			Token string `json:"token"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxTokenSignInBytes+1))
		if err != nil || len(body) > maxTokenSignInBytes || json.Unmarshal(body, &in) != nil || in.Token == "" {
			writeProblem(w, newProblem(http.StatusBadRequest, CodeBadRequest, `the body must be {"token": "<an API token>"}, at most 1 KiB`))
			return
		}
		id, err := authn.Token(r.Context(), in.Token)
		if errors.Is(err, auth.ErrInvalidCredentials) {
			// Only refused tokens count: a client's wrong guesses must not keep the right
			// token out for everyone behind its address (review 134).
			if signInLimited(w, r, attempts, "refused sign-ins") {
				return
			}
			loggerFrom(r.Context()).Info("token sign-in refused", "cause", err.Error())
			writeProblem(w, newProblem(http.StatusUnauthorized, CodeUnauthenticated, "the token is not accepted: unknown, revoked or expired"))
			return
		}
		if err != nil {
			loggerFrom(r.Context()).Error("token sign-in: the store failed", "error", err.Error())
			writeProblem(w, newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the token could not be checked; try again"))
			return
		}
		setTokenCookie(w, r, in.Token, tokenCookieTTL, httpsURL)
		id.Method = auth.MethodTokenCookie
		loggerFrom(r.Context()).Info("signed in with a token", "subject", id.Subject, "name", id.Name, "role", string(id.Role))
		au.audit(auth.WithIdentity(r.Context(), id), "session.start", "", 0, "token, role "+string(id.Role), "ok")
		w.WriteHeader(http.StatusNoContent)
	})
}

// signInLimited takes one of r's client's sign-ins (what: "sign-ins", ...) from b, and when
// there is none answers 429 rate-limited with Retry-After and reports true.
func signInLimited(w http.ResponseWriter, r *http.Request, b *buckets, what string) bool {
	if _, wait, ok := b.takeN(rateKey(r), 1, time.Now()); !ok {
		w.Header().Set("Retry-After", retryAfter(wait))
		writeProblem(w, problemf(http.StatusTooManyRequests, CodeRateLimited,
			"more than %d %s from this client in a short time (then one every %v); retry later", signInBurst, what, time.Duration(float64(time.Second)/signInRate)))
		return true
	}
	return false
}

// maxTokenSignInBytes bounds POST /auth/token's body.
const maxTokenSignInBytes = 1 << 10

// tokenCookieTTL is how long the designer stays signed in with a token: as an OIDC session.
const tokenCookieTTL = auth.DefaultSessionTTL

// setTokenCookie sets the token cookie to value for ttl (negative: clears it): over TLS, or
// when the server's public URL is https (httpsURL: a proxy ends TLS), the Secure
// auth.SecureTokenCookie, else auth.TokenCookie.
func setTokenCookie(w http.ResponseWriter, r *http.Request, value string, ttl time.Duration, httpsURL bool) {
	secure := r.TLS != nil || httpsURL
	name := auth.TokenCookie
	if secure {
		name = auth.SecureTokenCookie
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure, MaxAge: int(ttl / time.Second)})
}

// clearTokenCookies clears the token cookies of both names.
func clearTokenCookies(w http.ResponseWriter) {
	for _, c := range []*http.Cookie{{Name: auth.TokenCookie}, {Name: auth.SecureTokenCookie, Secure: true}} {
		c.Path, c.HttpOnly, c.SameSite, c.MaxAge = "/", true, http.SameSiteStrictMode, -1
		http.SetCookie(w, c)
	}
}

// completeSignIn answers the callback that completes a sign-in: its session cookie and a
// redirect to the designer, 400 sign-in-failed, or 503 when the provider cannot be reached.
func completeSignIn(w http.ResponseWriter, r *http.Request, s *auth.SignIn, au *auditor) {
	id, err := s.Callback(w, r)
	if errors.Is(err, auth.ErrSignIn) {
		loggerFrom(r.Context()).Info("sign-in failed", "cause", err.Error())
		writeProblem(w, newProblem(http.StatusBadRequest, CodeSignInFailed, "the sign-in did not complete; sign in again"))
		return
	}
	if err != nil {
		loggerFrom(r.Context()).Error("sign-in: the provider could not be reached", "error", err.Error())
		writeProblem(w, newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the identity provider could not be reached; try again"))
		return
	}
	loggerFrom(r.Context()).Info("signed in", "subject", id.Subject, "name", id.Name, "role", string(id.Role))
	au.audit(auth.WithIdentity(r.Context(), id), "session.start", "", 0, "role "+string(id.Role), "ok")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// Sign-ins completing at once (GET /auth/callback): each exchanges its code with the provider,
// up to 30 s, holding a connection to it. A sign-in's login cookie can be replayed, so that
// without a bound one client with one cookie could keep as many exchanges open as it has
// connections (and as many file descriptors again), and send the provider as many requests.
// signInRate and signInBurst bound the callbacks one client (address, an IPv6 one by its /64)
// completes over time: a burst of 30, then one a second. Each asks the provider to exchange
// a code with the server's client secret: replaying one login cookie made 4,137 exchanges in
// 3 s, which could have the provider throttle or lock the client out for everyone.
const (
	signInRate  = 1.0
	signInBurst = 30
)

const (
	maxSignIns          = 32
	maxSignInsPerClient = 4
)

// signInPlaces are the places of sign-ins completing: 429 rate-limited past
// maxSignInsPerClient for one client address, 503 unavailable past maxSignIns.
func signInPlaces() *places {
	return &places{most: maxSignIns, perClient: maxSignInsPerClient, byKey: map[string]int{},
		clientFull: func() *ProblemDetails {
			return problemf(http.StatusTooManyRequests, CodeRateLimited,
				"you are completing %d sign-ins at once, as many as one client may; retry in a second", maxSignInsPerClient)
		},
		serverFull: func() *ProblemDetails {
			return problemf(http.StatusServiceUnavailable, CodeUnavailable,
				"the server is completing %d sign-ins at once, as many as it does; retry in a second", maxSignIns)
		}}
}

// Me is who the caller is, for the designer: it shows the name and hides what the role does
// not allow.
type Me struct {
	SignedIn bool `json:"signedIn" doc:"Whether the request has an identity; false without credentials, and the other fields but signIn are then empty."`
	auth.Identity
	SignIn      bool `json:"signIn" doc:"Whether the server offers sign-in with an OIDC provider (GET /auth/login)."`
	TokenSignIn bool `json:"tokenSignIn" doc:"Whether the designer may sign in with an API token (POST /auth/token): the server takes API tokens."`
	// Refused tells a client that sent credentials which were refused from one that sent
	// none: the other routes answer both 401, this one 200 so that the designer can offer
	// sign-in.
	Refused bool `json:"refused" doc:"Whether the request carried credentials that were refused (an unknown, revoked or expired token, an expired session, a JWT that fails verification); signedIn is then false. False without credentials."`
}

type meOutput struct {
	Body Me
}

func (h *handlers) registerMe(hapi huma.API, signIn, tokenSignIn bool) {
	register(hapi, h, huma.Operation{
		OperationID: "get-me",
		Method:      http.MethodGet,
		Path:        "/api/me",
		Summary:     "The current identity",
		Description: "Who the request comes from (subject, name, role, and how it was authenticated: token, session, jwt, token-cookie (an API token the designer signed in with), or none when the server has no authentication). Without credentials, or with refused ones (refused true), signedIn is false, and the designer offers sign-in when signIn or tokenSignIn is true.",
		Tags:        []string{tagAccess},
	}, func(ctx context.Context, _ *struct{}) (*meOutput, error) {
		id, ok := auth.FromContext(ctx)
		f, _ := ctx.Value(authnFailureKey{}).(authnFailure)
		refused := !ok && f.err != nil && !errors.Is(f.err, auth.ErrNoCredentials)
		return &meOutput{Body: Me{SignedIn: ok, Identity: id, SignIn: signIn, TokenSignIn: tokenSignIn, Refused: refused}}, nil
	})
}
