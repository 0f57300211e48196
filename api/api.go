// Package api is the server's HTTP face: the REST API under /api (scenarios and their
// versions, validation, expression suggestions, the node palette), its OpenAPI 3.1 document
// and docs page, and the operational endpoints /healthz, /readyz and /metrics.
//
// Operations are declared with huma on a chi router, so the OpenAPI document at
// /api/openapi.json is generated from the handlers' own input and output types. Every error
// answer is RFC 9457 problem details (application/problem+json) with a stable "code" (see
// ProblemDetails and the Code constants). Request bodies must be application/json and at most
// Config.MaxBodyBytes long.
package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/semaphore"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/deploy"
	"github.com/scenario-server/scenario-server/engine"
	"github.com/scenario-server/scenario-server/nodes"
	"github.com/scenario-server/scenario-server/store"
)

// DefaultMaxBodyBytes is the default limit of a request body: 10 MiB.
const DefaultMaxBodyBytes = 10 << 20

// The default limits of a test run (POST /api/test, POST /api/scenarios/{name}/test).
const (
	// DefaultTestMaxRecords is the most records one test run takes: 10,000.
	DefaultTestMaxRecords = 10_000
	// DefaultTestMaxBytes is the largest request body of a test run: 10 MiB.
	DefaultTestMaxBytes = 10 << 20
	// DefaultTestTimeout is how long one test run may take.
	DefaultTestTimeout = 30 * time.Second
	// DefaultTestMaxState is the most window state (engine.Engine.StateBytes) one test run
	// may hold: 64 MiB (up to --max-concurrent-tests runs hold it at once; four of 256 MiB
	// each took the process past 2 GB).
	DefaultTestMaxState = 64 << 20
	// DefaultTestCasesMaxBytes is the most bytes of records (and expected values) a
	// scenario's saved test cases hold together: 64 MiB. POST .../tests/run and a deploy
	// load them all.
	DefaultTestCasesMaxBytes = 64 << 20
)

