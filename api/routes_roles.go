package api

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/scenario-server/scenario-server/auth"
)

// Public is the access of a route that answers without credentials.
const Public auth.Role = "public"

// routeRoles is every route ("METHOD pattern", as chi.Walk lists them) and the least role
// that may call it, or Public. A route missing here answers 403 to everyone but is caught
// first by TestRouteRoles, which walks the router: a new route gets its entry in the same
// commit. The roles follow auth's package comment: viewer reads, editor also saves, tests and
// archives, deployer also deploys, cancels and sends events, admin also manages tokens.
var routeRoles = map[string]auth.Role{
	// Probes, the designer's page and the API's description: nothing in them is private.
	"GET /":                     Public,
	"GET /healthz":              Public,
	"GET /readyz":               Public,
	"GET /api/openapi.json":     Public,
	"GET /api/openapi-3.0.json": Public,
	"GET /api/docs":             Public,
	"GET /metrics":              auth.Viewer, // scenario names and counts are in the labels
	"GET /api/components":       auth.Viewer,
	"GET /api/deployments":      auth.Viewer,
	"GET /api/kafka/topics":     auth.Viewer,
	"GET /api/scenarios":        auth.Viewer,
	"GET /api/scenarios/{name}": auth.Viewer,
	"POST /api/suggestions":     auth.Viewer, // computes, stores nothing
	"POST /api/validation":      auth.Viewer, // computes, stores nothing
	"POST /api/validation/node": auth.Viewer, // computes, stores nothing
	"POST /api/test":            auth.Editor,
	"POST /api/node-test":       auth.Editor,
	"POST /api/scenarios":       auth.Editor,

	"GET /api/scenarios/{name}/compare":                       auth.Viewer,
	"GET /api/scenarios/{name}/counts":                        auth.Viewer,
	"GET /api/scenarios/{name}/counts/stream":                 auth.Viewer,
	"GET /api/scenarios/{name}/dead-letters":                  auth.Viewer,
	"GET /api/scenarios/{name}/deployment":                    auth.Viewer,
	"GET /api/scenarios/{name}/deployments":                   auth.Viewer,
	"GET /api/scenarios/{name}/export":                        auth.Viewer,
	"GET /api/scenarios/{name}/sinks/{sinkId}/results":        auth.Viewer,
	"GET /api/scenarios/{name}/sinks/{sinkId}/results/stream": auth.Viewer,
	"GET /api/scenarios/{name}/validation":                    auth.Viewer,
	"GET /api/scenarios/{name}/versions":                      auth.Viewer,
	"GET /api/scenarios/{name}/versions/{version}":            auth.Viewer,
	"POST /api/scenarios/{name}/versions":                     auth.Editor,
	"POST /api/scenarios/{name}/import":                       auth.Editor,
	"POST /api/scenarios/{name}/test":                         auth.Editor,
	"POST /api/scenarios/{name}/archive":                      auth.Editor,
	"POST /api/scenarios/{name}/unarchive":                    auth.Editor,
	"POST /api/scenarios/{name}/deploy":                       auth.Deployer,
	"POST /api/scenarios/{name}/cancel":                       auth.Deployer,
	"GET /api/scenarios/{name}/deploy-requests":               auth.Viewer,
	"GET /api/scenarios/{name}/tests":                         auth.Viewer,
	"PUT /api/scenarios/{name}/tests/{test}":                  auth.Editor,
	"DELETE /api/scenarios/{name}/tests/{test}":               auth.Editor,
	"POST /api/scenarios/{name}/tests/run":                    auth.Editor,
	"POST /api/scenarios/{name}/deploy-requests":              auth.Deployer,
	"POST /api/scenarios/{name}/deploy-requests/{id}/approve": auth.Deployer,
	"POST /api/scenarios/{name}/deploy-requests/{id}/reject":  auth.Deployer,
	"POST /api/scenarios/{name}/sources/{sourceId}/events":    auth.Deployer,

	"GET /api/audit": auth.Admin,

	"GET /auth/login":    Public,
	"GET /auth/callback": Public,
	"POST /auth/logout":  Public,
	"POST /auth/token":   Public,
	"GET /api/me":        Public, // signedIn false without an identity

	"GET /api/tokens":         auth.Admin,
	"POST /api/tokens":        auth.Admin,
	"DELETE /api/tokens/{id}": auth.Admin,
	"DELETE /api/sessions":    auth.Admin,
}

// RouteRole returns the least role that may call the route (method and chi pattern), Public
// for a route open to all, and false for a route that has no entry.
func RouteRole(method, pattern string) (auth.Role, bool) {
	r, ok := routeRoles[method+" "+pattern]
	return r, ok
}

// findRoute finds r's route as chi routes it: by the escaped path when there is one, so that
// "a%2Fb" is one segment (a route found differently by the role check would go unchecked, and
// "x%2Fdeploy" is no deploy of "x"), and a HEAD without a route of its own as its GET (chi's
// GetHead runs the GET handler). It returns the method the route was found for, its pattern
// ("" when none matches) and the route's context (its URL parameters).
func findRoute(mux *chi.Mux, r *http.Request) (method, pattern string, rctx *chi.Context) {
	path := r.URL.Path
	if r.URL.RawPath != "" {
		path = r.URL.RawPath
	}
	if path == "" {
		path = "/"
	}
	method, rctx = r.Method, chi.NewRouteContext()
	pattern = mux.Find(rctx, method, path)
	if pattern == "" && method == http.MethodHead {
		method, rctx = http.MethodGet, chi.NewRouteContext()
		pattern = mux.Find(rctx, method, path)
	}
	return method, pattern, rctx
}

// requireRoles answers a request 401 (no identity) or 403 (a role too low) before it reaches
// a route that needs a role, following routeRoles. Paths that match no route go on to the
// 404 and 405 answers.
func requireRoles(mux *chi.Mux) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method, pattern, _ := findRoute(mux, r)
			if pattern == "" {
				next.ServeHTTP(w, r)
				return
			}
			want, ok := RouteRole(method, pattern)
			if want == Public {
				next.ServeHTTP(w, r)
				return
			}
			id, signedIn := auth.FromContext(r.Context())
			if !signedIn {
				challenge := `Bearer realm="scenario-server"`
				detail := "this route needs authentication: an API token or an OIDC sign-in"
				if f, _ := r.Context().Value(authnFailureKey{}).(authnFailure); f.err != nil && !errors.Is(f.err, auth.ErrNoCredentials) {
					challenge += `, error="invalid_token"`
					detail = "the credentials were refused (unknown, revoked or expired token, or a JWT that fails verification)"
					if errors.Is(f.err, auth.ErrNotBearer) {
						detail = "the Authorization header needs the Bearer scheme: Authorization: Bearer <token>"
					}
				}
				w.Header().Set("WWW-Authenticate", challenge)
				writeProblem(w, newProblem(http.StatusUnauthorized, CodeUnauthenticated, detail))
				return
			}
			if !ok {
				loggerFrom(r.Context()).Error("route has no role in routeRoles", "route", method+" "+pattern)
				writeProblem(w, problemf(http.StatusForbidden, CodeForbidden, "%s %s is open to no role", method, pattern))
				return
			}
			if !id.Can(want) {
				held := string(id.Role)
				if held == "" {
					held = "no role"
				}
				writeProblem(w, problemf(http.StatusForbidden, CodeForbidden,
					"%s %s needs the %s role; %s has %s", method, pattern, want, id.Name, held))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
