package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/scenario-server/scenario-server/auth"
)

// The codes of authentication and authorization problems.
const (
	// CodeUnauthenticated (401) means the route needs a signed-in identity and the request
	// has no credentials, or credentials that are not accepted (unknown, revoked or expired
	// API token; a JWT that fails verification). The answer carries WWW-Authenticate.
	CodeUnauthenticated = "unauthenticated"
	// CodeForbidden (403) means the identity's role is below the one the route needs; the
	// detail names both.
	CodeForbidden = "forbidden"
)

// localIdentity is every request's identity when authentication is not configured: the
// server's own user, with every role (see Config.Authenticator).
var localIdentity = auth.Identity{Subject: auth.LocalSubject, Name: "local", Role: auth.Admin, Method: auth.MethodNone}

// authnFailure is why a request has no identity, kept for the route check.
type authnFailure struct{ err error }

type authnFailureKey struct{}

// authenticate establishes each request's identity (auth.WithIdentity) from its credentials
// through a, or gives every request localIdentity when a is nil. A request whose credentials
// are missing or refused goes on without identity, so that public routes still answer; the
// route check (requireRoles) answers it 401 on every other route. A failure of the store while
// looking a token up is answered 503 here.
func authenticate(a *auth.Authenticator) func(http.Handler) http.Handler {
	var refusals, notReady logSample
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a == nil {
				noteSubject(r.Context(), localIdentity.Subject)
				next.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), localIdentity)))
				return
			}
			id, err := a.Authenticate(r)
			switch {
			case err == nil:
				noteSubject(r.Context(), id.Subject)
				r = r.WithContext(auth.WithIdentity(r.Context(), id))
			case errors.Is(err, auth.ErrNoCredentials), errors.Is(err, auth.ErrInvalidCredentials):
				if !errors.Is(err, auth.ErrNoCredentials) {
					if log, unlogged := refusals.take(); log {
						loggerFrom(r.Context()).Info("credentials refused", "cause", err.Error(), "refusals_not_logged", unlogged)
					}
				}
				r = r.WithContext(context.WithValue(r.Context(), authnFailureKey{}, authnFailure{err}))
			default:
				if r.Context().Err() != nil {
					return // the client went away while its session was looked up: no answer to give
				}
				if !errors.Is(err, auth.ErrProviderNotReady) {
					loggerFrom(r.Context()).Error("authenticating a request", "error", err.Error())
				} else if log, unlogged := notReady.take(); log {
					// Anyone can send a bearer JWT: sampled, as refusals are.
					loggerFrom(r.Context()).Error("authenticating a request", "error", err.Error(), "not_logged", unlogged)
				}
				writeProblem(w, newProblem(http.StatusServiceUnavailable, CodeUnavailable,
					"the credentials could not be checked; try again"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// logSample lets per log lines through a second (0: one), counting those it holds back:
// anonymous requests with bad credentials (15,859 in 10 s in a hostile test) wrote a line
// each.
type logSample struct {
	per              int
	mu               sync.Mutex
	start            time.Time // of the second being counted
	logged, unlogged int
}

// take reports whether to log now, and how many were not logged since the last line.
func (s *logSample) take() (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); s.start.IsZero() || now.Sub(s.start) >= time.Second {
		s.start, s.logged = now, 0
	}
	if s.logged >= max(s.per, 1) {
		s.unlogged++
		return false, 0
	}
	n := s.unlogged
	s.logged, s.unlogged = s.logged+1, 0
	return true, n
}

// identityName is who the request comes from, as the history records it: the identity's
// Name ("local" without authentication, "anonymous" on a public route without credentials).
func identityName(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		return id.Name
	}
	return "anonymous"
}