// Config is what New needs. Only Store is required.
type Config struct {
	// Store keeps the scenarios and their versions. The caller owns it: New does not close it.
	Store store.Store
	// Logger receives one record per request and the causes of internal errors. Nil discards.
	Logger *slog.Logger
	// MaxBodyBytes is the largest request body accepted, in bytes; larger bodies are answered
	// 413 with code body-too-large. 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Nodes is the registry of node kinds that validation, suggestions and the palette use.
	// With a Runtime it should be Runtime.Nodes() (the registry given to deploy.Config.Nodes),
	// so that what validates here deploys there. Nil means Runtime.Nodes() with a Runtime,
	// engine.Default() without.
	Nodes *nodes.Registry
	// Metrics is the Prometheus registry served at /metrics, to which New adds the HTTP
	// request metrics. Nil means a new registry with the Go runtime and process collectors.
	Metrics *prometheus.Registry
	// Version is the server's version, shown in the OpenAPI document. Empty means "dev".
	Version string
	// Runtime runs the deployments: deploy, cancel, ingestion, counts. Nil means this server
	// runs none; those operations then answer 503. The caller starts and shuts it down.
	Runtime *deploy.Runtime
	// TestMaxRecords is the most records (non-blank lines) a test run takes; more are
	// answered 413 with code too-many-records, and nothing runs. 0 means
	// DefaultTestMaxRecords.
	TestMaxRecords int
	// TestMaxBytes is the largest request body of a test run, in bytes, instead of
	// MaxBodyBytes; larger bodies are answered 413 body-too-large. 0 means
	// DefaultTestMaxBytes.
	TestMaxBytes int64
	// TestTimeout is how long one test run may take (a graph that fans each record out
	// into very many contexts); a longer run is stopped and answered 422 test-timeout. 0
	// means DefaultTestTimeout.
	TestTimeout time.Duration
	// TestMaxState is the most window state, in bytes, one test run may hold; past it the run
	// is stopped and answered 422 test-state-too-large. 0 means DefaultTestMaxState.
	TestMaxState int64
	// TestCasesMaxBytes is the most bytes a scenario's saved test cases hold together; 0
	// means DefaultTestCasesMaxBytes.
	TestCasesMaxBytes int64
	// StreamWriteTimeout is how long a server-sent event stream waits for its client to take
	// one event (or keep-alive comment); a client that takes nothing for that long is
	// disconnected. 0 means DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// AnswerWriteTimeout is how long a client has to take an answer other than a stream's,
	// from its first byte: past it the connection is closed, and what the answer held is
	// let go (answerDeadline). 0 means DefaultAnswerWriteTimeout.
	AnswerWriteTimeout time.Duration
	// StreamBufferBytes is the most bytes of result values the results streams hold
	// together: a stream reads its next page only when it can reserve a page's budget
	// (store.MaxResultReadBytes) within it, and within its identity's (or client address's)
	// quarter of it unless it is the identity's only page, and otherwise waits as when no
	// result is new. 0 means DefaultStreamBufferBytes; less than one page's budget is one
	// page's budget.
	StreamBufferBytes int64
	// StreamRecheck is how often a server-sent event stream checks its request's credentials
	// again (with Authenticator): a stream whose token was revoked or expired, or whose role
	// no longer suffices, ends. 0 means 15 s.
	StreamRecheck time.Duration
	// Browser is what the browser checks accept as the server's own names (see
	// browserSafety): its public URL and allowed hosts.
	Browser BrowserConfig
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the client (for the
	// audit log and the request log). None: X-Forwarded-For is ignored.
	TrustedProxies []netip.Prefix
	// RateLimits bound event batches and test runs per identity, and test runs at once.
	// The zero value limits nothing.
	RateLimits RateLimits
	// Authenticator establishes each request's identity (API tokens, bearer JWTs), and the
	// routes then need the roles of routeRoles. Nil means authentication is not configured:
	// every request is the local user with the admin role.
	Authenticator *auth.Authenticator
	// SignIn is the designer's sign-in with the OIDC provider (/auth/login, /auth/callback,
	// /auth/logout). Nil means none: those answer 404 sign-in-not-configured. Its sessions
	// count only when Authenticator.SignIn is set too.
	SignIn *auth.SignIn
	// DeployApproval makes deploys four-eyes: POST .../deploy answers 409 approval-required,
	// and a deploy happens only when another deployer approves a deploy request. It needs
	// Authenticator (New refuses it without: every request would be the same local user).
	DeployApproval bool
}

// Handler serves the API. Create it with New.
type Handler struct {
	router *chi.Mux
	api    huma.API
	// closeStreams ends the server-sent event streams (CloseStreams).
	closeStreams func()
	h            *handlers
}

// New builds the router: the operations under /api, the OpenAPI document, the docs page,
// /healthz, /readyz, /metrics and the designer at /. It fails when cfg.Store is nil.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("api: Config.Store is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Nodes == nil && cfg.Runtime != nil {
		cfg.Nodes = cfg.Runtime.Nodes()
	}
	if cfg.Nodes == nil {
		cfg.Nodes = engine.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
		cfg.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.TestMaxRecords <= 0 {
		cfg.TestMaxRecords = DefaultTestMaxRecords
	}
	if cfg.TestMaxBytes <= 0 {
		cfg.TestMaxBytes = DefaultTestMaxBytes
	}
	if cfg.TestMaxState <= 0 {
		cfg.TestMaxState = DefaultTestMaxState
	}
	if cfg.TestCasesMaxBytes <= 0 {
		cfg.TestCasesMaxBytes = DefaultTestCasesMaxBytes
	}
	if cfg.TestTimeout <= 0 {
		cfg.TestTimeout = DefaultTestTimeout
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if cfg.AnswerWriteTimeout <= 0 {
		cfg.AnswerWriteTimeout = DefaultAnswerWriteTimeout
	}
	metrics, err := newHTTPMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	if cfg.DeployApproval && cfg.Authenticator == nil {
		return nil, errors.New("api: Config.DeployApproval needs an Authenticator: without authentication every request is the same user, who cannot approve their own deploy")
	}
	guard, err := newBrowserGuard(cfg.Browser)
	if err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	r.Use(answerDeadline(cfg.AnswerWriteTimeout))
	r.Use(drainDeadline)
	r.Use(ownRequestID)
	r.Use(middleware.RequestID)
	r.Use(withClientAddress(cfg.TrustedProxies))
	r.Use(requestLog(cfg.Logger, metrics))
	r.Use(guard.browserSafety)
	r.Use(recoverProblem)
	r.Use(authenticate(cfg.Authenticator))
	r.Use((&auditor{store: cfg.Store, now: time.Now, refusals: newBuckets(auditRefusalRate, auditRefusalBurst),
		reads: newBuckets(auditReadRate, auditReadBurst)}).auditRoutes(r))
	r.Use(requireRoles(r))
	// HEAD is answered as GET without the body (curl -I, load balancers' probes), on every
	// GET route: requireRoles and the audit treat a HEAD as its GET (its role, its entry).
	r.Use(middleware.GetHead)
	limitOf := func(path string) int64 {
		if isTestPath(path) {
			return cfg.TestMaxBytes
		}
		return cfg.MaxBodyBytes
	}
	limiter := newRateLimiter(cfg.RateLimits)
	limiter.bodyLimit = limitOf
	if bb := limiter.requestBodies; bb != nil && bb.wait > 0 {
		g := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scenario_server_requests_waiting",
			Help: "Requests waiting for bytes of their bodies in the request budget (--request-body-bytes), the smallest served first, before a 503 after 10 s.",
		})
		if reused, err := registerOrReuse(cfg.Metrics, g); err == nil {
			g = reused
		}
		bb.waitGauge = g
	}
	cuts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scenario_server_requests_cut_total",
		Help: "Requests cut for holding bytes of a body budget (budget: request, --request-body-bytes; ingest, --ingest-body-bytes) while their clients sent or took them slower than the contended minimum rate and other requests were refused for lack of them.",
	}, []string{"budget"})
	if reused, err := registerOrReuse(cfg.Metrics, cuts); err == nil {
		cuts = reused
	}
	for name, bb := range map[string]*bodyBudget{"request": limiter.requestBodies, "ingest": limiter.ingestBodies} {
		if bb != nil {
			bb.cuts = cuts.WithLabelValues(name)
		}
	}
	router := r
	limiter.storedWrite = func(req *http.Request) bool {
		// The audited actions that are not reads: each changes the store (auditActions).
		method, pattern, _ := findRoute(router, req)
		_, ok := auditActions[method+" "+pattern]
		return ok && method != http.MethodGet
	}
	r.Use(limiter.limit)
	r.Use(ndjsonRecords(cfg.TestMaxBytes))
	r.Use(checkBody(limitOf))
	queries := map[string][]string{} // filled once the operations are registered
	r.Use(checkQuery(r, queries))
	r.Use(refuseNUL(limitOf))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, CodeRouteNotFound, "no route "+r.URL.Path))
	})
	mux := r
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		// The methods the path has (RFC 9110: a 405 carries Allow), found as chi routes it.
		path := r.URL.Path
		if r.URL.RawPath != "" {
			path = r.URL.RawPath
		}
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			find := m
			if m == http.MethodHead {
				find = http.MethodGet // GetHead serves HEAD on every GET route
			}
			if mux.Find(chi.NewRouteContext(), find, path) != "" {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeProblem(w, newProblem(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+strings.Join(allowed, ", ")))
	})

	hc := huma.DefaultConfig("scenario-server API", cfg.Version)
	hc.Info.Description = apiDescription
	hc.OpenAPIPath = "" // served by serveOpenAPI, built once after every operation is registered
	hc.DocsPath = ""    // the default renderer loads JavaScript from a CDN; see docsPage
	hc.SchemasPath = ""
	hc.CreateHooks = nil // no "$schema" links in response bodies
	hc.Tags = apiTags
	hapi := humachi.New(r, hc)

	h := &handlers{
		store:   cfg.Store,
		nodes:   cfg.Nodes,
		maxBody: cfg.MaxBodyBytes,
		metrics: cfg.Metrics,

		testMaxRecords: cfg.TestMaxRecords,
		testMaxBytes:   cfg.TestMaxBytes,
		testTimeout:    cfg.TestTimeout,
		testMaxState:   cfg.TestMaxState,
		testCasesMax:   cfg.TestCasesMaxBytes,
		deployTests:    limiter.deploying,
		compiles:       newCompileGate(cfg.RateLimits.MaxConcurrentValidations),

		runtime:            cfg.Runtime,
		streamsDone:        make(chan struct{}),
		lists:              semaphore.NewWeighted(ScenarioListsAtOnce),
		listsBy:            map[string]int{},
		streamWriteTimeout: cfg.StreamWriteTimeout,
		authn:              cfg.Authenticator,
		streamRecheck:      cfg.StreamRecheck,
		streamPoll:         streamPoll,
		streamBufferBytes:  cfg.StreamBufferBytes,
		deployApproval:     cfg.DeployApproval,
	}
	if h.streamRecheck <= 0 {
		h.streamRecheck = 15 * time.Second
	}
	h.registerScenarios(hapi)
	h.registerVersions(hapi)
	h.registerCompare(hapi)
	h.registerValidation(hapi)
	h.registerComponents(hapi)
	h.registerKafka(hapi)
	h.registerTestRuns(hapi)
	h.registerNodeTest(hapi)
	h.registerDeployments(hapi)
	h.registerDeployRequests(hapi)
	h.registerTestCases(hapi)
	h.registerHealth(hapi)
	h.registerAudit(hapi)
	h.registerTokens(hapi)
	h.registerSessions(hapi)
	h.registerMe(hapi, cfg.SignIn != nil, cfg.Authenticator != nil && cfg.Authenticator.Tokens != nil)
	registerSignIn(r, cfg.SignIn, &auditor{store: cfg.Store, now: time.Now})
	registerTokenSignIn(r, cfg.Authenticator, &auditor{store: cfg.Store, now: time.Now},
		strings.HasPrefix(strings.ToLower(cfg.Browser.PublicURL), "https://"))
	operationQueries(hapi.OpenAPI(), queries)
	if err := serveOpenAPI(r, hapi); err != nil {
		return nil, err
	}
	if err := serveUI(r); err != nil {
		return nil, err
	}
	return &Handler{router: r, api: hapi, closeStreams: sync.OnceFunc(func() { close(h.streamsDone) }), h: h}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.router.ServeHTTP(w, r) }

// Routes returns the router, for walking its routes (chi.Walk).
func (h *Handler) Routes() chi.Routes { return h.router }

// OpenAPI returns the OpenAPI 3.1 document of the API. It is served as it was when New
// returned: changing it changes nothing that is served.
func (h *Handler) OpenAPI() *huma.OpenAPI { return h.api.OpenAPI() }

// handlers holds what the operations share.
type handlers struct {
	// collectSinks are the collect sinks of the versions results requests have checked.
	collectSinks collectSinkCache

	// probe runs /readyz's store probes, one at a time, each waited for at most readyTimeout.
	probe storeProbe
	// deployTests are the places where deploys' saved test cases run (rateLimiter.deploying;
	// nil: no bound), beside the test runs.
	deployTests *places
	// compiles are the places of graphs being validated (compileGate; nil: no bound).
	compiles *compileGate
	store    store.Store
	nodes    *nodes.Registry
	maxBody  int64
	metrics  *prometheus.Registry

	testMaxRecords int
	testMaxBytes   int64
	testTimeout    time.Duration
	testMaxState   int64
	testCasesMax   int64

	runtime     *deploy.Runtime
	streamsDone chan struct{} // closed by Handler.CloseStreams
	// streamWriteTimeout (Config.StreamWriteTimeout) and what the results streams hold.
	streamWriteTimeout time.Duration
	streamBuffer       *streamBuffer
	streamBufferBytes  int64 // Config.StreamBufferBytes
	countsEncoder      countsEncoder
	// lists are the scenario lists (and deployment statuses) read at once
	// (ScenarioListsAtOnce); listsWaiting those waiting their turn.
	lists        *semaphore.Weighted
	listsWaiting atomic.Int64
	listsMu      sync.Mutex
	listsBy      map[string]int // by client (rateKey): its lists being read or waiting
	// authn checks a stream's credentials again every streamRecheck (nil: no authentication).
	authn         *auth.Authenticator
	streamRecheck time.Duration
	// streamPoll is how often a results stream looks for results when nothing tells it
	// (streamPoll; tests set it).
	streamPoll time.Duration
	// deployApproval is Config.DeployApproval.
	deployApproval bool
}

// bodyReadTimeout is how long a request body may take to arrive (refuseNUL reads most
// bodies under it; event batches and test runs set it on their operation).
const bodyReadTimeout = time.Minute

// register declares an operation with the body limit (unless op sets its own) and the error
// answers every operation may give. Unless op sets its own BodyReadTimeout, huma is told to
// leave no read deadline on the connection (-1): refuseNUL has read the body already, under
// bodyReadTimeout. huma's default sets one of 5 s and never clears it, so a handler that ran
// longer (a deploy running saved test cases) had its context cancelled at 5 s, and so had the
// later requests on the same keep-alive connection.
func register[I, O any](hapi huma.API, h *handlers, op huma.Operation, handler func(context.Context, *I) (*O, error)) {
	// huma refuses a body of exactly MaxBodyBytes; one more lets the configured size through.
	if op.MaxBodyBytes == 0 {
		op.MaxBodyBytes = h.maxBody + 1
	}
	if op.BodyReadTimeout == 0 {
		op.BodyReadTimeout = -1
	}
	op.Errors = append(op.Errors, http.StatusInternalServerError)
	huma.Register(hapi, op, handler)
}

// ownRequestID drops a client's X-Request-Id before middleware.RequestID reads it: the
// request id in the request log and the audit log is the server's own, never one a client
// chose (which could forge or blur another request's entries).
func ownRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(middleware.RequestIDHeader)
		next.ServeHTTP(w, r)
	})
}
